"""Annotations against the truth: DALI's own ``fn.readers.coco`` on the cleaned file gives
bit-identical boxes and classes, in the same image order; ``dali_masks``; the shipped set."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from dali_gallery.pipelines.annotations import (
    AnnotationError,
    ImageLabels,
    dali_masks,
    load_coco,
    parse_coco,
)
from tests.pipelines.annotation_reader import (
    assert_matches_reader,
    bits,
    jpeg,
    reader,
    rle_runs,
    rle_string,
    write_json,
)

SAMPLES = Path(__file__).resolve().parents[2] / "gallery" / "samples"
CATEGORIES = [
    {"id": 7, "name": "dog", "keypoints": ["nose", "tail"]},
    {"id": 1, "name": "cat"},
    {"id": 90, "name": "toothbrush", "supercategory": "bathroom"},
]


def _rect(x: float, y: float, w: float, h: float) -> list[float]:
    return [x, y, x + w, y, x + w, y + h, x, y + h]


def _random_dataset(root: Path, seed: int) -> dict:
    """Images of odd sizes in a file order unlike their id order (ids sparse, one negative),
    a subfolder, boxes with long decimals, integers, edges, crowd RLE masks, polygons,
    images without annotations, and boxes around DALI's 0.1 px size threshold."""
    rng = np.random.default_rng(seed)
    n = 7
    ids = [int(v) for v in rng.choice(5000, n, replace=False) + 1]
    ids[3] = -3
    images, annotations = [], []
    for k in range(n):
        w, h = int(rng.integers(9, 120)) | 1, int(rng.integers(7, 90)) | 1
        name = f"sub/img_{k}.jpg" if k == 5 else f"img_{k}.jpg"
        jpeg(root, name, w, h)
        images.append({"id": ids[k], "file_name": name, "width": w, "height": h})
        for _ in range(0 if k in (1, 4) else int(rng.integers(1, 6))):
            bw = float(rng.uniform(0.1, w))
            bh = float(rng.uniform(0.1, h))
            x, y = float(rng.uniform(0, w - bw)), float(rng.uniform(0, h - bh))
            style = rng.integers(3)
            if style == 1:
                x, y, bw, bh = (round(v, 2) for v in (x, y, max(bw, 0.2), max(bh, 0.2)))
            elif style == 2:
                x, y, bw, bh = int(x), int(y), max(1, int(bw)), max(1, int(bh))
            crowd = int(rng.random() < 0.3)
            cat = int(rng.choice([1, 7, 90]))
            ann = {"id": len(annotations) + 1, "image_id": ids[k], "category_id": cat,
                   "bbox": [x, y, bw, bh], "iscrowd": crowd, "area": bw * bh}
            if crowd:
                mask = np.zeros((h, w), bool)
                mask[int(y):int(np.ceil(y + bh)), int(x):int(np.ceil(x + bw))] = True
                runs = rle_runs(mask)
                ann["segmentation"] = {"size": [h, w],
                                       "counts": rle_string(runs) if rng.random() < 0.5
                                       else runs}
            elif rng.random() < 0.8:
                ann["segmentation"] = [_rect(x, y, bw, bh)]
            if cat == 7 and rng.random() < 0.7:
                ann["keypoints"] = [x, y, 2, x + bw / 2, y + bh / 2, int(rng.integers(3))]
            annotations.append(ann)
    tiny = [0.1, 0.09999999, 0.1 - 1e-9, 0.05]  # kept, dropped, kept (float32 0.1), dropped
    for k, size in enumerate(tiny):
        annotations.append({"id": 100 + k, "image_id": ids[0], "category_id": 90,
                            "bbox": [1.5, 1.25, size, 2.0], "iscrowd": 0, "segmentation": []})
    order = rng.permutation(n)
    return {"images": [images[i] for i in order], "annotations": annotations,
            "categories": CATEGORIES}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_boxes_and_classes_are_bit_identical_to_the_reader(tmp_path, seed):
    images_dir = tmp_path / "images"
    doc = _random_dataset(images_dir, seed)
    ann = load_coco(write_json(tmp_path / "in.json", doc), images_dir)
    dropped = [p for p in ann.problems if "size_threshold" in p.reason]
    assert len(dropped) == 2 and len(ann.problems) == 2, ann.problems
    assert [img.image_id for img in ann.images] == sorted(i["id"] for i in doc["images"])
    assert any(len(img.boxes) == 0 for img in ann.images)
    clean = ann.write_clean(tmp_path / "clean")
    samples = assert_matches_reader(ann, clean, images_dir, pixelwise=seed == 1)
    # the original file (tiny boxes and all) reads the same: size_threshold is mirrored
    original = reader(tmp_path / "in.json", images_dir, len(ann.images))
    for a, b in zip(original, samples, strict=True):
        assert bits(a["boxes"]) == bits(b["boxes"]) and bits(a["classes"]) == bits(b["classes"])


def test_a_hand_written_document_with_edges_crowds_and_masks(tmp_path):
    sizes = {"wide.jpg": (97, 13), "tall.jpg": (11, 83), "empty.jpg": (33, 31),
             "square.jpg": (64, 64)}
    for name, (w, h) in sizes.items():
        jpeg(tmp_path, name, w, h)
    blob = np.zeros((64, 64), bool)
    blob[10:30, 5:60] = True
    doc = {
        "images": [{"id": 90, "file_name": "wide.jpg", "width": 97, "height": 13},
                   {"id": 12, "file_name": "tall.jpg", "width": 11, "height": 83},
                   {"id": 40, "file_name": "empty.jpg", "width": 33, "height": 31},
                   {"id": 2, "file_name": "square.jpg", "width": 64, "height": 64}],
        "categories": CATEGORIES,
        "annotations": [
            {"id": 1, "image_id": 90, "category_id": 90, "bbox": [0, 0, 97, 13],
             "segmentation": [_rect(0, 0, 97, 13)]},
            {"id": 2, "image_id": 90, "category_id": 1, "bbox": [96.5, 12.5, 0.9, 0.9]},
            {"id": 3, "image_id": 12, "category_id": 7, "bbox": [0.3333333333333333, 1 / 7,
                                                                 10.1, 82.3], "iscrowd": 1},
            {"id": 4, "image_id": 2, "category_id": 1, "bbox": [5, 10, 55, 20], "iscrowd": 1,
             "segmentation": {"size": [64, 64], "counts": rle_runs(blob)}},
            {"id": 5, "image_id": 2, "category_id": 90, "bbox": [5, 10, 55, 20], "iscrowd": 1,
             "segmentation": {"size": [64, 64], "counts": rle_string(rle_runs(blob))}},
            {"id": 6, "image_id": 12, "category_id": 7, "bbox": [1e-300, 2.5e-7, 0.1, 0.1]},
        ],
    }
    ann = parse_coco(json.dumps(doc), available=set(sizes))
    assert ann.problems == []
    assert [img.file for img in ann.images] == ["square.jpg", "tall.jpg", "empty.jpg",
                                                "wide.jpg"]
    by_file = ann.by_file()
    assert by_file["wide.jpg"].classes.tolist() == [90, 1]  # document order within an image
    assert by_file["tall.jpg"].classes.tolist() == [7, 7]  # a crowd box is a box
    # past the edge within the tolerance: kept, clipped to the image (relative 0..1)
    assert by_file["wide.jpg"].boxes[1, 2] == 1
    assert by_file["empty.jpg"].boxes.shape == (0, 4)
    assert by_file["square.jpg"].has_masks and not by_file["tall.jpg"].has_masks
    clean = ann.write_clean(tmp_path)
    assert_matches_reader(ann, clean, tmp_path, pixelwise=True)
    assert_matches_reader(ann, clean, tmp_path)


def test_what_the_reader_does_with_crowds_and_an_images_list(tmp_path):
    """Facts the loader relies on: crowd boxes are read by default (include_iscrowd=True),
    and an ``images`` list sets the order (the loader then reads by id)."""
    for name in ("a.jpg", "b.jpg"):
        jpeg(tmp_path, name, 20, 10)
    doc = {"images": [{"id": 1, "file_name": "a.jpg", "width": 20, "height": 10},
                      {"id": 2, "file_name": "b.jpg", "width": 20, "height": 10}],
           "categories": CATEGORIES,
           "annotations": [{"image_id": 1, "category_id": 1, "bbox": [1, 1, 5, 5], "iscrowd": 1},
                           {"image_id": 1, "category_id": 7, "bbox": [2, 2, 5, 5]}]}
    path = write_json(tmp_path / "doc.json", doc)
    assert [s["classes"].tolist() for s in reader(path, tmp_path, 2)] == [[1, 7], []]
    no_crowd = reader(path, tmp_path, 2, include_iscrowd=False)
    assert [s["classes"].tolist() for s in no_crowd] == [[7], []]
    listed = reader(path, tmp_path, 2, images=["b.jpg", "a.jpg"])
    assert [s["image_id"] for s in listed] == [2, 1]
    ann = load_coco(path, tmp_path)
    assert ann.by_file()["a.jpg"].classes.tolist() == [1, 7]


def test_keypoints_are_relative_and_padded_to_the_most_of_the_images_categories():
    doc = {"images": [{"id": 1, "file_name": "a.jpg", "width": 40, "height": 30}],
           "categories": [{"id": 1, "name": "cat"},
                          {"id": 2, "name": "person", "keypoints": ["l", "r", "nose"]},
                          {"id": 3, "name": "hand", "keypoints": ["thumb"]}],
           "annotations": [
               {"image_id": 1, "category_id": 1, "bbox": [0, 0, 4, 4]},
               {"image_id": 1, "category_id": 2, "bbox": [1, 1, 30, 20],
                "keypoints": [10, 15, 2, 20, 3, 1, 0, 0, 0], "num_keypoints": 2},
               {"image_id": 1, "category_id": 3, "bbox": [1, 1, 3, 3], "keypoints": [2, 3, 2]}]}
    img = parse_coco(json.dumps(doc)).images[0]
    assert img.keypoints.shape == (3, 3, 3) and img.keypoints.dtype == np.float32
    assert not img.keypoints[0].any()
    assert bits(img.keypoints[1]) == bits(np.array(
        [[np.float32(10) / 40, np.float32(15) / 30, 2], [0.5, 0.1, 1], [0, 0, 0]], np.float32))
    assert img.keypoints[2].tolist()[0] == pytest.approx([0.05, 0.1, 2])
    assert not img.keypoints.flags.writeable and not img.boxes.flags.writeable
    alone = parse_coco(json.dumps(doc | {"annotations": doc["annotations"][:1]})).images[0]
    assert alone.keypoints.shape == (1, 0, 3)
    empty = parse_coco(json.dumps(doc | {"annotations": []})).images[0]
    assert empty.keypoints.shape == (0, 0, 3) and empty.classes.shape == (0,)


def test_the_cleaned_document_keeps_ids_names_boxes_masks_and_keypoints(tmp_path):
    doc = {"info": {"year": 2024}, "licenses": [],
           "images": [{"id": 5, "file_name": "a.jpg", "width": 40, "height": 30,
                       "license": 1, "coco_url": "http://example"},
                      {"id": 6, "file_name": "gone.jpg", "width": 40, "height": 30}],
           "categories": [{"id": 3, "name": "person", "supercategory": "human",
                           "keypoints": ["nose"], "skeleton": [[1, 1]]}],
           "annotations": [
               {"id": 11, "image_id": 5, "category_id": 3, "bbox": [1.25, 2, 3, 4],
                "segmentation": [[1.25, 2, 4.25, 2, 4.25, 6]], "area": 6.0, "iscrowd": 0,
                "keypoints": [2, 3, 2], "num_keypoints": 1, "extra": {"x": [1]}},
               {"id": 12, "image_id": 5, "category_id": 3, "bbox": [1, 2, 3, 4]},
               {"id": 13, "image_id": 6, "category_id": 3, "bbox": [1, 2, 3, 4]}]}
    ann = parse_coco(json.dumps(doc).encode(), available={"a.jpg"})
    clean = ann.coco_document()
    assert clean["images"] == [{"id": 5, "file_name": "a.jpg", "width": 40, "height": 30}]
    assert clean["categories"] == [{"id": 3, "name": "person", "supercategory": "human",
                                    "keypoints": ["nose"], "skeleton": [[1, 1]]}]
    first, second = clean["annotations"]
    assert first == {"id": 11, "image_id": 5, "category_id": 3, "bbox": [1.25, 2, 3, 4],
                     "segmentation": [[1.25, 2, 4.25, 2, 4.25, 6]], "area": 6.0, "iscrowd": 0,
                     "keypoints": [2, 3, 2], "num_keypoints": 1}
    assert second["segmentation"] == [] and second["iscrowd"] == 0  # DALI reads both
    assert ann.coco_document() is not clean  # a fresh copy each time
    path = ann.write_clean(tmp_path / "out")
    assert path.name == "instances_clean.json"
    assert json.loads(path.read_text(encoding="utf-8")) == clean
    assert ann.source == "coco" and set(ann.categories) == {3}
    assert ann.categories[3].keypoints == ("nose",)
    assert [p.file for p in ann.problems] == ["gone.jpg"]


def test_image_labels_compare_by_identity_not_by_array_truth():
    doc = {"images": [{"id": 1, "file_name": "a.jpg", "width": 4, "height": 4}],
           "categories": [{"id": 1, "name": "x"}],
           "annotations": [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2]}]}
    a, b = parse_coco(json.dumps(doc)).images[0], parse_coco(json.dumps(doc)).images[0]
    assert isinstance(a, ImageLabels) and a == a and a != b


def test_dali_masks_match_the_boxes_and_the_rle_and_each_file(tmp_path):
    jpeg(tmp_path, "poly.jpg", 61, 47)
    jpeg(tmp_path, "rle.jpg", 30, 22)
    jpeg(tmp_path, "none.jpg", 9, 7)
    blob = np.zeros((22, 30), bool)
    blob[3:9, 4:25] = True
    blob[12:20, 2:6] = True
    box = [7.5, 5.25, 40, 30.5]
    doc = {"images": [{"id": 3, "file_name": "poly.jpg", "width": 61, "height": 47},
                      {"id": 1, "file_name": "rle.jpg", "width": 30, "height": 22},
                      {"id": 2, "file_name": "none.jpg", "width": 9, "height": 7}],
           "categories": CATEGORIES,
           "annotations": [
               {"image_id": 3, "category_id": 90, "bbox": box, "segmentation": [_rect(*box)]},
               {"image_id": 1, "category_id": 7, "bbox": [2, 3, 23, 17], "iscrowd": 1,
                "segmentation": {"size": [22, 30], "counts": rle_string(rle_runs(blob))}}]}
    clean = parse_coco(json.dumps(doc)).write_clean(tmp_path / "clean")
    masks = dali_masks(clean, tmp_path, ["none.jpg", "missing.jpg", "rle.jpg", "poly.jpg",
                                         "rle.jpg"])
    assert list(masks) == ["none.jpg", "rle.jpg", "poly.jpg"]
    assert {k: (m.shape, m.dtype) for k, m in masks.items()} == {
        "none.jpg": ((7, 9, 1), np.int32), "rle.jpg": ((22, 30, 1), np.int32),
        "poly.jpg": ((47, 61, 1), np.int32)}
    assert not masks["none.jpg"].any()
    assert np.array_equal(masks["rle.jpg"][..., 0], np.where(blob, 7, 0))
    poly = masks["poly.jpg"][..., 0]
    assert set(np.unique(poly)) == {0, 90}
    ys, xs = np.nonzero(poly)
    x, y, w, h = box
    assert abs(xs.min() - x) <= 1 and abs(xs.max() + 1 - (x + w)) <= 1
    assert abs(ys.min() - y) <= 1 and abs(ys.max() + 1 - (y + h)) <= 1
    assert dali_masks(clean, tmp_path, ["missing.jpg"]) == {}


def test_dali_masks_reads_more_files_than_one_batch(tmp_path):
    doc = {"images": [], "categories": [{"id": 1, "name": "x"}], "annotations": []}
    for k in range(11):
        jpeg(tmp_path, f"{k:02d}.jpg", 8 + k, 6)
        doc["images"].append({"id": 100 - k, "file_name": f"{k:02d}.jpg", "width": 8 + k,
                              "height": 6})
        doc["annotations"].append({"image_id": 100 - k, "category_id": 1,
                                   "bbox": [0, 0, 2 + k / 2, 6],
                                   "segmentation": [_rect(0, 0, 2 + k / 2, 6)]})
    path = write_json(tmp_path / "doc.json", doc)
    names = [f"{k:02d}.jpg" for k in range(11)]
    masks = dali_masks(path, tmp_path, names)
    assert list(masks) == names
    for k, name in enumerate(names):
        assert masks[name].shape == (6, 8 + k, 1)
        assert np.nonzero(masks[name][0, :, 0])[0].max() + 1 == pytest.approx(2 + k / 2, abs=1)


def test_the_shipped_annotated_samples_load_cleanly_and_rasterise(tmp_path):
    ann = load_coco(SAMPLES / "instances.json", SAMPLES)
    assert ann.problems == []
    files = [img.file for img in ann.images]
    assert files == ["cat.jpg", "coffee.jpg", "astronaut.jpg", "rocket_launch.jpg"]
    assert all(len(img.boxes) >= 3 and img.has_masks for img in ann.images)
    assert {c.name for c in ann.categories.values()} >= {"cat", "cup", "person", "rocket"}
    clean = ann.write_clean(tmp_path)
    assert_matches_reader(ann, clean, SAMPLES)
    masks = dali_masks(clean, SAMPLES, files)
    for img in ann.images:
        mask = masks[img.file]
        assert mask.shape == (img.height, img.width, 1)
        assert set(np.unique(mask)) - {0} <= set(img.classes.tolist())
        assert (mask > 0).mean() > 0.1, img.file
    # beside the images, not in a subfolder (a subfolder makes a folder of class folders)
    assert not [p for p in SAMPLES.iterdir() if p.is_dir()]


def test_dali_masks_turns_a_reader_failure_into_one_clear_error(tmp_path):
    doc = {"images": [{"id": 1, "file_name": "gone.jpg", "width": 8, "height": 8}],
           "categories": [{"id": 1, "name": "x"}], "annotations": []}
    path = write_json(tmp_path / "doc.json", doc)
    with pytest.raises(AnnotationError, match="DALI could not read the masks of doc.json"):
        dali_masks(path, tmp_path, ["gone.jpg"])
