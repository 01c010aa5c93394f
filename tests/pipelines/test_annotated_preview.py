"""pipelines/annotated_preview.py: an image whose file does not decode to the size its entry
declares is said (its labels would sit in the wrong place, in training too), with DALI's own
decode, for a wrong width/height and for an EXIF-rotated JPEG; a dataset whose category ids do
not fit uint8 masks carries boxes without masks."""

from __future__ import annotations

import io
import json

import numpy as np
from PIL import Image

from dali_gallery.pipelines.annotated_preview import load_annotated, masks_problem, size_problem
from dali_gallery.pipelines.annotations import ImageLabels, load_coco
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
