"""File names that are not UTF-8: listed, printed, given to DALI and exported without crashing.

POSIX names are bytes. ``os.fsdecode`` keeps bytes that are not UTF-8 as lone surrogates, which
a strict UTF-8 stdout cannot print and DALI's string arguments cannot take. Each test runs the
way the probe did: the CLI in a child process whose stdout is strict UTF-8, the exported script
in a child process on such a folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dali_gallery.pipelines.dataset_check import check_dataset
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.images import collect, decode, readable
from dali_gallery.pipelines.preset import load
from tests.corpus import _jpeg, _pattern
from tests.support import REPO, preset_dict

STRICT = {**os.environ, "PYTHONIOENCODING": "utf-8:strict", "LC_ALL": "C.UTF-8"}
"""A child process whose stdout refuses what is not UTF-8 (a UTF-8 terminal or pipe)."""


def _put(root: bytes, rel: bytes, data: bytes) -> None:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


@pytest.fixture
def latin1_tree(tmp_path: Path) -> bytes:
    """A training folder named in Latin-1 bytes, with Latin-1 class and file names, a bad
    image and a 0-byte file (a reader error: the checker restarts with a list of files)."""
    root = os.fsencode(tmp_path) + b"/donn\xe9es"
    good = _jpeg(_pattern(24, 16))
    _put(root, b"caf\xe9/\xe9t\xe9.jpg", good)
    _put(root, b"caf\xe9/z.jpg", good)
    _put(root, b"caf\xe9/mauvais\xff.jpg", b"not an image")
    _put(root, b"caf\xe9/vide.jpg", b"")
    _put(root, b"ok/a.jpg", good)
    return root


def test_readable_escapes_undecodable_bytes_and_control_characters() -> None:
    assert readable(os.fsdecode(b"caf\xe9/\xff.jpg")) == "caf\\xe9/\\xff.jpg"
    assert readable("a\nb\x1b[31m\u202e.jpg") == "a\\nb\\x1b[31m\\u202e.jpg"
    assert readable("żółw ćma.jpg") == "żółw ćma.jpg"
    readable(os.fsdecode(b"\xff\xfe")).encode("utf-8")  # always printable as UTF-8


def test_check_images_prints_names_that_are_not_utf8(latin1_tree: bytes) -> None:
    """The probe: check-images aborted with a bare UnicodeEncodeError."""
    proc = subprocess.run([sys.executable, "-m", "dali_gallery.gallery.cli", "check-images",
                           latin1_tree], capture_output=True, env=STRICT, cwd=REPO, timeout=300)
    out = proc.stdout.decode("utf-8")  # strict: the output is valid UTF-8
    assert proc.returncode == 1, proc.stderr.decode("utf-8", "replace")[-2000:]
    assert "Traceback" not in proc.stderr.decode("utf-8", "replace")
    assert "Checked 5 files" in out and "2 problems" in out
    assert "  caf\\xe9/mauvais\\xff.jpg: cannot be decoded (not a recognised image format)" in out
    assert "  caf\\xe9/vide.jpg: empty file (0 bytes)" in out


def test_check_dataset_names_and_checks_every_file(latin1_tree: bytes) -> None:
    checked, problems = check_dataset(os.fsdecode(latin1_tree))
    assert checked == 5
    assert {p.name: p.reason for p in problems} == {
        "caf\\xe9/mauvais\\xff.jpg": "cannot be decoded (not a recognised image format)",
        "caf\\xe9/vide.jpg": "empty file (0 bytes)",
    }


def test_check_a_flat_folder_of_names_that_are_not_utf8(tmp_path: Path) -> None:
    """A flat folder is checked from a list of its files, which DALI must take as bytes."""
    root = os.fsencode(tmp_path)
    _put(root, b"\xe9t\xe9.jpg", _jpeg(_pattern(24, 16)))
    _put(root, b"\xff.jpg", b"not an image")
    checked, problems = check_dataset(tmp_path)
    assert checked == 2
    assert [(p.name, p.reason) for p in problems] == [
        ("\\xff.jpg", "cannot be decoded (not a recognised image format)")]


def test_the_preview_names_them_readably(latin1_tree: bytes) -> None:
    images, problems = collect(os.fsdecode(latin1_tree))
    assert [i.name for i in images] == ["caf\\xe9/mauvais\\xff.jpg", "caf\\xe9/z.jpg",
                                        "caf\\xe9/\\xe9t\\xe9.jpg", "ok/a.jpg"]
    assert [p.name for p in problems] == ["caf\\xe9/vide.jpg"]
    arrays, ok, bad = decode(images)
    assert len(arrays) == 3 and [p.name for p in bad] == ["caf\\xe9/mauvais\\xff.jpg"]


@pytest.mark.parametrize("layout", ["flat folder", "class folders"])
def test_the_exported_script_reads_a_folder_that_is_not_utf8(tmp_path: Path,
                                                              layout: str) -> None:
    """The probe: the exported training script crashed on such a folder."""
    root = os.fsencode(tmp_path) + b"/donn\xe9es"
    names = [b"\xe9t\xe9.jpg", b"caf\xe9 au lait.jpg", b"z\xff.jpg"]
    for k, name in enumerate(names):
        rel = name if layout == "flat folder" else b"cl\xe0sse%d/" % (k % 2) + name
        _put(root, rel, _jpeg(_pattern(20 + 4 * k, 12 + 2 * k)))
    script = tmp_path / "augment.py"
    script.write_text(export_code(load(preset_dict([{"op": "flip"}]))))
    out = tmp_path / "batch.npz"
    proc = subprocess.run([sys.executable, str(script), "--images", root, "--batch-size", "3",
                           "--device", "cpu", "--no-shuffle", "--out", str(out)],
                          capture_output=True, env=STRICT, timeout=300)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-2000:]
    batch = np.load(out)
    expected_labels = [0, 1, 2] if layout == "flat folder" else [0, 0, 1]
    assert batch["labels"].tolist() == expected_labels
    # The same pixels the preview makes from the same files, in the reader's order.
    engine = PreviewEngine("cpu")
    try:
        assert engine.set_images(os.fsdecode(root)) == []
        by_name = dict(zip(engine.names, engine.images, strict=True))
        order = sorted(names) if layout == "flat folder" else [  # class by class, bytes order
            b"cl\xe0sse0/" + names[2], b"cl\xe0sse0/" + names[0], b"cl\xe0sse1/" + names[1]]
        for i, rel in enumerate(order):
            flipped = by_name[readable(os.fsdecode(rel))][:, ::-1]
            np.testing.assert_array_equal(batch[f"image_{i:04d}"], flipped)
    finally:
        engine.close()
