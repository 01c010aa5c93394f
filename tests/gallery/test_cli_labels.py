"""``dali-gallery render --annotations`` and ``export --labels``: the preview's first draw with
its moved labels is, array for array, what the exported script writes with ``--annotations``
and what ``render --iteration`` replays; bad annotations are listed and the rest used."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from dali_gallery.gallery.cli import main
from tests.coco_scene import IDS, make_coco
from tests.support import preset_dict

PRESET = preset_dict([
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-35, 35]},
                                                    "keep_size": False}},
    {"op": "flip", "probability": 0.5},
    {"op": "crop", "params": {"crop_w": 48.0, "crop_h": 40.0, "crop_pos_x": 0.8}},
    {"op": "hsv", "params": {"hue": {"uniform": [-20, 20]}}},
], seed=21)
N = len(IDS)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli_coco")
    images, annotations = make_coco(root)
    preset = root / "preset.json"
    preset.write_text(json.dumps(PRESET))
    return root, images, annotations, preset


def render_npz(dataset, annotations, out, *extra: str) -> int:
    root, images, _, preset = dataset
    return main(["render", str(preset), "--images", str(images), "--annotations",
                 str(annotations), "--device", "cpu", "--draws", "1", "--out",
                 str(root / "grid.png"), "--npz", str(out), *extra])


def assert_same_npz(a, b) -> None:
    x, y = np.load(a), np.load(b)
    assert sorted(x.files) == sorted(y.files)
    for key in x.files:
        assert x[key].dtype == y[key].dtype and x[key].shape == y[key].shape, key
        assert x[key].tobytes() == y[key].tobytes(), key


def test_render_the_exported_script_and_the_replay_write_the_same_arrays(dataset, capsys):
    root, images, annotations, preset = dataset
    assert render_npz(dataset, annotations, root / "preview.npz") == 0
    assert "rendered 5 annotated images x 1 draws" in capsys.readouterr().out
    batch = np.load(root / "preview.npz")
    keys = ["image", "boxes", "labels", "keypoints", "masks"]
    assert sorted(batch.files) == sorted(f"{k}_{i:04d}" for k in keys for i in range(N))
    assert batch["boxes_0000"].dtype == np.float32 and batch["labels_0000"].dtype == np.int32
    assert sum(len(batch[f"boxes_{i:04d}"]) for i in range(N)) < 8  # the crop dropped some

    script = root / "augment.py"
    assert main(["export", str(preset), "-o", str(script), "--labels", "masks"]) == 0
    run = subprocess.run([sys.executable, str(script), "--images", str(images), "--annotations",
                          str(annotations), "--batch-size", str(N), "--no-shuffle", "--out",
                          str(root / "script.npz")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert_same_npz(root / "preview.npz", root / "script.npz")

    assert main(["render", str(preset), "--images", str(images), "--annotations",
                 str(annotations), "--iteration", "0", "--batch-size", str(N), "--no-shuffle",
                 "--device", "cpu", "--npz", str(root / "replay.npz")]) == 0
    assert_same_npz(root / "preview.npz", root / "replay.npz")


def test_bad_annotations_are_listed_and_the_rest_used(dataset, capsys):
    root, images, annotations, _ = dataset
    doc = json.loads(annotations.read_text())
    doc["annotations"].append({"id": 99, "image_id": IDS[0], "category_id": 42,
                               "bbox": [1, 1, 5, 5], "iscrowd": 0, "segmentation": []})
    doc["images"].append({"id": 77, "file_name": "missing.jpg", "width": 10, "height": 10})
    bad = root / "bad.json"
    bad.write_text(json.dumps(doc))
    assert render_npz(dataset, annotations, root / "good.npz") == 0
    capsys.readouterr()
    assert render_npz(dataset, bad, root / "bad.npz") == 0
    err = capsys.readouterr().err
    assert "left out: missing.jpg:" in err and "left out: scene_0.jpg:" in err
    assert_same_npz(root / "good.npz", root / "bad.npz")


def test_a_category_id_above_255_turns_masks_off_and_too_many_boxes_name_the_image(
        dataset, capsys):
    """Valid COCO files beyond what a preview carries: a category id a uint8 mask cannot
    hold renders boxes without masks (said on stderr, as the builder says it); an image with
    more boxes than a preview takes is named with its count (it used to abort with neither)."""
    root, images, annotations, _ = dataset
    doc = json.loads(annotations.read_text())
    doc["categories"].append({"id": 300, "name": "wide"})
    doc["annotations"].append({"id": 99, "image_id": IDS[0], "category_id": 300,
                               "bbox": [1, 1, 5, 5], "iscrowd": 0,
                               "segmentation": [[1, 1, 6, 1, 6, 6, 1, 6]]})
    wide = root / "wide.json"
    wide.write_text(json.dumps(doc))
    capsys.readouterr()
    assert render_npz(dataset, wide, root / "wide.npz") == 0
    err = capsys.readouterr().err
    assert "left out: wide.json: category ids [300] do not fit the uint8 masks" in err
    batch = np.load(root / "wide.npz")
    assert not [k for k in batch.files if k.startswith("masks_")]
    assert [k for k in batch.files if k.startswith("boxes_")]

    doc = json.loads(annotations.read_text())
    doc["annotations"] += [{"id": 1000 + k, "image_id": IDS[0], "category_id": 3,
                            "bbox": [1, 1, 5, 5], "iscrowd": 0, "segmentation": []}
                           for k in range(1001)]
    busy = root / "busy.json"
    busy.write_text(json.dumps(doc))
    assert render_npz(dataset, busy, root / "busy.npz") == 2
    err = capsys.readouterr().err
    assert "scene_0.jpg: 1003 boxes" in err and "at most 1000 boxes" in err, err


def test_what_cannot_move_labels_is_refused_by_name(dataset, capsys):
    root, images, annotations, _ = dataset
    water = root / "water.json"
    water.write_text(json.dumps(preset_dict([{"op": "flip"}, {"op": "water"}])))
    assert main(["export", str(water), "-o", str(root / "w.py"), "--labels", "boxes"]) == 2
    assert "step 1 (water) cannot be used with labels" in capsys.readouterr().err
    assert main(["render", str(water), "--images", str(images), "--annotations",
                 str(annotations), "--device", "cpu", "--out", str(root / "w.png")]) == 2
    err = capsys.readouterr().err
    assert "step 1 (water): cannot be used with labels" in err and err.count("step 1") == 1



def test_the_operator_reference_says_what_each_operator_does_to_labels(capsys):
    assert main(["ops", "--category", "distortion"]) == 0
    out = capsys.readouterr().out
    assert "labels: not label-aware: a non-rigid distortion" in out
    assert main(["ops", "--json", "--category", "geometry"]) == 0
    ops = {o["op"]: o for o in json.loads(capsys.readouterr().out)["operators"]}
    assert ops["flip"]["labels"].startswith("boxes (fn.bb_flip)")


def test_the_grid_draws_each_tiles_labels(dataset, tmp_path):
    """Originals with their annotations, each draw with the labels as the chain moved them,
    in the builder's colours; the same grid without annotations has none of them."""
    from PIL import Image

    from dali_gallery.widgets.label_overlay import category_colour

    root, images, annotations, preset = dataset
    assert render_npz(dataset, annotations, tmp_path / "b.npz") == 0
    grid = np.asarray(Image.open(root / "grid.png").convert("RGB")).astype(int)
    assert main(["render", str(preset), "--images", str(images), "--device", "cpu",
                 "--draws", "1", "--out", str(tmp_path / "plain.png")]) == 0
    plain = np.asarray(Image.open(tmp_path / "plain.png").convert("RGB")).astype(int)
    for category in (3, 11):
        colour = np.array(category_colour(category))
        assert (np.abs(grid - colour).max(axis=2) < 8).sum() > 20, category
        assert (np.abs(plain - colour).max(axis=2) < 8).sum() < 5, category


def test_a_relative_images_folder_renders_the_same(dataset, monkeypatch):
    """``--images gallery/samples`` (relative, as the README writes it) said every image was
    "file not found": the files were joined to the folder twice."""
    root, images, annotations, preset = dataset
    assert render_npz(dataset, annotations, root / "absolute.npz") == 0
    monkeypatch.chdir(images.parent)
    assert main(["render", str(preset), "--images", images.name, "--annotations",
                 str(annotations), "--device", "cpu", "--draws", "1", "--out",
                 str(root / "grid.png"), "--npz", str(root / "relative.npz")]) == 0
    assert_same_npz(root / "absolute.npz", root / "relative.npz")
