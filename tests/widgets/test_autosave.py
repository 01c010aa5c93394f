"""A corrupt autosave file never stops the builder: it is reported in the toolbar, moved aside
(kept for the user) and the builder starts clean. Regression tests for issue 11 (part A):
binary content, deep nesting or a huge integer made ``Builder(autosave=...)`` raise, a FIFO
made it hang."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import pytest

from dali_gallery.pipelines.preset import load
from dali_gallery.widgets.autosave import Autosave
from tests.hostile import deadline
from tests.support import preset_dict
from tests.widgets.conftest import make_builder, settle

GOOD = preset_dict([{"op": "rotate", "params": {"angle": 12.0}}])


def deep(depth: int) -> bytes:
    return json.dumps(GOOD).replace('"angle": 12.0', '"angle": ' + "[" * depth + "]" * depth
                                    ).encode()


CORRUPT: dict[str, bytes] = {
    "binary": bytes(range(256)) * 4,
    "deep-json": deep(10_000),
    "deep-step": deep(600),
    "huge-integer": json.dumps(GOOD).replace("12.0", "1" + "0" * 400).encode(),
    "too-large": b'{"name": "' + b"x" * (2 << 20) + b'"}',
    "not-json": b"{not json",
}


def aside_files(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.corrupt-*"))


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_a_corrupt_file_is_moved_aside_and_reported(tmp_path, case):
    path = tmp_path / "autosave.json"
    path.write_bytes(CORRUPT[case])
    auto = Autosave(path)
    found = auto.restorable()
    assert found.preset is None and found.problem
    assert "cannot be restored" in found.message and "moved aside" in found.message
    assert str(tmp_path) not in found.message  # the file's name, not its folder
    (aside,) = aside_files(path)
    assert aside.read_bytes() == CORRUPT[case] and not path.exists()
    assert aside.name in found.message
    auto.armed = True  # the first edit writes a fresh, valid file
    assert auto.write(load(GOOD)) and load(path).to_dict() == load(GOOD).to_dict()


def test_a_fifo_is_moved_aside_without_being_opened(tmp_path):
    path = tmp_path / "autosave.json"
    os.mkfifo(path)
    with deadline(10):
        found = Autosave(path).restorable()
    assert found.preset is None and "a FIFO" in found.message
    (aside,) = aside_files(path)
    assert aside.is_fifo() and not os.path.lexists(path)


def test_a_directory_is_left_alone_and_autosave_is_off(tmp_path):
    path = tmp_path / "autosave.json"
    path.mkdir()
    (path / "keep.txt").write_text("mine")
    auto = Autosave(path)
    found = auto.restorable()
    assert found.problem and "is a directory" in found.message
    assert "autosave is off" in found.message
    auto.armed = True
    assert not auto.write(load(GOOD)) and auto.error == found.message
    assert (path / "keep.txt").read_text() == "mine" and aside_files(path) == []


def test_a_second_corrupt_file_in_the_same_second_gets_its_own_name(tmp_path):
    path = tmp_path / "autosave.json"
    for content in (b"\xff one", b"\xff two"):
        path.write_bytes(content)
        Autosave(path).restorable()
    assert sorted(p.read_bytes() for p in aside_files(path)) == [b"\xff one", b"\xff two"]


def test_a_valid_file_is_offered_and_left_in_place(tmp_path):
    path = tmp_path / "autosave.json"
    path.write_text(json.dumps(GOOD))
    found = Autosave(path).restorable()
    assert found.preset is not None and not found.problem and "1 step(s)" in found.message
    assert path.exists() and aside_files(path) == []


@pytest.mark.parametrize("case", ["binary", "deep-json", "deep-step", "huge-integer", "fifo"])
def test_the_builder_starts_clean_and_shows_why(tmp_path, case):
    """``Builder(autosave=...)`` raised (or hung on a FIFO) for these files."""
    path = tmp_path / "autosave.json"
    if case == "fifo":
        os.mkfifo(path)
    else:
        path.write_bytes(CORRUPT[case])
    with deadline(120):
        b = make_builder(autosave=path)
    try:
        shown = html.unescape(b.notice.value)
        assert "moved aside" in shown and "starts clean" in shown, shown
        assert "dg-error" in b.notice._dom_classes and str(tmp_path) not in shown
        assert b.preset.steps == [] and b.restore_button.layout.display == "none"
        assert len(aside_files(path)) == 1
        b.add_step("hue")
        settle(b)
        assert load(path).steps[0].op == "hue"  # autosave works again
    finally:
        b.close()
