"""``dali-gallery render --images`` on folders of class folders: the .npz is the exported
script's first batch, images and labels, whatever else lies in the folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.support import SAMPLES, preset_and_script, preset_dict, run_python

SAMPLE_FILES = sorted(SAMPLES.glob("*.jpg"))
PRESET = preset_dict([
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "brightness_contrast", "params": {"brightness": {"uniform": [0.8, 1.2]}}},
], seed=4)


run = run_python


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    return preset_and_script(PRESET, tmp_path_factory.mktemp("cli_folders"))


def _classes(root: Path, extra: str | None) -> Path:
    """cls/a and cls/b with three images each, and ``extra``: a .ppm in a class folder (DALI's
    reader reads it, the preview's own types leave it out) or an image beside the class
    folders (the reader ignores it, the preview showed it first)."""
    for k, rel in enumerate(["a/x1.jpg", "a/x2.jpg", "a/x3.jpg", "b/y1.jpg", "b/y2.jpg",
                             "b/y3.jpg"]):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE_FILES[k], root / rel)
    if extra is not None:
        Image.open(SAMPLE_FILES[0]).convert("RGB").resize((50, 40)).save(root / extra)
    return root


@pytest.mark.parametrize(("extra", "n", "labels", "note"), [
    (None, 6, [0, 0, 0, 1, 1, 1], None),
    ("a/x25.ppm", 7, [0, 0, 0, 0, 1, 1, 1], None),
    ("top.webp", 6, [0, 0, 0, 1, 1, 1], "are not read by the exported pipeline"),
])
def test_render_npz_is_the_exported_script_s_first_batch(files, tmp_path, extra, n, labels,
                                                         note):
    """The .npz said labels 0..n-1 (the script: class indices); a .ppm was left out of the
    preview and an image beside the class folders put in first, both without a word."""
    root = _classes(tmp_path / "cls", extra)
    shown, trained = tmp_path / "shown.npz", tmp_path / "trained.npz"
    out = run(str(files["script"]), "--images", str(root), "--batch-size", str(n), "--device",
              "cpu", "--no-shuffle", "--out", str(trained))
    assert out.returncode == 0, out.stderr
    out = run("-m", "dali_gallery.gallery.cli", "render", str(files["preset"]), "--images",
              str(root), "--draws", "2", "--device", "cpu", "--out", str(tmp_path / "g.png"),
              "--npz", str(shown))
    assert out.returncode == 0, out.stderr
    assert f"rendered {n} images x 2 draws" in out.stdout
    x, y = np.load(shown), np.load(trained)
    assert sorted(x.files) == sorted(y.files)
    for key in x.files:
        np.testing.assert_array_equal(x[key], y[key], err_msg=key)
    assert x["labels"].tolist() == labels
    if note is None:
        assert out.stderr == ""
    else:
        assert (f"note: 1 image(s) beside the class folders of {str(root)!r} {note}"
                in out.stderr)
        assert out.stderr.rstrip().endswith("not previewed: top.webp")
