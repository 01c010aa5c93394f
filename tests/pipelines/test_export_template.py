"""The exported script's command line (pipelines.export_template's ``script_batch`` and
``save_npz``): a folder that is not there, a file DALI cannot decode or an --out that cannot be
written ends it with one paragraph naming the option, not a Python traceback."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.label_code import LabelSet
from dali_gallery.pipelines.preset import load
from tests.coco_scene import make_coco
from tests.support import SAMPLES, preset_dict


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args, "--batch-size", "2",
                           "--no-shuffle"], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("export") / "augment.py"
    path.write_text(export_code(load(preset_dict([{"op": "flip"}]))))
    return path


def _refused(proc: subprocess.CompletedProcess[str], code: int, *named: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("augment.py: error: "), proc.stderr[-2000:]
    for text in named:
        assert text in last, last


def test_a_missing_images_folder_or_out_folder_is_one_line_exit_2(script, tmp_path):
    """Regression: a missing --images folder raised FileNotFoundError from os.scandir, and an
    --out in a missing folder one from np.savez after the whole batch had run."""
    out = str(tmp_path / "b.npz")
    _refused(_run(script, "--images", str(tmp_path / "nope"), "--out", out), 2, "--images",
             "nope", "not a folder")
    _refused(_run(script, "--images", str(SAMPLES / "cat.jpg"), "--out", out), 2, "--images")
    missing = str(tmp_path / "missing" / "b.npz")
    _refused(_run(script, "--images", str(SAMPLES), "--out", missing), 2, "--out", missing,
             "does not exist")
    (tmp_path / "taken.npz").mkdir()  # a folder where the file goes: np.savez's OSError
    _refused(_run(script, "--images", str(SAMPLES), "--out", str(tmp_path / "taken.npz")), 2,
             "--out", "taken.npz", "cannot be written")


def test_a_file_dali_cannot_decode_is_one_paragraph_exit_1(script, tmp_path):
    """Regression: DALI's RuntimeError from pipe.run() came out as a traceback."""
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(SAMPLES / "cat.jpg", folder / "a.jpg")
    (folder / "b.jpg").write_bytes(b"not an image")
    proc = _run(script, "--images", str(folder), "--out", str(tmp_path / "b.npz"))
    _refused(proc, 1, "--images", str(folder), "check-images")


def test_the_labelled_script_refuses_the_same_way(tmp_path):
    images, annotations = make_coco(tmp_path / "coco")
    script = tmp_path / "augment.py"
    script.write_text(export_code(load(preset_dict([{"op": "flip"}])), labels=LabelSet()))
    missing = str(tmp_path / "missing" / "b.npz")
    _refused(_run(script, "--images", str(images), "--annotations", str(annotations), "--out",
                  missing), 2, "--out", missing)
    _refused(_run(script, "--images", str(tmp_path / "nope"), "--annotations",
                  str(annotations), "--out", str(tmp_path / "b.npz")), 2, "--images")
