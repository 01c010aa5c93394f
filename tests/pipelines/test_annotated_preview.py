"""pipelines/annotated_preview.py: an image whose file does not decode to the size its entry
declares is said (its labels would sit in the wrong place, in training too), with DALI's own
decode, for a wrong width/height and for an EXIF-rotated JPEG; a dataset whose category ids do
not fit uint8 masks carries boxes without masks, as training refuses its masks."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.annotated_preview import (
    dataset_labels,
    load_annotated,
    masks_problem,
    size_problem,
)
from dali_gallery.pipelines.annotations import ImageLabels, load_coco
from dali_gallery.pipelines.coco_keypoints import keypoint_table
from dali_gallery.pipelines.engine import PreviewEngine
from tests.coco_scene import make_coco


def _labels(w: int, h: int) -> ImageLabels:
    empty = np.zeros((0, 4), np.float32)
    return ImageLabels("a.jpg", 1, w, h, empty, np.zeros(0, np.int32),
                       np.zeros((0, 0, 3), np.float32), False)


def test_size_problem_compares_with_the_size_the_declared_one_decodes_to():
    assert size_problem(_labels(80, 60), (60, 80), None) is None
    assert size_problem(_labels(800, 600), (48, 64), 64) is None  # shrunk, aspect kept
    wrong = size_problem(_labels(160, 120), (60, 80), None)
    assert wrong is not None and "declared 160x120 but it decodes to 80x60" in wrong.reason
    assert size_problem(_labels(60, 80), (60, 80), 64) is not None  # rotated


def _exif_rotated(w: int, h: int) -> bytes:
    """A w x h JPEG whose EXIF orientation 6 says: show it turned 90 degrees."""
    pic = Image.new("RGB", (w, h), (200, 40, 40))
    exif = Image.Exif()
    exif[0x0112] = 6
    buf = io.BytesIO()
    pic.save(buf, "JPEG", exif=exif.tobytes())
    return buf.getvalue()


def test_a_wrong_declared_size_and_an_exif_rotation_are_warnings(tmp_path):
    images_dir, annotations = make_coco(tmp_path)
    (images_dir / "turned.jpg").write_bytes(_exif_rotated(40, 24))
    doc = json.loads(annotations.read_text())
    first = doc["images"][0]
    first["width"], first["height"] = 2 * first["width"], 2 * first["height"]
    doc["images"].append({"id": 1, "file_name": "turned.jpg", "width": 40, "height": 24})
    doc["annotations"].append({"id": 500, "image_id": 1, "category_id": 3, "iscrowd": 0,
                               "bbox": [2, 2, 30, 10], "segmentation": []})
    path = tmp_path / "sizes.json"
    path.write_text(json.dumps(doc))
    engine = PreviewEngine("cpu", num_threads=2)
    try:
        batch = load_annotated(engine, path, images_dir)
    finally:
        engine.close()
    warned = {p.file: p.reason for p in batch.warnings}
    assert set(warned) == {first["file_name"], "turned.jpg"}, warned
    assert "decodes to 24x40" in warned["turned.jpg"]
    assert batch.files[0] == "turned.jpg" and not batch.problems  # kept: training reads it


def test_category_ids_above_255_carry_no_masks(tmp_path):
    images_dir, annotations = make_coco(tmp_path)
    doc = json.loads(annotations.read_text())
    doc["categories"].append({"id": 256, "name": "wide"})
    path = tmp_path / "wide.json"
    path.write_text(json.dumps(doc))
    problem = masks_problem(load_coco(path, images_dir), "wide.json")
    assert problem is not None and "category ids [256]" in problem.reason
    assert masks_problem(load_coco(annotations, images_dir), "x.json") is None


@pytest.mark.parametrize("extra", [None, 255, 256, 1000, 0])
def test_the_preview_carries_masks_exactly_when_training_accepts_them(tmp_path, extra):
    """One check decides both (coco_keypoints.unfit_for_masks, which the exported module
    carries): the preview has masks for a file whose checked copy the export's
    keypoint_table(masks=True) reads, and says why not for one it refuses (id 0 is left out
    by the checks, in both, before that)."""
    images_dir, annotations = make_coco(tmp_path)
    doc = json.loads(annotations.read_text())
    doc["categories"] += [] if extra is None else [{"id": extra, "name": "extra"}]
    path = tmp_path / "extra.json"
    path.write_text(json.dumps(doc))
    loaded = load_coco(path, images_dir)
    try:
        keypoint_table(loaded.write_clean(tmp_path / "clean"), masks=True)
        trained = True
    except ValueError as e:
        assert f"category ids [{extra}]" in str(e)
        trained = False
    assert dataset_labels(loaded, 0.5).masks is trained
    assert (masks_problem(loaded, "extra.json") is None) is trained
    assert trained is (extra not in (256, 1000))
