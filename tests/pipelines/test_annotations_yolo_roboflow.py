"""Roboflow's YOLO export: ``ds/data.yaml`` beside the splits, each split ``ds/SPLIT/images``
with its labels in ``ds/SPLIT/labels``. Chosen as ``ds/train/images`` or as ``ds/train``, the
labels and the class names are found, and nothing is read outside the allowed root."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.annotations import load_yolo
from dali_gallery.pipelines.annotations_yolo import YoloLayout
from tests.pipelines.annotation_reader import jpeg

DATA_YAML = """train: ../train/images
val: ../valid/images
test: ../test/images

nc: 2
names: ['cat', 'dog']

roboflow:
  workspace: someone
  project: pets
  version: 1
"""


def roboflow(tmp_path: Path) -> Path:
    """A small export: two splits, a JPEG and a PNG in train, one of them with two labels."""
    ds = tmp_path / "ds"
    jpeg(ds / "train" / "images", "x.jpg", 40, 20)
    Image.fromarray(np.full((10, 30, 3), 90, np.uint8)).save(ds / "train" / "images" / "y.png")
    jpeg(ds / "valid" / "images", "v.jpg", 16, 16)
    for split, name, text in (("train", "x.txt", "1 0.5 0.5 0.5 0.5\n0 0.25 0.25 0.1 0.1\n"),
                              ("valid", "v.txt", "0 0.5 0.5 1 1\n")):
        (ds / split / "labels").mkdir(parents=True, exist_ok=True)
        (ds / split / "labels" / name).write_text(text)
    (ds / "data.yaml").write_text(DATA_YAML)
    (ds / "README.roboflow.txt").write_text("exported from roboflow\n")
    return ds


@pytest.mark.parametrize("chosen, prefix", [("train/images", ""), ("train", "images/")])
def test_a_roboflow_split_loads_its_labels_and_the_names_of_the_dataset_root(
        tmp_path, chosen, prefix):
    ds = roboflow(tmp_path)
    ann = load_yolo(ds / chosen, confine=ds)
    assert {k: c.name for k, c in ann.categories.items()} == {1: "cat", 2: "dog"}
    assert ann.problems == []
    x, y = ann.images
    assert (x.file, y.file) == (f"{prefix}x.jpg", f"{prefix}y.png")  # as the preview lists them
    assert x.classes.tolist() == [2, 1] and (x.width, x.height) == (40, 20)
    assert x.boxes[0].tolist() == [0.25, 0.25, 0.75, 0.75]
    assert y.boxes.shape == (0, 4) and (y.width, y.height) == (30, 10)
    valid = load_yolo(ds / chosen.replace("train", "valid"))  # no confine: a trusted caller
    assert valid.images[0].classes.tolist() == [1] and valid.problems == []


def test_problems_name_the_files_relative_to_the_split(tmp_path):
    ds = roboflow(tmp_path)
    (ds / "train" / "labels" / "y.txt").write_text("5 0.5 0.5 0.2 0.2\n")
    ann = load_yolo(ds / "train", confine=ds)
    assert [str(p) for p in ann.problems] == [
        "images/y.png: labels/y.txt line 1: class 5 is not one of the 2 class names (0 to 1)"]
    (ds / "data.yaml").write_text("names: {0: cat, 2: dog}\n")
    ann = load_yolo(ds / "train" / "images", confine=ds)
    assert [p.file for p in ann.problems] == ["../data.yaml"]  # named, never a server path
    assert str(tmp_path) not in repr(ann.problems)


def test_the_names_above_the_split_are_read_only_inside_the_allowed_root(tmp_path):
    ds = roboflow(tmp_path)
    for chosen in (ds / "train", ds / "train" / "images"):
        ann = load_yolo(chosen, confine=ds / "train")  # ds/data.yaml lies above it
        assert [c.name for c in ann.categories.values()] == ["class 0", "class 1"]
        assert ann.images[0].classes.tolist() == [2, 1] and ann.problems == []
    ann = load_yolo(ds / "train" / "images", confine=ds / "train" / "images")
    assert not ann.categories and ann.problems[0].reason.startswith(
        "none of its 2 images has a label file")  # ds/train/labels lies above it too


def test_a_data_yaml_linking_outside_is_not_opened(tmp_path):
    ds = roboflow(tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.yaml").write_text("names: [leaked, secret]\n")
    (ds / "data.yaml").unlink()
    os.symlink(outside / "data.yaml", ds / "data.yaml")
    ann = load_yolo(ds / "train", confine=ds)
    assert [c.name for c in ann.categories.values()] == ["class 0", "class 1"]
    assert [str(p) for p in ann.problems] == [
        "../data.yaml: ../data.yaml leads outside the dataset folder; it was not opened; it "
        "is not used"]
    assert "leaked" not in repr(ann)


def test_only_data_yaml_is_looked_for_above_the_split_and_the_nearest_wins(tmp_path):
    """A classes.txt above the split is no part of Roboflow's layout: not read; a data.yaml
    of the split itself comes before the dataset root's."""
    ds = roboflow(tmp_path)
    (ds / "classes.txt").write_text("wrong\nnames\n")
    assert [c.name for c in load_yolo(ds / "train").categories.values()] == ["cat", "dog"]
    (ds / "train" / "data.yaml").write_text("names: [kitten, puppy]\n")
    assert [c.name for c in load_yolo(ds / "train").categories.values()] == ["kitten", "puppy"]


def test_a_folder_with_images_of_its_own_is_read_as_chosen(tmp_path):
    """ds/train holding x.jpg (flat YOLO) next to images/ and labels/ is not Roboflow's split:
    its own images and their .txt are read, as before."""
    ds = roboflow(tmp_path)
    jpeg(ds / "train", "own.jpg", 12, 12)
    (ds / "train" / "own.txt").write_text("0 0.5 0.5 0.5 0.5\n")
    layout = YoloLayout.of(ds / "train", ds)
    assert layout.labels is None and layout.prefix == ""
    assert [i.file for i in load_yolo(ds / "train", confine=ds).images] == ["own.jpg"]
