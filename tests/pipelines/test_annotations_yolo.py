"""YOLO folders as annotations: boxes, polygon lines, class names from every source, bad lines
named by file and line, and the cleaned COCO file read by DALI's own reader."""

from __future__ import annotations

import os

import numpy as np
import pytest

from dali_gallery.pipelines.annotations import AnnotationError, dali_masks, load_coco, load_yolo
from dali_gallery.pipelines.annotations_yolo import yaml_names
from tests.pipelines.annotation_reader import assert_matches_reader, jpeg


def _folder(root, labels: dict[str, str], sizes: dict[str, tuple[int, int]]):
    for name, (w, h) in sizes.items():
        jpeg(root, name, w, h)
    for name, text in labels.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


SIZES = {"a.jpg": (37, 29), "b.jpg": (50, 41), "c.jpg": (23, 17)}
LABELS = {"a.txt": "0 0.5 0.5 0.4 0.3\n\n# a comment\n2 0.25 0.75 0.1 0.2\n",
          "b.txt": "1 0.1 0.1 0.9 0.1 0.5 0.8\n"}


def test_boxes_polygons_and_an_image_without_labels_match_the_reader(tmp_path):
    root = _folder(tmp_path / "set", LABELS, SIZES)
    ann = load_yolo(root, ["cat", "dog", "bird"])
    assert ann.source == "yolo" and ann.problems == []
    assert {k: c.name for k, c in ann.categories.items()} == {1: "cat", 2: "dog", 3: "bird"}
    a, b, c = ann.images
    assert (a.file, a.width, a.height, a.image_id) == ("a.jpg", 37, 29, 1)
    assert a.classes.tolist() == [1, 3] and not a.has_masks
    assert a.boxes[0].tolist() == pytest.approx([0.3, 0.35, 0.7, 0.65], abs=1e-6)
    assert b.classes.tolist() == [2] and b.has_masks
    assert b.boxes[0].tolist() == pytest.approx([0.1, 0.1, 0.9, 0.8], abs=1e-6)
    assert c.boxes.shape == (0, 4) and (c.width, c.height) == (23, 17)
    doc = ann.coco_document()
    assert doc["annotations"][2]["segmentation"] == [[5.0, 4.1000000000000005, 45.0,
                                                      4.1000000000000005, 25.0, 32.800000000000004]]
    clean = ann.write_clean(tmp_path / "clean")
    assert_matches_reader(ann, clean, root, pixelwise=True)
    again = load_coco(clean, root)  # the cleaned file is a valid COCO file
    assert again.problems == [] and [i.file for i in again.images] == ["a.jpg", "b.jpg", "c.jpg"]
    mask = dali_masks(clean, root, ["b.jpg"])["b.jpg"][..., 0]
    ys, xs = np.nonzero(mask)
    assert set(np.unique(mask)) == {0, 2}
    assert abs(xs.min() - 5) <= 1 and abs(xs.max() + 1 - 45) <= 1
    assert abs(ys.min() - 4.1) <= 1 and abs(ys.max() + 1 - 32.8) <= 1


def test_without_names_classes_are_numbered_from_zero(tmp_path):
    root = _folder(tmp_path, LABELS, SIZES)
    ann = load_yolo(root)
    assert {k: c.name for k, c in ann.categories.items()} == {1: "class 0", 2: "class 1",
                                                              3: "class 2"}
    assert ann.images[0].classes.tolist() == [1, 3]


def test_names_come_from_classes_txt(tmp_path):
    root = _folder(tmp_path, LABELS | {"classes.txt": "cat\ndog\n\nbird\n"}, SIZES)
    assert [c.name for c in load_yolo(root).categories.values()] == ["cat", "dog", "bird"]


YAMLS = {
    "flow": "path: ../x\nnames: [cat, 'dog, brown', \"bird\"]  # three\nnc: 3\n",
    "block": "train: images\nnames:\n  - cat\n  - 'dog, brown'\n  # skipped\n  - bird\nnc: 3\n",
    "map": "names:\n  0: cat\n  1: 'dog, brown'\n  2: bird\ntrain: x\n",
    "flow map": "names: {0: cat, 1: 'dog, brown', 2: bird}\n",
}


@pytest.mark.parametrize("form", sorted(YAMLS))
def test_names_come_from_data_yaml_in_each_form(tmp_path, form):
    text = YAMLS[form]
    expected = ["cat", "dog, brown", "bird"]
    assert yaml_names(text) == expected
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:  # the same reading as a real YAML parser
        names = yaml.safe_load(text)["names"]
        assert (list(names.values()) if isinstance(names, dict) else names) == expected
    root = _folder(tmp_path, LABELS | {"data.yaml": text}, SIZES)
    assert [c.name for c in load_yolo(root).categories.values()] == expected
    assert yaml_names("nc: 3\n") is None


def test_bad_lines_are_problems_naming_the_file_and_line(tmp_path):
    lines = ["0 0.5 0.5 0.2 0.2", "5 0.5 0.5 0.1 0.1", "0 0.5 0.5 0.1", "0 a b c d",
             "x 0.5 0.5 0.1 0.1", "0 nan 0.5 0.1 0.1", "0 0.5 0.5 0.1 0.1 0.2",
             "1 0.9 0.5 0.4 0.2", "²  0.5 0.5 0.1 0.1", "1 0.5 0.5 0.1 0.1"]
    root = _folder(tmp_path, {"a.txt": "\n".join(lines)}, {"a.jpg": (40, 20)})
    ann = load_yolo(root, ["cat", "dog"])
    assert all(p.file == "a.jpg" for p in ann.problems)
    reasons = [p.reason for p in ann.problems]
    assert [r.split(":")[0] for r in reasons] == [f"a.txt line {n}" for n in (2, 3, 4, 5, 6, 7,
                                                                              9, 8)]
    assert "not one of the 2 class names" in reasons[0]
    assert "a line is 'class cx cy w h'" in reasons[1]
    assert "not a number" in reasons[2] and "not a class index" in reasons[3]
    assert "finite" in reasons[4] and "5 values" in reasons[5]
    assert "outside the 40x20 image" in reasons[7]  # checked like a COCO box
    assert ann.images[0].classes.tolist() == [1, 2]


def test_the_ultralytics_images_and_labels_layout(tmp_path):
    _folder(tmp_path / "images", {}, {"x.jpg": (30, 20)})
    (tmp_path / "labels").mkdir()
    (tmp_path / "labels" / "x.txt").write_text("0 0.5 0.5 0.5 0.5\n")
    ann = load_yolo(tmp_path / "images", ["thing"])
    assert ann.images[0].classes.tolist() == [1]


def test_unreadable_images_and_labels_are_problems(tmp_path):
    root = _folder(tmp_path, {}, {"a.jpg": (30, 20), "b.jpg": (8, 8)})
    (root / "broken.jpg").write_bytes(b"not an image at all")
    jpeg(root, "c.jpg", 5, 5)
    (root / "b.txt").mkdir()
    os.mkfifo(root / "a.txt")  # never opened for reading: it would block
    (root / "notes.md").write_text("ignored")
    ann = load_yolo(root)
    assert [img.file for img in ann.images] == ["c.jpg"]  # labels unknown: images left out
    problems = {p.file: p.reason for p in ann.problems}
    assert "size cannot be read" in problems["broken.jpg"]
    assert problems["a.jpg"] == "a.txt is a FIFO (named pipe), not a regular file"
    assert problems["b.jpg"] == "b.txt is a directory, not a regular file"
    with pytest.raises(AnnotationError, match="not a folder"):
        load_yolo(root / "a.jpg")
    with pytest.raises(AnnotationError, match="names must be a sequence"):
        load_yolo(root, "cat")


def test_edges_within_half_a_pixel_outside_are_put_on_the_border(tmp_path):
    lines = "0 0.5 0.5 1.00001 0.2\n0 0.05 0.5 0.1000001 0.2\n0 0.5 0.5 0.2 0.2 0.1\n" \
            "0 -0.00001 0 1.00001 0 0.5 1.00001\n"
    root = _folder(tmp_path, {"a.txt": lines}, {"a.jpg": (40, 20)})
    ann = load_yolo(root)
    boxes = [a["bbox"] for a in ann.coco_document()["annotations"]]
    assert boxes[0][0] == 0 and boxes[0][2] == 40
    assert boxes[1][0] == 0
    assert boxes[2] == [0.0, 0.0, 40.0, 20.0]  # a polygon's box, snapped likewise
    assert [p.reason.split(":")[0] for p in ann.problems] == ["a.txt line 3"]
