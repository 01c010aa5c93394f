"""``render`` into a folder it may not write to: one paragraph naming the option, exit code 2
(gallery.cli_output), not a PermissionError traceback."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import SAMPLES, preset_dict

SETPRIV = shutil.which("setpriv")
NO_OVERRIDE = "-dac_override,-dac_read_search"


def _as_user(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line, with file permissions enforced: root reads and writes anything, so
    as root it runs without the capabilities that let it (setpriv)."""
    prefix: list[str] = []
    if os.geteuid() == 0:
        if SETPRIV is None:
            pytest.skip("root ignores file permissions and setpriv is not installed")
        prefix = [SETPRIV, f"--bounding-set={NO_OVERRIDE}", f"--inh-caps={NO_OVERRIDE}"]
    return subprocess.run([*prefix, sys.executable, "-m", "dali_gallery.gallery.cli", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "read_only"
    folder.mkdir()
    folder.chmod(0o555)
    yield folder
    folder.chmod(0o755)


def _refused(proc: subprocess.CompletedProcess[str], option: str, path: Path) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    said = " ".join(proc.stderr.split())  # one paragraph, wrapped at 100 columns
    assert said.startswith(f"dali-gallery: {option} {str(path)!r} cannot be written: "), said


def test_render_into_a_read_only_folder_names_the_option(tmp_path, read_only):
    """Regression: Image.save and np.savez raised PermissionError through the command."""
    preset = tmp_path / "preset.json"
    preset.write_text(json.dumps(preset_dict([{"op": "flip"}])))
    grid = read_only / "grid.png"
    _refused(_as_user("render", str(preset), "--images", str(SAMPLES / "cat.jpg"), "--out",
                      str(grid)), "--out", grid)
    npz = read_only / "batch.npz"
    _refused(_as_user("render", str(preset), "--images", str(SAMPLES), "--iteration", "0",
                      "--batch-size", "2", "--npz", str(npz)), "--npz", npz)
    assert not any(read_only.iterdir())
