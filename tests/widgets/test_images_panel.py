"""Image sources: allowed-root restriction, bad files listed and skipped, uploads in memory."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest
from PIL import Image

from dali_gallery.pipelines.image_files import SUPPORTED_EXTENSIONS
from dali_gallery.widgets.images_panel import (
    ACCEPT,
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
    # the widget's copy of the bytes is freed; the button counts the file it loaded
    assert [(e["name"], bytes(e["content"])) for e in builder.images_panel.upload.value] == \
        [("mine.jpg", b"")]
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


def test_the_upload_dialog_offers_every_type_the_preview_reads(builder):
    """The dialog's filter left BMP out (ACCEPT less .bmp): a user's BMP, which the preview
    decodes and the README lists, could not be picked."""
    assert set(ACCEPT.split(",")) == SUPPORTED_EXTENSIONS
    assert builder.images_panel.upload.accept == ACCEPT
    buf = io.BytesIO()
    Image.open(SAMPLE_FILES[0]).convert("RGB").resize((40, 30)).save(buf, "BMP")
    browser_upload(builder.images_panel.upload, upload("scan.BMP", buf.getvalue()))
    settle(builder)
    assert builder.engine.names == ["scan.BMP"] and builder.image_problems == []


def test_upload_limits():
    items, problems = upload_items([upload("a.jpg", b"1" * 10), upload("b.jpg", b"1" * 11)],
                                   limit=10)
    assert [n for n, _ in items] == ["a.jpg"]
    assert problems[0].name == "b.jpg" and "too large" in problems[0].reason


def test_a_missing_image_folder_is_an_error_that_says_so(tmp_path: Path, monkeypatch):
    """A notebook copied elsewhere used to preview nothing and fail cells later."""
    monkeypatch.chdir(tmp_path)
    for missing in ("missing/", tmp_path / "nope", "../gallery/samples"):
        with pytest.raises(FileNotFoundError, match="no such folder or file") as info:
            make_builder(images=missing)
        assert str(missing) in str(info.value) and "samples_dir()" in str(info.value)
    b = make_builder()
    try:
        with pytest.raises(FileNotFoundError, match="'missing/': no such folder or file"):
            b.set_images("missing/")
        settle(b)
        assert b.preview.shape[0] == 3 and b.last_error is None  # the samples stay
    finally:
        b.close()


def test_missing_files_in_a_list_never_break_the_builder(tmp_path: Path):
    b = make_builder(images=[tmp_path / "nope.jpg"])
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


@pytest.fixture
def class_folder(tmp_path: Path) -> Path:
    """root/pets: three class folders of 10 images each (the allowed root is root)."""
    pets = tmp_path / "root" / "pets"
    for cls in ("cats", "dogs", "owls"):
        (pets / cls).mkdir(parents=True)
        for k in range(10):
            shutil.copy(SAMPLE_FILES[k % len(SAMPLE_FILES)], pets / cls / f"{cls}_{k:02d}.jpg")
    return pets


def test_a_class_folder_previews_every_class_and_says_how_many_files_it_has(class_folder):
    """It used to load the first 24 files, list the cap as a broken file and show only the
    first class."""
    b = make_builder(images=class_folder.parent, allowed_root=class_folder.parent, max_images=6)
    try:
        panel = b.images_panel
        assert b.open_folder("pets") == []
        settle(b)
        assert b.engine.names == ["cats/cats_00.jpg", "dogs/dogs_00.jpg", "owls/owls_00.jpg",
                                  "cats/cats_01.jpg", "dogs/dogs_01.jpg", "owls/owls_01.jpg"]
        assert b.image_problems == [] and panel.problems.value == ""
        assert "of 30 images in 3 class folders" in panel.summary.value
        assert len(panel.files.options) == 30 and panel.files_box.layout.display is None
        assert set(panel.files.value) == set(b.engine.names)
        b.set_count(3)
        settle(b)
        assert {n.split("/")[0] for n in b.last_result.names} == {"cats", "dogs", "owls"}
        # the preview is not the folder's first files: the CLI command says so
        assert "FOLDER_WITH_THE_SAME_IMAGES" in b.cli_command
        assert "chosen files of the folder" in b.export.cli.value
    finally:
        b.close()


def test_the_user_chooses_which_files_to_preview(class_folder):
    b = make_builder(images=class_folder, max_images=4)
    try:
        panel = b.images_panel
        panel.files.value = ("dogs/dogs_07.jpg", "owls/owls_03.jpg")
        panel.files_load.click()
        settle(b)
        assert b.engine.names == ["dogs/dogs_07.jpg", "owls/owls_03.jpg"]
        assert b.preview.shape[0] == 2 and b.last_error is None
        names = list(b.engine.names)
        panel.files.value = tuple(panel.files.options[k][1] for k in range(5))
        panel.files_load.click()
        assert "5 files selected; choose 1 to 4" in panel.summary.value
        panel.files.value = ()
        panel.files_load.click()
        assert "0 files selected" in panel.summary.value
        assert b.engine.names == names  # refused: the preview keeps its images
        panel.files.value = tuple(panel.files.options[k][1] for k in range(3))
        panel.files_load.click()
        settle(b)
        assert b.engine.names == ["cats/cats_00.jpg", "cats/cats_01.jpg", "cats/cats_02.jpg"]
        assert b.cli_command.split("--images ")[1].startswith(str(class_folder.resolve()))
    finally:
        b.close()


def test_a_flat_folder_larger_than_the_cap_is_counted_not_broken(tmp_path: Path):
    flat = tmp_path / "flat"
    flat.mkdir()
    for k in range(30):
        shutil.copy(SAMPLE_FILES[k % len(SAMPLE_FILES)], flat / f"img_{k:02d}.jpg")
    b = make_builder(images=flat)
    try:
        settle(b)
        assert b.image_problems == [] and b.engine.names == ["img_00.jpg", "img_01.jpg",
                                                             "img_02.jpg"]
        assert "of 30 images" in b.images_panel.summary.value
        assert b.cli_command.split("--images ")[1].startswith(str(flat.resolve()))
        # a list of files beyond the cap: the rest are said to be left out, not broken
        b.set_images(sorted(flat.iterdir()))
        settle(b)
        capped = [p for p in b.image_problems if p.over_limit]
        assert len(capped) == 1 and "only 24 images are loaded at once" in capped[0].reason
        assert "skipped" not in b.images_panel.problems.value.split("only 24")[0]
        assert "dg-error" not in b.images_panel.problems.value
    finally:
        b.close()


def test_the_upload_button_counts_the_uploaded_images(builder):
    panel = builder.images_panel
    good = SAMPLE_FILES[0].read_bytes()
    browser_upload(panel.upload, upload("a.jpg", good), upload("b.jpg", good))
    settle(builder)
    assert len(panel.upload.value) == 2  # the button reads "upload images (2)"
    assert all(bytes(e["content"]) == b"" for e in panel.upload.value)
    browser_upload(panel.upload, upload("bad.jpg", b"\xff\xd8 nope"))
    settle(builder)
    assert [e["name"] for e in panel.upload.value] == ["a.jpg", "b.jpg"]  # still shown
    panel.samples.click()
    settle(builder)
    assert panel.upload.value == ()  # "upload images (0)": the samples are shown now


def test_a_class_folder_linked_outside_the_root_is_not_listed(tree: Path):
    """A symlinked class folder leading outside the allowed root: its files' names never
    reach the page (they were listed and counted, and refused only when previewed)."""
    private = tree.parent / "outside" / "private"
    private.mkdir()
    shutil.copy(SAMPLE_FILES[0], private / "payroll_2026.jpg")
    os.symlink(private, tree / "good" / "zz_private")
    b = make_builder(images=tree / "mixed", allowed_root=tree, max_images=6)
    try:
        settle(b)
        b.open_folder("good")  # typed by the user: under the allowed root
        settle(b)
        offered = [label for label, _ in b.images_panel.files.options]
        assert offered and not [o for o in offered if "payroll" in o or "zz_private" in o]
        assert "payroll" not in b.images_panel.files_note.value
        assert not [n for n in b.engine.names if "payroll" in n]
    finally:
        b.close()


def test_a_long_or_looping_folder_name_is_refused_without_a_server_path(tree: Path):
    """A typed name longer than the file system allows made ``stat`` raise an OSError (with
    the server's absolute path) out of the folder button; a link loop is a reason too."""
    os.symlink("loop", tree / "loop")
    for text, why in [("x" * 5000, "at most 1024 are allowed"),
                      ("good/" + "y" * 300, "cannot be read"),
                      ("loop", "symbolic link loop")]:
        with pytest.raises(ValueError, match=why) as info:
            resolve_folder(text, tree)
        assert str(tree) not in str(info.value) and len(str(info.value)) < 1200
    b = make_builder(images=tree / "good", allowed_root=tree)
    try:
        settle(b)
        names = list(b.engine.names)
        b.images_panel.folder.value = "good/" + "y" * 300
        b.images_panel.folder_load.click()
        assert "cannot be read" in b.images_panel.summary.value
        assert str(tree) not in b.images_panel.summary.value and b.engine.names == names
    finally:
        b.close()
