"""A folder's listing for the builder: what the preview offers, what the exported pipeline
reads, and the counts of what differs between them."""

from __future__ import annotations

from pathlib import Path

from dali_gallery.pipelines.image_collect import FolderSelection
from dali_gallery.widgets.image_source import FolderListing, ImageSource


def _files(root: Path, rels: list[str]) -> Path:
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"data")  # listing only: nothing is decoded
    return root


def test_the_listing_counts_what_the_preview_and_the_exported_pipeline_differ_on(tmp_path):
    """An image beside the class folders is offered but never trained on; a .ppm is trained on
    but cannot be offered: the description says both, with their counts."""
    root = _files(tmp_path, ["top.webp", "a/x1.jpg", "a/x2.ppm", "a/x3.jpg", "b/y1.jpg"])
    listing = FolderListing.of(root)
    assert listing.files == ("top.webp", "a/x1.jpg", "a/x3.jpg", "b/y1.jpg")
    assert listing.reader == ("a/x1.jpg", "a/x2.ppm", "a/x3.jpg", "b/y1.jpg")
    assert (listing.unread, listing.unshown) == (1, 1)
    assert listing.describe() == (
        "4 images in 2 class folders (+1 directly in the folder); 1 of them not read by the "
        "exported pipeline; 1 file it reads cannot be previewed (a type the preview does not "
        "read)")


def test_the_cli_command_is_offered_only_for_the_exported_pipeline_s_first_files(tmp_path):
    """``render --images FOLDER`` previews the reader's first files: the top-level image the
    listing puts first, or files past a .ppm, are not that."""
    root = _files(tmp_path, ["top.webp", "a/x1.jpg", "a/x2.ppm", "a/x3.jpg", "b/y1.jpg"])
    listing = FolderListing.of(root)
    assert listing.is_prefix(["a/x1.jpg"])
    assert not listing.is_prefix(["top.webp", "a/x1.jpg"])
    assert not listing.is_prefix(["a/x1.jpg", "a/x3.jpg"])
    source = ImageSource("folder", FolderSelection(root, ("top.webp",)), "data",
                         listing=listing)
    assert source.cli_path is None and "first files the exported pipeline reads" in \
        source.cli_note
    first = ImageSource("folder", FolderSelection(root, ("a/x1.jpg",)), "data", listing=listing)
    assert first.cli_path == str(root.resolve()) and first.cli_note == ""


def test_a_flat_folder_is_the_same_set_both_ways(tmp_path):
    listing = FolderListing.of(_files(tmp_path, ["b.png", "a.jpg", "notes.txt"]))
    assert listing.files == listing.reader == ("a.jpg", "b.png")
    assert listing.describe() == "2 images" and listing.is_prefix(["a.jpg", "b.png"])


def test_image_files_of_a_type_nothing_reads_are_counted_not_silent(tmp_path):
    """A .gif or .JFIF among the images was in no count: the folder said '2 images' and
    training silently left them out (a flat folder's .ppm too, which its file list skips)."""
    flat = FolderListing.of(_files(tmp_path / "flat", ["a.jpg", "b.gif", "c.JFIF", "d.ppm",
                                                       "notes.txt"]))
    assert flat.files == flat.reader == ("a.jpg",) and flat.unread_types == 3
    assert flat.describe() == ("1 image; 3 image files of a type neither the preview nor the "
                               "exported pipeline reads (e.g. .gif): training leaves them out")
    classes = FolderListing.of(_files(tmp_path / "cls", ["a/x.jpg", "a/y.gif", "b/z.ppm",
                                                         "b/w.heic"]))
    assert classes.unread_types == 2  # the .ppm is read by readers.file
