"""YOLO folders as annotations: boxes, polygon and pose lines, class names from every source
(data.yaml read as PyYAML reads it), Ultralytics' split layout, bad lines named by file and
line, nothing read outside the dataset, and the cleaned COCO file read by DALI's own reader."""

from __future__ import annotations

import os

import numpy as np
import pytest
import yaml  # a test dependency: the truth the hand-written data.yaml reader is checked against
from hypothesis import given, settings
from hypothesis import strategies as st

from dali_gallery.pipelines.annotations import AnnotationError, dali_masks, load_coco, load_yolo
from dali_gallery.pipelines.annotations_yolo_yaml import yaml_kpt_shape, yaml_names
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


def _pyyaml_names(text: str) -> list[str]:
    """What Ultralytics makes of ``names`` (PyYAML, then str of each value by index)."""
    names = yaml.safe_load(text)["names"]
    return [str(names[k]) for k in sorted(names)] if isinstance(names, dict) else \
        [str(n) for n in names]


YAMLS = {
    "flow": "path: ../x\nnames: [cat, 'dog, brown', \"bird\"]  # three\nnc: 3\n",
    "block": "train: images\nnames:\n  - cat\n  - 'dog, brown'\n  # skipped\n  - bird\nnc: 3\n",
    "map": "names:\n  0: cat\n  1: 'dog, brown'\n  2: bird\ntrain: x\n",
    "flow map": "names: {0: cat, 1: 'dog, brown', 2: bird}\n",
    "block at the key's indent": "nc: 3\nnames:\n- cat\n- 'dog, brown'\n\n- bird\nval: v\n",
    "comments everywhere": "names: # classes\n  0: cat  # felines\n  1: 'dog, brown' # k\n"
                           "  # a note\n  2: bird   # birds\n",
    "flow over lines": "names: [\n  cat,  # one\n  'dog, brown',\n  \"bird\",\n]\nnc: 3\n",
    "flow map over lines": "names: {\n  0: cat,\n  1: \"dog, brown\", # two\n  2: bird\n}\n",
    "deeper indent": "names:\n    0: cat\n    1: \"dog, brown\"\n    2: bird\n",
    "value on the next line": "names:\n  - cat\n  -\n    'dog, brown'\n  - bird\n",
    "ultralytics file": "# Dataset\npath: ../datasets/pets # root\ntrain: images/train\n"
                        "test: # optional\n\nnames:\n  0: cat\n  1: dog, brown\n  2: bird\n\n"
                        "download: |\n  names = list(yaml['names'].values())\n  names:\n",
    "last key wins": "names: [a]\nnc: 1\nnames: [cat, 'dog, brown', bird]\n",
    "crlf": "names:\r\n  - cat\r\n  - dog, brown\r\n  - bird\r\n",
}
QUOTED = {  # names holding YAML's own characters, quoted or not, and escapes
    "names: ['a: b', \"c # d\", e#f, 'it''s', \"tab\\there\", \"caf\\u00e9\", x:y]\n":
        ["a: b", "c # d", "e#f", "it's", "tab\there", "café", "x:y"],
    "names:\n  0: 'a: b'\n  1: \"c # d\"  # e\n  2: http://x/y\n  3: traffic\n    light\n":
        ["a: b", "c # d", "http://x/y", "traffic light"],
    "names: ['long\n  name', \"two\n\n  lines\"]\n": ["long name", "two\nlines"],
}


@pytest.mark.parametrize("form", sorted(YAMLS))
def test_names_come_from_data_yaml_in_each_form(tmp_path, form):
    text = YAMLS[form]
    expected = ["cat", "dog, brown", "bird"]
    assert _pyyaml_names(text) == expected  # the form is read so by a real YAML parser
    assert yaml_names(text) == expected
    root = _folder(tmp_path, LABELS | {"data.yaml": text}, SIZES)
    ann = load_yolo(root)
    assert [c.name for c in ann.categories.values()] == expected and ann.problems == []
    assert yaml_names("nc: 3\n") is None


@pytest.mark.parametrize("text", sorted(QUOTED))
def test_quoted_names_and_yaml_characters_read_as_pyyaml_reads_them(text):
    assert yaml_names(text) == _pyyaml_names(text) == QUOTED[text]


@settings(max_examples=150, deadline=None)
@given(names=st.lists(st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp"),
                                            blacklist_characters="\x85\ufeff")
                              | st.sampled_from(["\t", "\n", " ", ":", "#"]),
                              min_size=1, max_size=12)
                      | st.sampled_from(["a: b", "#c", "- d", "[e]", "{f}", "yes", "'g'",
                                         '"h"', "i #j", "&k", "*l", "m,n", "~o", "p  q"]),
                      min_size=1, max_size=6),
       style=st.sampled_from(["flow", "block", "map", "flow map"]), width=st.sampled_from([20, 80]))
def test_names_written_by_pyyaml_read_back_the_same(names, style, width):
    """Whatever PyYAML writes (quoting, escapes, long names folded over lines), the reader
    gets the names PyYAML reads back."""
    data = dict(enumerate(names)) if "map" in style else names
    if style.startswith("flow"):
        text = "nc: 1\nnames: " + yaml.safe_dump(data, default_flow_style=True, width=width)
    else:
        text = yaml.safe_dump({"names": data}, default_flow_style=False, width=width)
    assert yaml_names(text + "train: x\n") == _pyyaml_names(text) == [str(n) for n in names]


BAD_YAMLS = {  # valid YAML or not: never guessed, refused with the line and what is allowed
    "names: person\n": "line 1: names is 'person'; names must be a list",
    "names:\nnc: 2\n": "line 1: names is empty",
    "names: []\n": "line 1: names lists no class",
    "names:\n  - a\n  -\n  - c\n": "line 3: class 1 has an empty name",
    "names:\n  person: 0\n": "line 2: 'person' is not a class index",
    "names: [a, b\nnc: 2\n": "is the list closed with ']'?",
    "names: &n [a, b]\n": "anchors, aliases, tags",
    "names:\n  - [a, b]\n": "nested lists or maps are not read",
    "names:\n  - a: b\n": "line 2: 'a: b': YAML reads ': ' as a key; quote the value",
    "names:\n  - 'a' b\n": "line 2: 'b' follows the quoted value 'a'",
    "names:\n    - a\n  - b\n": "line 3: this line is indented less",
    "names: ['a, b]\n": "has no closing '",
    'names: ["a\\qb"]\n': "\\q is not a YAML escape",
    "names: {0: cat, 2: dog}\n": "line 1: names has no class index 1 (its 2 indices go up to "
                                 "2); an index map numbers the classes 0 to 1 with no gaps",
    "names:\n  1: cat\n  2: dog\n": "names has no class index 0",
}


@pytest.mark.parametrize("text", sorted(BAD_YAMLS))
def test_data_yaml_values_not_read_are_problems_naming_the_line(tmp_path, text):
    with pytest.raises(AnnotationError, match=None) as err:
        yaml_names(text)
    assert BAD_YAMLS[text] in str(err.value)
    root = _folder(tmp_path, LABELS | {"data.yaml": text}, SIZES)
    ann = load_yolo(root)  # the labels still load, under numbered classes
    assert [c.name for c in ann.categories.values()] == ["class 0", "class 1", "class 2"]
    assert [(p.file, BAD_YAMLS[text] in p.reason) for p in ann.problems] == [("data.yaml", True)]
    assert ann.problems[0].reason.endswith("; the classes are numbered instead")


def test_a_names_map_with_gaps_is_refused_as_ultralytics_refuses_it(tmp_path):
    """Ultralytics' check_class_names raises on indices that are not 0 to n-1; filling the gap
    with a made-up name would label boxes with a class the dataset never named."""
    text = "names:\n  0: cat\n  3: dog\n  7: bird\n"
    with pytest.raises(AnnotationError) as err:
        yaml_names(text)
    assert "has no class index 1, 2, 4, 5, 6 (its 3 indices go up to 7)" in str(err.value)
    assert "0 to 2 with no gaps" in str(err.value)
    root = _folder(tmp_path, LABELS | {"data.yaml": text}, SIZES)
    [problem] = load_yolo(root).problems
    assert str(problem).startswith("data.yaml: line 1: names has no class index 1, 2, 4")
    many = "names: {0: a, 40: b}\n"
    with pytest.raises(AnnotationError, match=r"index 1, 2, .*, 10 and 29 more \(its 2"):
        yaml_names(many)


def test_kpt_shape_is_read_like_pyyaml():
    for text in ("kpt_shape: [17, 3] # k\n", "kpt_shape:\n- 17\n- 3\n"):
        assert yaml_kpt_shape(text) == tuple(yaml.safe_load(text)["kpt_shape"]) == (17, 3)
    assert yaml_kpt_shape("names: [a]\n") is None
    with pytest.raises(AnnotationError, match=r"line 1: kpt_shape must be \[keypoints, 2 or 3"):
        yaml_kpt_shape("kpt_shape: [17, 4]\n")


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


def test_the_ultralytics_split_layout_and_its_data_yaml(tmp_path):
    """ds/images/train/x.jpg has its labels in ds/labels/train/x.txt (the last images/ of its
    path replaced by labels/) and its names in ds/data.yaml; problems name the labels file
    relative to ds."""
    ds = tmp_path / "ds"
    _folder(ds / "images" / "train", {"y.txt": "1 0.5 0.5 0.2 0.2\n"},
            {"x.jpg": (30, 20), "y.jpg": (30, 20), "z.jpg": (30, 20)})
    (ds / "labels" / "train").mkdir(parents=True)
    _folder(ds / "labels" / "train", {"x.txt": "1 0.5 0.5 0.5 0.5\n7 0.5 0.5 0.1 0.1\n",
                                      "y.txt": "0 0.5 0.5 0.5 0.5\n"}, {})
    (ds / "data.yaml").write_text("path: .\ntrain: images/train\nnames:\n- person\n- car\n")
    ann = load_yolo(ds / "images" / "train")
    assert {k: c.name for k, c in ann.categories.items()} == {1: "person", 2: "car"}
    x, y, z = ann.images
    assert x.classes.tolist() == [2] and x.boxes[0].tolist() == [0.25, 0.25, 0.75, 0.75]
    assert y.classes.tolist() == [1]  # labels/ first, as Ultralytics reads only it
    assert z.boxes.shape == (0, 4)  # no label file: no boxes (a background image)
    assert [str(p) for p in ann.problems] == [
        "x.jpg: labels/train/x.txt line 2: class 7 is not one of the 2 class names (0 to 1)"]


def test_the_split_layout_stays_inside_the_allowed_root(tmp_path):
    """A served app whose allowed root is the images folder itself: its labels/ and
    data.yaml above it are outside, so they are not read (a folder without labels)."""
    ds = tmp_path / "ds"
    folder = ds / "images" / "train"
    _folder(folder, {}, {"x.jpg": (30, 20)})
    (ds / "labels" / "train").mkdir(parents=True)
    _folder(ds / "labels" / "train", {"x.txt": "0 0.5 0.5 0.5 0.5\n"}, {})
    (ds / "data.yaml").write_text("names:\n- person\n")
    assert load_yolo(folder, confine=ds).images[0].classes.tolist() == [1]
    confined = load_yolo(folder, confine=folder)
    assert confined.images[0].boxes.shape == (0, 4) and not confined.categories
    assert confined.problems[0].reason.startswith("none of its 1 images has a label file")


@pytest.mark.parametrize("split", [True, False])
def test_a_folder_none_of_whose_images_has_labels_says_so(tmp_path, split):
    folder = tmp_path / "ds" / "images" / "train"
    _folder(folder, {}, {"x.jpg": (30, 20), "y.jpg": (30, 20)})
    if split:
        (tmp_path / "ds" / "labels" / "train").mkdir(parents=True)
    ann = load_yolo(folder)
    assert [img.boxes.shape for img in ann.images] == [(0, 4), (0, 4)]
    [problem] = ann.problems
    assert problem.file == "train"
    assert problem.reason.startswith("none of its 2 images has a label file: looked for the "
                                     "image's name with .txt ")
    assert ("in labels/train/ (the images path with 'labels' for its last 'images'"
            if split else "beside each image (a dataset split into images/NAME") \
        in problem.reason
    assert str(tmp_path) not in problem.reason  # no server path in a message


def test_nothing_is_read_outside_the_dataset(tmp_path):
    """A label, classes.txt or data.yaml that links outside the folder (or, in the split
    layout, the dataset root) is refused unread; a data.yaml above the root is not looked
    for."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret 0.5 0.5 0.5 0.5\n")
    (outside / "data.yaml").write_text("names: [leaked]\n")
    (tmp_path / "data.yaml").write_text("names: [above]\n")  # above the folder: never read
    root = _folder(tmp_path / "set", {"b.txt": "0 0.5 0.5 0.5 0.5\n"},
                   {"a.jpg": (30, 20), "b.jpg": (30, 20)})
    os.symlink(outside / "secret.txt", root / "a.txt")
    os.symlink(outside / "data.yaml", root / "data.yaml")
    ann = load_yolo(root)
    assert [img.file for img in ann.images] == ["b.jpg"]  # a.jpg's labels are unknown
    assert [c.name for c in ann.categories.values()] == ["class 0"]
    assert sorted(map(str, ann.problems)) == [
        "a.jpg: a.txt leads outside the dataset folder; it was not opened",
        "data.yaml: data.yaml leads outside the dataset folder; it was not opened; it is not "
        "used"]
    assert "secret" not in repr(ann.problems) and "leaked" not in repr(ann.problems)
    ds = tmp_path / "ds"  # split layout: labels/ must resolve inside ds too
    _folder(ds / "images" / "val", {}, {"c.jpg": (30, 20)})
    (ds / "labels").mkdir()
    os.symlink(outside, ds / "labels" / "val")
    (outside / "c.txt").write_text("0 0.5 0.5 0.5 0.5\n")
    ann = load_yolo(ds / "images" / "val")
    assert ann.images == [] and [str(p) for p in ann.problems] == [
        "c.jpg: labels/val/c.txt leads outside the dataset folder; it was not opened"]


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


@pytest.mark.parametrize(("line", "why"), [
    ("0 0.5 0.5 0.2 0.2 0.9", "5 values after the class"),  # a confidence column: not a label
    ("0 0.5 0.5 0.2", "3 values after the class"),
    ("0 0.1 0.1 0.9 0.1 0.5 0.8 0.2", "7 values after the class"),
    ("0 0.5 0.5 0.2 0.2 1e9", "'1e9': a value is not a finite number"),
    ("0 0.5 0.5 0.2 two", "'two': a value is not a number"),
])
def test_only_a_box_or_a_polygon_of_3_points_or_more_is_a_line(tmp_path, line, why):
    """As Ultralytics: 4 values are a box; 6, 8 ... are a polygon; any other count is refused
    with its file, line and value."""
    root = _folder(tmp_path, {"a.txt": f"0 0.5 0.5 0.2 0.2\n{line}\n0 0.1 0.1 0.9 0.1 0.5 0.8\n"},
                   {"a.jpg": (40, 20)})
    ann = load_yolo(root)
    [problem] = ann.problems
    assert str(problem).startswith(f"a.jpg: a.txt line 2: {why}")
    assert ann.images[0].classes.tolist() == [1, 1]
    if why.endswith("class"):
        assert "a line is 'class cx cy w h' (4 values) or a polygon 'class x1 y1 x2 y2 x3 y3 " \
               "...' (an even number of values, at least 6)" in problem.reason


def test_pose_lines_carry_keypoints(tmp_path):
    """With kpt_shape in data.yaml a line is the box and K keypoints (COCO visibility with 3
    values; with 2, a negative coordinate marks an unlabelled point, as in Ultralytics)."""
    lines = ["0 0.5 0.5 0.4 0.4 0.5 0.5 2 0.25 0.75 1 0 0 0",
             "0 0.5 0.5 0.2 0.2 0.1 0.1 2",  # too few values
             "0 0.5 0.5 0.4 0.4 0.5 0.5 3 0.4 0.4 1 0 0 0",  # visibility 3
             "0 0.1 0.1 0.9 0.1 0.5 0.8 0.5 0.5 2 0.4 0.4 1"]  # a polygon is not a pose line
    root = _folder(tmp_path, {"a.txt": "\n".join(lines),
                              "data.yaml": "kpt_shape: [3, 3]\nflip_idx: [0, 2, 1]\n"
                                           "names:\n  0: person\n"}, {"a.jpg": (40, 20)})
    ann = load_yolo(root)
    assert ann.categories[1].keypoints == ("keypoint 0", "keypoint 1", "keypoint 2")
    assert [p.reason.split(":")[0] for p in ann.problems] == [f"a.txt line {n}"
                                                              for n in (2, 3, 4)]
    assert "a line of this pose dataset (kpt_shape [3, 3] in data.yaml) is 'class cx cy w h' " \
           "and 3 keypoints of 3 values: 13 values" in ann.problems[0].reason
    assert "keypoint 0: visibility 3 is not 0, 1 or 2" in ann.problems[1].reason
    [image] = ann.images
    assert image.keypoints.tolist() == [[[0.5, 0.5, 2], [0.25, 0.75, 1], [0, 0, 0]]]
    doc = ann.coco_document()["annotations"][0]
    assert doc["keypoints"] == [20.0, 10.0, 2, 10.0, 15.0, 1, 0.0, 0.0, 0]
    assert doc["num_keypoints"] == 2
    assert_matches_reader(ann, ann.write_clean(tmp_path / "clean"), root)
    (root / "data.yaml").write_text("kpt_shape: [2, 2]\nnames: [person]\n")
    (root / "a.txt").write_text("0 0.5 0.5 0.4 0.4 0.25 0.5 -1 -1\n")
    assert load_yolo(root).images[0].keypoints.tolist() == [[[0.25, 0.5, 2], [0, 0, 0]]]


def test_an_unreadable_data_yaml_is_a_problem_not_a_failure(tmp_path):
    root = _folder(tmp_path, LABELS, SIZES)
    os.mkfifo(root / "data.yaml")  # never opened for reading: it would block
    ann = load_yolo(root, ["cat", "dog", "bird"])
    assert ann.problems == [] and len(ann.images) == 3  # not a file: not looked at
    os.unlink(root / "data.yaml")
    (root / "data.yaml").write_bytes(b"names: [\xff]\n")
    ann = load_yolo(root)
    assert [str(p) for p in ann.problems] == ["data.yaml: data.yaml: not UTF-8 text; it is not "
                                              "used"]
    assert [c.name for c in ann.categories.values()] == ["class 0", "class 1", "class 2"]
