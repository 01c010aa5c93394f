"""Every validation rule of the annotation loader (one problem naming the file, the rest still
loading), the budgets checked before work, and whole-document errors (never a traceback)."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable

import numpy as np
import pytest

from dali_gallery.pipelines import annotations
from dali_gallery.pipelines.annotations import (
    MAX_TEXT_BYTES,
    AnnotationError,
    bracket_counts,
    load_coco,
    parse_coco,
)
from tests.pipelines.annotation_reader import jpeg, write_json

BASE = {
    "images": [{"id": 1, "file_name": "a.jpg", "width": 40, "height": 30},
               {"id": 2, "file_name": "b.jpg", "width": 50, "height": 20}],
    "categories": [{"id": 1, "name": "cat"},
                   {"id": 7, "name": "person", "keypoints": ["nose", "eye"]}],
    "annotations": [
        {"id": 10, "image_id": 1, "category_id": 1, "bbox": [1, 2, 10, 8],
         "segmentation": [[1, 2, 11, 2, 11, 10]]},
        {"id": 11, "image_id": 1, "category_id": 7, "bbox": [5, 5, 20, 20],
         "keypoints": [6, 7, 2, 8, 9, 1]},
        {"id": 12, "image_id": 2, "category_id": 1, "bbox": [0, 0, 50, 20]},
    ],
}
Edit = Callable[[dict], None]


def _ann(k: int, **fields: object) -> Edit:
    return lambda doc: doc["annotations"][k].update(fields)


def _img(k: int, **fields: object) -> Edit:
    return lambda doc: doc["images"][k].update(fields)


def _drop_key(k: int, key: str) -> Edit:
    return lambda doc: doc["images"][k].pop(key)


# (edit, problem file, words of the reason, images kept, annotations kept)
CASES: dict[str, tuple[Edit, str, str, int, int]] = {
    "x below 0": (_ann(0, bbox=[-1, 2, 10, 8]), "a.jpg", "outside the 40x30 image", 2, 2),
    "y below 0": (_ann(0, bbox=[1, -0.6, 10, 8]), "a.jpg", "0.5 px tolerance", 2, 2),
    "x past the tolerance": (_ann(0, bbox=[-0.51, 1, 10, 8]), "a.jpg", "outside", 2, 2),
    "under 0.1 px inside": (_ann(0, bbox=[-0.45, 1, 0.5, 8]), "a.jpg", "size_threshold", 2, 2),
    "past the right edge": (_ann(0, bbox=[31, 2, 9.6, 8]), "a.jpg", "0.5 px tolerance", 2, 2),
    "past the bottom": (_ann(2, bbox=[0, 0, 50, 20.6]), "b.jpg", "outside the 50x20", 2, 2),
    "zero width": (_ann(0, bbox=[1, 2, 0, 8]), "a.jpg", "has no area", 2, 2),
    "negative height": (_ann(0, bbox=[1, 2, 3, -8]), "a.jpg", "has no area", 2, 2),
    "under the size threshold": (_ann(0, bbox=[1, 2, 0.05, 8]), "a.jpg", "size_threshold",
                                 2, 2),
    "unknown category": (_ann(0, category_id=3), "a.jpg", "category_id 3 is not one", 2, 2),
    "category id as a float": (_ann(0, category_id=1.0), "a.jpg", "category_id 1.0", 2, 2),
    "polygon of 2 points": (_ann(0, segmentation=[[1, 2, 3, 4]]), "a.jpg",
                            "at least 3 points", 2, 2),
    "odd coordinate count": (_ann(0, segmentation=[[1, 2, 3, 4, 5, 6, 7]]), "a.jpg",
                             "an even count", 2, 2),
    "polygon of strings": (_ann(0, segmentation=[["1", 2, 3, 4, 5, 6]]), "a.jpg",
                           "not a list of numbers", 2, 2),
    "polygon far outside": (_ann(0, segmentation=[[1, 2, 3, 4, 5e9, 6]]), "a.jpg",
                            "far outside", 2, 2),
    "keypoint far outside": (_ann(1, keypoints=[6, 7, 2, 500, 9, 1]), "a.jpg",
                             "keypoint (500, 9) lies far outside the 40x30 image", 2, 2),
    "segmentation a string": (_ann(0, segmentation="x"), "a.jpg", "neither a list", 2, 2),
    "RLE of another size": (_ann(0, segmentation={"size": [31, 40], "counts": [1240]}),
                            "a.jpg", "RLE mask size [31, 40]", 2, 2),
    "RLE runs too short": (_ann(0, segmentation={"size": [30, 40], "counts": [100, 5]}),
                           "a.jpg", "do not cover", 2, 2),
    "RLE string not RLE": (_ann(0, segmentation={"size": [30, 40], "counts": "!!"}),
                           "a.jpg", "do not cover", 2, 2),
    "RLE without counts": (_ann(0, segmentation={"size": [30, 40]}), "a.jpg", "counts", 2, 2),
    "keypoints too short": (_ann(1, keypoints=[1, 2, 2]), "a.jpg", "keypoints has 3 values",
                            2, 2),
    "keypoints on a category without": (_ann(0, keypoints=[1, 2, 2]), "a.jpg",
                                        "must hold 0", 2, 2),
    "keypoint visibility 3": (_ann(1, keypoints=[6, 7, 3, 8, 9, 1]), "a.jpg", "visibility",
                              2, 2),
    "iscrowd 2": (_ann(0, iscrowd=2), "a.jpg", "iscrowd 2 must be 0 or 1", 2, 2),
    "bbox of strings": (_ann(0, bbox=["1", 2, 3, 4]), "a.jpg", "not 4 numbers", 2, 2),
    "bbox of NaN": (_ann(0, bbox=[float("nan"), 2, 3, 4]), "a.jpg", "not 4 numbers", 2, 2),
    "bbox of 5": (_ann(0, bbox=[1, 2, 3, 4, 5]), "a.jpg", "not 4 numbers", 2, 2),
    "bbox of true": (_ann(0, bbox=[True, 2, 3, 4]), "a.jpg", "not 4 numbers", 2, 2),
    "no bbox": (lambda d: d["annotations"][0].pop("bbox"), "a.jpg", "not 4 numbers", 2, 2),
    "image id unknown": (_ann(2, image_id=99), "annotations", "names no image", 2, 2),
    "image id a string": (_ann(2, image_id="2"), "annotations", "not an integer image id",
                          2, 2),
    "annotation not an object": (lambda d: d["annotations"].append([1]), "annotations",
                                 "annotations[3]", 2, 3),
    "no width": (_drop_key(1, "width"), "b.jpg", "no width/height", 1, 2),
    "no height": (_drop_key(0, "height"), "a.jpg", "no width/height", 1, 1),
    "width as text": (_img(0, width="40"), "a.jpg", "must be positive integers", 1, 1),
    "height 0": (_img(1, height=0), "b.jpg", "must be positive integers", 1, 2),
    "image id a float": (_img(1, id=2.5), "b.jpg", "is not an integer", 1, 2),
    "image id beyond int32": (_img(1, id=2**31), "b.jpg", "not an integer (int32)", 1, 2),
    "file used twice": (_img(1, file_name="a.jpg"), "a.jpg", "already used by image 1", 1, 2),
    "file outside the folder": (_img(1, file_name="../b.jpg"), "../b.jpg", "relative path",
                                1, 2),
    "absolute file": (_img(1, file_name="/etc/b.jpg"), "/etc/b.jpg", "relative path", 1, 2),
    "image not an object": (lambda d: d["images"].append("c.jpg"), "annotations",
                            "images[2] is not an object", 2, 3),
    "category id 0": (lambda d: d["categories"].append({"id": 0, "name": "bg"}),
                      "annotations", "0 is the background", 2, 3),
    "category twice": (lambda d: d["categories"].append({"id": 1, "name": "again"}),
                       "annotations", "category 1 is defined twice", 2, 3),
    "keypoint names not strings": (lambda d: d["categories"][1].update(keypoints=[1, 2]),
                                   "annotations", "keypoint names", 2, 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bad_entry_is_one_problem_and_the_rest_loads(case):
    edit, file, words, images, kept = CASES[case]
    doc = copy.deepcopy(BASE)
    edit(doc)
    ann = parse_coco(json.dumps(doc))
    assert len(ann.problems) >= 1, case
    problem = ann.problems[0]
    assert problem.file == file and words in problem.reason, ann.problems
    assert "\n" not in problem.reason and str(problem).startswith(f"{file}: ")
    assert len(ann.images) == images, case
    assert sum(len(img.boxes) for img in ann.images) == kept, case
    clean = ann.coco_document()
    assert len(clean["annotations"]) == kept and len(clean["images"]) == images


def test_the_valid_base_and_the_edge_tolerance_have_no_problems():
    assert parse_coco(json.dumps(BASE)).problems == []
    doc = copy.deepcopy(BASE)
    doc["annotations"][0]["bbox"] = [30.5, 21.5, 10, 9]  # right = 40.5, bottom = 30.5
    doc["annotations"][1]["keypoints"] = [6, 7, 2.0, 8.5, 9, 0]
    doc["annotations"][2]["segmentation"] = {"size": [20, 50], "counts": [0, 1000]}
    assert parse_coco(json.dumps(doc)).problems == []


def test_boxes_past_an_edge_within_the_tolerance_are_clipped_to_the_image():
    """Every edge has the same tolerance, and a kept box is relative 0..1 as the reader
    computes it (left + width in float32): the cleaned document holds the clipped box."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        w, h = (int(v) for v in rng.integers(1, 3000, 2))
        x0, y0 = rng.uniform(-0.5, 0.5 * w), rng.uniform(-0.5, 0.5 * h)
        x1, y1 = rng.uniform(x0 + 0.2, w + 0.5), rng.uniform(y0 + 0.2, h + 0.5)
        bbox = [float(x0), float(y0), float(x1 - x0), float(y1 - y0)]
        doc = {"images": [{"id": 1, "file_name": "a.jpg", "width": w, "height": h}],
               "categories": [{"id": 1, "name": "a"}],
               "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": bbox}]}
        ann = parse_coco(json.dumps(doc))
        assert ann.problems == [], (bbox, w, h, ann.problems)
        boxes = ann.images[0].boxes
        assert boxes.min() >= 0 and boxes.max() <= 1, (bbox, w, h, boxes)
        clean = ann.coco_document()["annotations"][0]["bbox"]
        inside = x0 >= 0 and y0 >= 0 and x1 <= w and y1 <= h
        assert (clean == bbox) == inside, (bbox, clean)
        xywh = np.float32(clean)
        assert xywh[0] + xywh[2] <= w and xywh[1] + xywh[3] <= h


def test_a_missing_image_file_drops_the_image_and_its_annotations_quietly():
    ann = parse_coco(json.dumps(BASE), available=["b.jpg", "other.jpg"])
    assert [(p.file, p.reason) for p in ann.problems] == [
        ("a.jpg", "missing image file: it is not in the images folder")]
    assert [img.file for img in ann.images] == ["b.jpg"]


def test_duplicate_image_ids_drop_every_image_of_that_id():
    doc = copy.deepcopy(BASE)
    doc["images"][1]["id"] = 1
    ann = parse_coco(json.dumps(doc))
    assert [p.file for p in ann.problems] == ["a.jpg", "b.jpg", "annotations"]
    assert all("used by 2 image entries" in p.reason for p in ann.problems[:2])
    assert "image_id 2 names no image" in ann.problems[2].reason  # b.jpg's own id is gone
    assert ann.images == [] and ann.coco_document()["annotations"] == []


@pytest.mark.parametrize("data, words", [
    ("{not json", "not valid JSON (Expecting property name"),
    ("[]", "not a JSON object"),
    ("/etc/passwd", "not a JSON object"),
    ("", "not a JSON object"),
    ('{"images": []}', "no 'categories' list"),
    ('{"categories": [], "annotations": []}', "no 'images' list"),
    ('{"images": [], "categories": [], "annotations": {}}', "'annotations' is not a list"),
    ('{"images": [{"id": 1}], "annotations": [{"image_id": 1, "caption": "a dog"}]}',
     "no 'categories'"),
    ('{"images": [], "categories": [], "annotations": [{"image_id": 1, "segments_info": []}]}',
     "no annotation has a 'bbox'"),
    (b'{"images": "\xff"}', "not UTF-8"),
    (123, "expected the document's text or bytes"),
])
def test_a_document_that_is_not_an_instances_file_is_one_clear_error(data, words):
    with pytest.raises(AnnotationError) as info:
        parse_coco(data)
    assert isinstance(info.value, ValueError)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_the_size_budget_is_checked_before_decoding():
    with pytest.raises(AnnotationError, match="64.0 MiB is too large"):
        parse_coco(b" " * (MAX_TEXT_BYTES + 1))
    with pytest.raises(AnnotationError, match="too large"):
        parse_coco("é" * (MAX_TEXT_BYTES // 2 + 1))


def test_nesting_is_counted_before_json_recurses():
    deep = '{"images": [], "categories": [], "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(AnnotationError, match="nested 100001 levels deep"):
        parse_coco(deep)
    # brackets inside strings (file names) are not nesting
    doc = copy.deepcopy(BASE)
    doc["images"][0]["file_name"] = "[[[[[[[[[[[[{{{{{{{{{{\\\"[.jpg"
    assert bracket_counts(json.dumps(doc))[0] == bracket_counts(json.dumps(BASE))[0] == 5
    assert parse_coco(json.dumps(doc)).problems == []


def test_the_annotation_and_container_budgets():
    many = '{"images": [], "categories": [], "annotations": [' + ",".join(
        ['{"bbox": 1}'] * 100_001) + "]}"
    with pytest.raises(AnnotationError, match="100001 annotations"):
        parse_coco(many)
    lists = '{"images": [], "categories": [], "x": [' + ",".join(["[]"] * 2_000_000) + "]}"
    with pytest.raises(AnnotationError, match="2000004 JSON objects and lists"):
        parse_coco(lists)


def test_numbers_json_cannot_hold_are_problems_not_crashes():
    text = json.dumps(BASE).replace('"bbox": [1, 2, 10, 8]', '"bbox": [1, 2, 1e400, 8]')
    text = text.replace('"id": 2,', '"id": ' + "9" * 5000 + ",")
    ann = parse_coco(text)
    reasons = [p.reason for p in ann.problems]
    assert "an integer of 5000 digits" in reasons[0] and "[1, 2, inf, 8]" in reasons[1]


def test_load_coco_lists_the_folder_and_reads_regular_files_only(tmp_path):
    jpeg(tmp_path, "a.jpg", 40, 30)
    jpeg(tmp_path, "sub/b.jpg", 50, 20)
    doc = copy.deepcopy(BASE)
    doc["images"][1]["file_name"] = "sub/b.jpg"
    doc["images"].append({"id": 3, "file_name": "sub/c.jpg", "width": 5, "height": 5})
    ann = load_coco(write_json(tmp_path / "in.json", doc), tmp_path)
    assert [img.file for img in ann.images] == ["a.jpg", "sub/b.jpg"]
    assert [p.file for p in ann.problems] == ["sub/c.jpg"]
    with pytest.raises(AnnotationError, match="a directory, not a regular file"):
        load_coco(tmp_path, tmp_path)
    with pytest.raises(AnnotationError, match="does not exist|file not found"):
        load_coco(tmp_path / "nope.json", tmp_path)
    with pytest.raises(AnnotationError, match="is not a folder"):
        load_coco(tmp_path / "in.json", tmp_path / "a.jpg")
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(AnnotationError, match="FIFO"):
        load_coco(fifo, tmp_path)
    huge = tmp_path / "huge.json"
    with open(huge, "wb") as f:
        f.truncate(MAX_TEXT_BYTES + 1)  # sparse: refused on its size, never read
    with pytest.raises(AnnotationError, match="too large"):
        load_coco(huge, tmp_path)


def test_file_names_in_problems_are_printable():
    doc = copy.deepcopy(BASE)
    doc["images"][0]["file_name"] = "a\nb\u202e.jpg"
    ann = parse_coco(json.dumps(doc), available=[])
    assert ann.problems[0].file == "a\\nb\\u202e.jpg"


def test_a_budget_patched_lower_is_honoured(monkeypatch):
    monkeypatch.setattr(annotations, "MAX_DEPTH", 4)
    with pytest.raises(AnnotationError, match="nested 5 levels deep"):
        parse_coco(json.dumps(BASE))
    monkeypatch.setattr(annotations, "MAX_CONTAINERS", 5)
    with pytest.raises(AnnotationError, match="9 JSON objects and lists; at most 5 are read"):
        parse_coco(json.dumps(BASE | {"annotations": []}))
