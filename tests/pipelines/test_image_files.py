"""A folder's images for the preview: the listing, the round-robin over class folders, and a
selection of files that can name nothing outside the listing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from dali_gallery.pipelines.image_collect import FolderSelection, collect
from dali_gallery.pipelines.image_files import class_of, image_listing, scan_folder, spread
from tests.support import SAMPLES

SAMPLE_FILES = sorted(SAMPLES.glob("*.jpg"))


@pytest.fixture
def classes(tmp_path: Path) -> Path:
    """data/ with three class folders of 5, 3 and 1 images, one loose image and a text file."""
    root = tmp_path / "data"
    for cls, n in (("cats", 5), ("dogs", 3), ("owls", 1)):
        (root / cls).mkdir(parents=True)
        for k in range(n):
            shutil.copy(SAMPLE_FILES[k % len(SAMPLE_FILES)], root / cls / f"{cls}_{k}.jpg")
    (root / "dogs" / "notes.txt").write_text("not an image")
    shutil.copy(SAMPLE_FILES[0], root / "loose.jpg")
    return root


def test_spread_takes_the_first_of_each_class_then_the_second(classes: Path):
    listing = image_listing(scan_folder(classes))
    assert listing[0] == "loose.jpg" and len(listing) == 10  # the text file is no image
    order = spread(listing)
    assert sorted(order) == sorted(listing)
    assert order[:4] == ["loose.jpg", "cats/cats_0.jpg", "dogs/dogs_0.jpg", "owls/owls_0.jpg"]
    assert order[4:6] == ["cats/cats_1.jpg", "dogs/dogs_1.jpg"]
    assert {class_of(r) for r in order[:4]} == {"", "cats", "dogs", "owls"}
    # file order (what readers.file reads) would show 6 of the first class first
    assert {class_of(r) for r in listing[:6]} == {"", "cats"}


def test_spread_of_a_flat_folder_is_its_file_order():
    listing = image_listing(scan_folder(SAMPLES))
    assert spread(listing) == listing == [p.name for p in SAMPLE_FILES]


def test_a_selection_loads_exactly_its_files_in_its_order(classes: Path):
    chosen = ("owls/owls_0.jpg", "cats/cats_3.jpg", "loose.jpg")
    images, problems = collect(FolderSelection(classes, chosen))
    assert [i.name for i in images] == list(chosen) and problems == []
    assert images[1].data == (classes / "cats" / "cats_3.jpg").read_bytes()


def test_a_selection_never_opens_a_name_outside_the_listing(classes: Path, tmp_path: Path):
    """The names may come from a browser: a path out of the folder, a file the reader would
    not read and a missing file are refused by name, and nothing else is read."""
    secret = tmp_path / "secret.jpg"
    shutil.copy(SAMPLE_FILES[1], secret)
    forged = ("../secret.jpg", str(secret), "dogs/notes.txt", "cats/nope.jpg", "cats/cats_0.jpg")
    images, problems = collect(FolderSelection(classes, forged), root=classes)
    assert [i.name for i in images] == ["cats/cats_0.jpg"]
    refused = {p.name for p in problems}
    assert refused == set(forged[:4])
    assert all("not an image listed in this folder" in p.reason for p in problems)
    assert not any(p.over_limit for p in problems)


def test_a_selection_outside_the_allowed_root_is_refused(classes: Path, tmp_path: Path):
    inside = tmp_path / "jail"
    inside.mkdir()
    os.symlink(classes, inside / "link")
    images, problems = collect(FolderSelection(inside / "link", ("loose.jpg",)), root=inside)
    assert images == [] and problems[0].reason == "outside the allowed folder"


def test_the_cap_is_a_limit_not_a_broken_file(classes: Path):
    images, problems = collect(classes, max_files=4)
    assert len(images) == 4
    assert len(problems) == 1 and problems[0].over_limit
    assert "only 4 images are loaded at once (6 more skipped" in problems[0].reason
