"""Annotations matched to the preview's images by file name: empty labels for images without
an entry, DALI's masks as uint8 at the decoded size, ids above 255 turn masks off with a
problem, uploads are bytes and keep their good entries."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.annotations import AnnotationError
from dali_gallery.widgets.label_source import LabelSource, from_path, from_upload, from_yolo

W, H = 160, 120


def image_file(folder: Path, name: str) -> None:
    a = np.full((H, W, 3), 128, np.uint8)
    a[30:90, 40:120] = 200
    Image.fromarray(a).save(folder / name)


def coco(annotations: list[dict[str, Any]], categories: list[dict[str, Any]] | None = None,
         files: tuple[str, ...] = ("a.png", "b.png")) -> dict[str, Any]:
    return {"images": [{"id": k + 1, "file_name": f, "width": W, "height": H}
                       for k, f in enumerate(files)],
            "categories": categories or [{"id": 1, "name": "thing"}, {"id": 2, "name": "corner"}],
            "annotations": annotations}


def ann(aid: int, image: int, cat: int, bbox: list[float], polygon: bool = False) -> dict:
    x, y, w, h = bbox
    segm = [[x, y, x + w, y, x + w, y + h, x, y + h]] if polygon else []
    return {"id": aid, "image_id": image, "category_id": cat, "bbox": bbox, "area": w * h,
            "iscrowd": 0, "segmentation": segm}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    for name in ("a.png", "b.png", "c.png"):
        image_file(tmp_path, name)
    return tmp_path


def write(folder: Path, doc: dict[str, Any]) -> Path:
    path = folder / "instances.json"
    path.write_text(json.dumps(doc))
    return path


def test_matched_by_file_name_and_images_without_entries_get_empty_labels(folder):
    path = write(folder, coco([ann(1, 1, 1, [40, 30, 80, 60]), ann(2, 1, 2, [0, 0, 20, 20]),
                               ann(3, 2, 1, [10, 10, 20, 20])]))
    source = from_path(path, folder)
    assert source.names == {1: "thing", 2: "corner"} and source.problems == []
    assert not source.masks_on  # no polygon anywhere
    labels = source.for_images(["b.png", "c.png", "a.png"], [(96, 128)] * 3)
    assert labels is not None and [len(s.boxes) for s in labels] == [1, 0, 2]
    np.testing.assert_allclose(labels[2].boxes[0], [40 / W, 30 / H, 120 / W, 90 / H], atol=1e-6)
    assert labels[2].classes.tolist() == [1, 2] and labels[2].mask is None
    assert labels[0].keypoints.shape == (1, 0, 3)  # no keypoints: K = 0
    assert source.matched(["c.png", "a.png"]) == ["a.png"]
    assert source.counts(["a.png", "b.png"]) == {1: 2, 2: 1}
    assert source.for_images(["c.png"], [(96, 128)]) is None  # nothing to label: no labels
    # an entry without boxes is labelled: with no box at all (the chain still runs with labels)
    empty = from_path(write(folder, coco([], files=("a.png",))), folder)
    assert empty.matched(["a.png"]) == ["a.png"]
    [only] = empty.for_images(["a.png"], [(9, 9)])
    assert only.boxes.shape == (0, 4) and only.keypoints.shape == (0, 0, 3)


def test_masks_come_from_dali_as_uint8_at_the_decoded_size(folder):
    path = write(folder, coco([ann(1, 1, 2, [40, 30, 80, 60], polygon=True),
                               ann(2, 2, 1, [10, 10, 20, 20])]))
    source = from_path(path, folder)
    assert source.masks_on
    a, b = source.for_images(["a.png", "b.png"], [(60, 80), (96, 128)])
    assert a.mask is not None and a.mask.dtype == np.uint8 and a.mask.shape == (60, 80, 1)
    ys, xs = np.nonzero(a.mask[:, :, 0])
    assert set(np.unique(a.mask).tolist()) == {0, 2}
    assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (20, 15, 60, 45)
    assert b.mask is not None and not b.mask.any()  # no polygon: an empty map of its size
    source.close()


def test_category_ids_above_255_turn_masks_off_with_a_problem(folder):
    cats = [{"id": 300, "name": "big id"}]
    path = write(folder, coco([ann(1, 1, 300, [40, 30, 80, 60], polygon=True)], cats))
    source = from_path(path, folder)
    assert not source.masks_on
    assert any("300" in p.reason and "masks are off" in p.reason for p in source.problems)
    (a,) = source.for_images(["a.png"], [(96, 128)])
    assert a.mask is None and a.classes.tolist() == [300]  # boxes still there


def test_upload_is_data_and_keeps_the_good_entries(folder):
    doc = coco([ann(1, 1, 1, [40, 30, 80, 60], polygon=True), ann(2, 1, 1, [10, 10, -5, 20]),
                ann(3, 2, 1, [10, 10, 20, 20])])
    source = from_upload(json.dumps(doc).encode(), "mine.json", ["a.png", "b.png"], None)
    assert source.origin == "mine.json"
    reasons = [str(p) for p in source.problems]
    assert any(r.startswith("a.png: annotation 2") for r in reasons), reasons
    # uploaded images: DALI cannot rasterise their masks, said once; boxes are kept
    assert any("uploaded" in r for r in reasons) and not source.masks_on
    a, b = source.for_images(["a.png", "b.png"], [(96, 128)] * 2)
    assert len(a.boxes) == 1 and len(b.boxes) == 1
    with pytest.raises(AnnotationError, match="not valid JSON|JSON"):
        from_upload(str(folder).encode(), "path.json", ["a.png"], folder)


def test_too_many_boxes_for_a_preview_is_a_problem_not_a_crash(folder):
    many = [ann(k + 1, 1, 1, [1, 1, 5, 5]) for k in range(1001)]
    source = LabelSource(from_path(write(folder, coco(many)), folder).annotations, "x.json",
                         folder)
    (a,) = source.for_images(["a.png"], [(96, 128)])
    assert len(a.boxes) == 0
    assert any("at most 1000 boxes" in p.reason for p in source.problems)


def test_yolo_folder(folder):
    (folder / "a.txt").write_text("0 0.5 0.5 0.5 0.5\n")
    source = from_yolo(folder)
    a, c = source.for_images(["a.png", "c.png"], [(96, 128)] * 2)
    np.testing.assert_allclose(a.boxes[0], [0.25, 0.25, 0.75, 0.75], atol=1e-6)
    assert len(c.boxes) == 0 and source.origin == "YOLO labels"


def test_yolo_split_of_a_roboflow_export_matches_the_previews_names_and_its_masks(tmp_path):
    """ds/train chosen: the preview lists images/a.png; the labels come from ds/train/labels
    under that name, and DALI reads the polygon's mask from ds/train/images."""
    split = tmp_path / "ds" / "train"
    (split / "images").mkdir(parents=True)
    (split / "labels").mkdir()
    for name in ("a.png", "b.png"):
        image_file(split / "images", name)
    (split / "labels" / "a.txt").write_text("0 0.25 0.25 0.75 0.25 0.75 0.75 0.25 0.75\n")
    source = from_yolo(split, confine=tmp_path / "ds")
    assert source.problems == [] and source.masks_on
    a, b = source.for_images(["images/a.png", "images/b.png"], [(60, 80)] * 2)
    np.testing.assert_allclose(a.boxes[0], [0.25, 0.25, 0.75, 0.75], atol=1e-6)
    assert a.mask is not None and set(np.unique(a.mask).tolist()) == {0, 1}
    ys, xs = np.nonzero(a.mask[:, :, 0])
    assert abs(xs.min() - 20) <= 1 and abs(xs.max() + 1 - 60) <= 1
    assert len(b.boxes) == 0 and b.mask is not None and not b.mask.any()
