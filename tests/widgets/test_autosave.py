"""A corrupt autosave file never stops the builder: it is reported in the toolbar, moved aside
(kept for the user) and the builder starts clean. Regression tests for issue 11 (part A):
binary content, deep nesting or a huge integer made ``Builder(autosave=...)`` raise, a FIFO
made it hang. Issue 13: autosave is on by default, in a private per-user file per notebook,
and off in a Voilà page."""

from __future__ import annotations

import html
import json
import os
import stat
from pathlib import Path

import pytest

from dali_gallery.pipelines.preset import load
from dali_gallery.widgets.autosave import (
    AUTOSAVE_ENV,
    SESSION_ENV,
    Autosave,
    autosave_for,
    default_path,
)
from dali_gallery.widgets.page_ready import VOILA_ENV
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


# ---- the default: on, per user, one file per notebook, never in a Voilà page (issue 13) -------


@pytest.fixture
def user_data(tmp_path, monkeypatch) -> Path:
    """A Jupyter data dir of this test's own, with the default autosave turned back on (the
    test session turns it off) and the kernel run for a notebook, as JupyterLab does."""
    data = tmp_path / "jupyter-data"
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(data))
    monkeypatch.delenv(AUTOSAVE_ENV, raising=False)
    monkeypatch.delenv(VOILA_ENV, raising=False)
    monkeypatch.setenv(SESSION_ENV, str(tmp_path / "work" / "my augmentations.ipynb"))
    return data


def test_the_builder_autosaves_by_default_to_a_private_file_per_notebook(user_data, tmp_path,
                                                                         monkeypatch):
    b = make_builder()
    try:
        assert b.autosave is not None
        path = b.autosave.path
        assert path.parent == user_data / "dali-gallery" / "autosave"
        assert path.name.startswith("my_augmentations-") and path.suffix == ".json"
        assert not path.exists()  # nothing is written before the first edit
        b.add_step("rotate", angle=21.0)
        b.set_seed(1234)
        settle(b)
        saved = load(path)
        assert [s.op for s in saved.steps] == ["rotate"] and saved.seed == 1234
        assert saved.steps[0].params["angle"] == 21.0
        # only its owner can enter the folder or read the file
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0
    finally:
        b.close()

    again = make_builder()  # the next session of the same notebook is offered it back
    try:
        assert again.restore_button.layout.display is None
        assert "1 step(s)" in again.restore_button.description
        assert path.name in again.restore_button.tooltip  # the file's name, not its folder
        assert str(path.parent) not in again.restore_button.tooltip
        assert again.restore_autosave() and again.preset.to_dict() == saved.to_dict()
    finally:
        again.close()

    monkeypatch.setenv(SESSION_ENV, str(tmp_path / "work" / "other.ipynb"))
    other = make_builder()  # another notebook has its own file: nothing to offer
    try:
        assert other.autosave.path != path and other.restore_button.layout.display == "none"
    finally:
        other.close()


def test_no_default_autosave_in_a_voila_page(user_data, monkeypatch):
    """Every visitor of a served app runs as the same system user: a default file would be
    shared between them. An explicit path is still honoured; the environment variable is not
    (it could come from the shell of whoever started the server)."""
    monkeypatch.setenv(VOILA_ENV, "a-kernel-id")
    monkeypatch.setenv(AUTOSAVE_ENV, str(user_data / "from-the-shell.json"))
    assert default_path() is None and autosave_for(True) is None
    assert autosave_for(user_data / "chosen.json").path == user_data / "chosen.json"


@pytest.mark.parametrize("setting", [None, False])
def test_autosave_can_be_turned_off(user_data, setting):
    assert autosave_for(setting) is None


def test_the_environment_names_another_file_or_turns_it_off(user_data, tmp_path, monkeypatch):
    monkeypatch.setenv(AUTOSAVE_ENV, str(tmp_path / "mine.json"))
    assert autosave_for(True).path == tmp_path / "mine.json"
    for off in ("off", "OFF", "0", "false"):
        monkeypatch.setenv(AUTOSAVE_ENV, off)
        assert default_path() is None and autosave_for(True) is None
    monkeypatch.delenv(SESSION_ENV)
    monkeypatch.delenv(AUTOSAVE_ENV)
    assert default_path() == user_data / "dali-gallery" / "autosave" / "builder.json"


def test_a_folder_other_users_can_write_to_turns_autosave_off(user_data):
    folder = user_data / "dali-gallery" / "autosave"
    folder.mkdir(parents=True)
    folder.chmod(0o777)
    b = make_builder()
    try:
        shown = html.unescape(b.notice.value)
        assert "other users can write to" in shown and "autosave is off" in shown, shown
        assert str(user_data) not in shown
        b.add_step("hue")
        settle(b)
        assert list(folder.iterdir()) == []
    finally:
        b.close()


def test_without_jupyter_core_the_default_follows_its_linux_rule(user_data, tmp_path,
                                                                monkeypatch):
    """A builder in a plain Python process without jupyter_core (the GPU machine's bench ran
    one) still finds its default file: $JUPYTER_DATA_DIR, else $XDG_DATA_HOME/jupyter."""
    import sys

    monkeypatch.setitem(sys.modules, "jupyter_core.paths", None)  # import fails
    monkeypatch.delenv(SESSION_ENV)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jd"))
    assert default_path() == tmp_path / "jd" / "dali-gallery" / "autosave" / "builder.json"
    monkeypatch.delenv("JUPYTER_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_path() == tmp_path / "xdg" / "jupyter" / "dali-gallery" / "autosave" / \
        "builder.json"
    b = make_builder()
    try:
        assert b.autosave is not None and b.autosave.path.parent.parent.parent.name == "jupyter"
    finally:
        b.close()
