"""Image sources: allowed-root restriction, bad files listed and skipped, uploads in memory."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dali_gallery.widgets.images_panel import (
    UPLOAD_LIMIT,
    list_folders,
    resolve_folder,
    upload_items,
)
from tests.support import SAMPLES
from tests.widgets.conftest import make_builder, settle

SAMPLE_FILES = sorted(SAMPLES.glob("*.jpg"))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """root/ (the allowed root) and outside/ next to it."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "good").mkdir(parents=True)
    (root / "mixed").mkdir()
    outside.mkdir()
    for f in SAMPLE_FILES[:2]:
        shutil.copy(f, root / "good" / f.name)
        shutil.copy(f, root / "mixed" / f.name)
    data = SAMPLE_FILES[2].read_bytes()
    (root / "mixed" / "truncated.jpg").write_bytes(data[: len(data) // 3])
    (root / "mixed" / "broken.png").write_bytes(os.urandom(2000))
    (root / "mixed" / "empty.jpg").write_bytes(b"")
    shutil.copy(SAMPLE_FILES[3], outside / "secret.jpg")
    os.symlink(outside / "secret.jpg", root / "mixed" / "escape.jpg")
    os.symlink(outside, root / "link_out")
    return root


def test_folder_paths_are_refused_outside_the_root(tree: Path):
    assert resolve_folder("good", tree) == tree / "good"
    assert resolve_folder(" good/ ", tree) == tree / "good"
    for text, why in [(str(tree / "good"), "absolute paths are not allowed"),
                      ("/etc", "absolute paths are not allowed"),
                      ("~", "absolute paths are not allowed"),
                      ("../outside", "'..' is not allowed"),
                      ("good/../../outside", "'..' is not allowed"),
                      ("link_out", "leads outside the allowed root"),
                      ("missing", "does not exist"),
                      ("good/" + SAMPLE_FILES[0].name, "is not a folder"),
                      ("", "enter a folder")]:
        with pytest.raises(ValueError, match=why):
            resolve_folder(text, tree)


def test_folder_suggestions_stay_inside_the_root(tree: Path):
    assert list_folders(tree) == ["good", "mixed"]


def test_builder_refuses_escapes_and_keeps_its_images(tree: Path):
    b = make_builder(images=tree / "good", allowed_root=tree)
    try:
        settle(b)
        names = list(b.engine.names)
        for text in ("../outside", "/etc", "link_out"):
            problems = b.open_folder(text)
            assert problems and b.engine.names == names
            assert "dg-error" in b.images_panel.summary.value
        b.images_panel.folder.value = "link_out"
        b.images_panel.folder_load.click()
        assert "leads outside the allowed root" in b.images_panel.summary.value
        assert b.engine.names == names
    finally:
        b.close()


def test_bad_files_are_listed_with_reasons_and_the_rest_render(tree: Path):
    b = make_builder(images=tree / "good", allowed_root=tree, max_images=6)
    try:
        settle(b)
        b.images_panel.folder.value = "mixed"
        b.images_panel.folder_load.click()
        settle(b)
        assert sorted(b.engine.names) == sorted(f.name for f in SAMPLE_FILES[:2])
        reasons = {p.name: p.reason for p in b.image_problems}
        assert "outside the allowed folder" in reasons["escape.jpg"]
        assert "empty" in reasons["empty.jpg"]
        assert "decod" in reasons["broken.png"] or "format" in reasons["broken.png"]
        assert "truncated.jpg" in reasons
        html = b.images_panel.problems.value
        assert "dg-image-problems" in b.images_panel.problems._dom_classes
        assert all(name in html for name in reasons) and "4 file(s) skipped" in html
        assert b.preview.shape[0] == 2 and b.last_error is None
        # named relative to the allowed root: a served page never shows a server path
        assert b.cli_command.split("--images ")[1].startswith("mixed ")
        assert str(tree) not in b.cli_command
    finally:
        b.close()


def upload(name: str, data: bytes) -> dict:
    """A file as the browser's FileUpload view sends it (last_modified in ms)."""
    return {"name": name, "type": "", "size": len(data), "content": memoryview(data),
            "last_modified": 1_700_000_000_000}


def browser_upload(widget, *files: dict) -> None:
    """What a comm update from the browser does: set_state through the deserializer."""
    widget.set_state({"value": list(files)})


def test_uploads_bad_ones_listed_and_skipped(builder):
    good = SAMPLE_FILES[4].read_bytes()
    browser_upload(
        builder.images_panel.upload,
        upload("mine.jpg", good),
        upload("broken.jpg", b"\xff\xd8\xff\xe0 not really a jpeg"),
        upload("notes.txt", b"hello"),
        upload("huge.png", b"\x89PNG" + bytes(UPLOAD_LIMIT)),
    )
    settle(builder)
    assert builder.engine.names == ["mine.jpg"]
    assert builder.images_panel.upload.value == ()  # the widget's copy is freed
    reasons = {p.name: p.reason for p in builder.image_problems}
    assert set(reasons) == {"broken.jpg", "notes.txt", "huge.png"}
    assert "too large" in reasons["huge.png"] and "unsupported" in reasons["notes.txt"]
    assert builder.preview.shape[0] == 1
    assert "FOLDER_WITH_THE_SAME_IMAGES" in builder.cli_command


def test_an_upload_with_no_usable_file_keeps_the_previous_images(builder):
    names = list(builder.engine.names)
    browser_upload(builder.images_panel.upload, upload("bad.jpg", b"\xff\xd8 nope"))
    settle(builder)
    assert builder.engine.names == names
    assert "previous images are kept" in builder.images_panel.summary.value


def test_upload_limits():
    items, problems = upload_items([upload("a.jpg", b"1" * 10), upload("b.jpg", b"1" * 11)],
                                   limit=10)
    assert [n for n, _ in items] == ["a.jpg"]
    assert problems[0].name == "b.jpg" and "too large" in problems[0].reason


def test_a_missing_image_folder_never_breaks_the_builder(tmp_path: Path):
    b = make_builder(images=tmp_path / "nope")
    try:
        assert b.image_problems and "not found" in b.image_problems[0].reason
        assert "no images loaded" in b.status.value
        b.add_step("rotate", angle=5.0)  # editing works without images
        assert b.wait_idle(10) and b.last_result is None
        assert b.set_images(SAMPLES) == []
        settle(b)
        assert b.preview.shape == (3, 2) and b.last_error is None
    finally:
        b.close()


def test_uploaded_names_are_shown_escaped():
    """A browser picks the name: a line break or escape sequence must not forge the list."""
    items, problems = upload_items([upload("ok\n.jpg", b"1"), upload("\x1b[2Jbig.jpg", b"11")],
                                   limit=1)
    assert [n for n, _ in items] == ["ok\\n.jpg"]
    assert problems[0].name == "\\x1b[2Jbig.jpg"
