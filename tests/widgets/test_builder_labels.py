"""Labels in the builder: loaded from a COCO file, an upload or the images folder, drawn over
every tile after the chain moved them (and hidden by "show labels"), problems listed by file,
a step that cannot move labels refused on its card, the inspector's dropped boxes."""

from __future__ import annotations

import html
import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.widgets import Builder
from dali_gallery.widgets.encode import encode
from dali_gallery.widgets.label_overlay import category_colour
from dali_gallery.widgets.label_source import YOLO
from dali_gallery.widgets.labels_panel import YOLO_CHOICE
from dali_gallery.widgets.render import DISPLAY_MAX
from tests.gallery.test_app import widget_texts
from tests.widgets.conftest import make_builder
from tests.widgets.test_images_panel import browser_upload, upload
from tests.widgets.test_label_source import ann, coco, image_file

THING, CORNER = 1, 2


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    images = tmp_path / "images"
    images.mkdir()
    for name in ("a.png", "b.png", "c.png"):
        image_file(images, name)
    doc = coco([ann(1, 1, THING, [40, 30, 75, 60]), ann(2, 1, CORNER, [0, 0, 20, 20]),
                ann(3, 2, THING, [40, 30, 80, 60])])
    (images / "instances.json").write_text(json.dumps(doc))
    return images


def make(folder: Path, **kwargs) -> Builder:
    return make_builder(images=folder, draws=1, max_images=3, sync=True, autosave=None,
                        **kwargs)


@pytest.fixture
def builder(folder: Path):
    b = make(folder, annotations=folder / "instances.json")
    yield b
    b.close()


def pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def coloured(tile: np.ndarray, category: int) -> np.ndarray:
    """Where the tile has a category's colour (JPEG's tolerance): gray images never do."""
    return np.abs(tile - np.array(category_colour(category))).max(axis=2) < 60


def test_tiles_show_the_moved_boxes_and_the_toggle_hides_them(builder):
    assert "labels for 2 of 3 image(s)" in builder.labels.summary.value
    assert "thing" in builder.labels.legend.value and builder.labels.problems == []
    builder.add_step("rotate", angle=30.0)
    assert builder.last_error is None
    render = builder.last_result.render
    moved = render.labels[0].labels  # draw 0 of a.png
    assert moved.classes.tolist() == [THING, CORNER]
    tile = pixels(builder.tile_bytes(0, 0))
    h, w = tile.shape[:2]
    left, top, right, bottom = (moved.boxes[0] * [w, h, w, h]).round().astype(int)
    thing = coloured(tile, THING)
    # the moved box's sides are drawn in the category's colour (right half: no caption there)
    middle = slice((left + right) // 2, right - 4)
    assert thing[top:top + 2, middle].any(axis=0).mean() > 0.8
    assert thing[top + 4:bottom - 4, right - 2:right].any(axis=1).mean() > 0.8
    unmoved = round(30 / 120 * h)  # where its top was before the rotation: nothing drawn
    assert top < unmoved - 6 and not thing[unmoved - 1:unmoved + 2, middle].any()
    # the original column shows the input boxes
    assert coloured(pixels(bytes(builder.preview.originals[0].value)), THING).any()
    builder.labels.show.value = False  # "show labels" off: the plain render, as without labels
    plain = builder.tile_bytes(0, 0)
    assert not coloured(pixels(plain), THING).any()
    assert plain == encode(render.tile(0, 0), "jpeg", DISPLAY_MAX)
    assert not coloured(pixels(bytes(builder.preview.originals[0].value)), THING).any()
    builder.labels.set_show(True)
    assert builder.labels.show.value and coloured(pixels(builder.tile_bytes(0, 0)), THING).any()


def test_an_upload_with_a_bad_annotation_lists_it_and_keeps_the_rest(folder):
    b = make(folder)
    try:
        assert b.engine.labels is None and "no labels loaded" in b.labels.summary.value
        doc = coco([ann(1, 1, THING, [40, 30, 80, 60]), ann(2, 1, THING, [10, 10, -5, 20]),
                    ann(3, 2, CORNER, [10, 10, 20, 20])])
        browser_upload(b.labels.upload_button, upload("mine.json", json.dumps(doc).encode()))
        shown = html.unescape(b.labels.problems_html.value)
        assert "1 annotation problem(s)" in shown and "a.png: annotation 2" in shown
        assert "labels for 2 of 3 image(s)" in b.labels.summary.value
        assert [len(s.boxes) for s in b.engine.labels] == [1, 1, 0]
        assert b.labels.upload_button.value == ()  # the bytes are not kept in the widget
        # a document that cannot be used: said, and the labels stay as they were
        browser_upload(b.labels.upload_button, upload("x.json", str(folder).encode()))
        shown = html.unescape(b.labels.problems_html.value)
        assert "could not load the labels; the labels were not changed" in shown
        assert str(folder) not in shown.replace("x.json", "")
        assert [len(s.boxes) for s in b.engine.labels] == [1, 1, 0]
        # the annotations file of the images folder is offered by name
        assert ("instances.json", "instances.json") in b.labels.found.options
        b.labels.load_found("instances.json")
        assert b.labels.problems == [] and [len(s.boxes) for s in b.engine.labels] == [2, 1, 0]
        b.labels.clear()
        assert b.engine.labels is None and b.last_error is None
    finally:
        b.close()


def test_a_step_that_cannot_move_labels_is_refused_on_its_card_and_kept(builder):
    builder.add_step("hue", hue=20.0)
    good = builder.tile_bytes(0, 0)
    builder.add_step("water")
    card = builder.cards[1]
    assert "cannot be used with labels" in card.error_text
    assert "dg-step-card-error" in card.widget._dom_classes
    assert [s.op for s in builder.preset.steps] == ["hue", "water"]
    assert builder.tile_bytes(0, 0) == good  # the last good preview stays
    builder.labels.clear()  # without labels it renders
    assert builder.last_error is None and "dg-step-card-error" not in card.widget._dom_classes


def test_inspector_names_the_box_a_crop_dropped(builder):
    # a.png is decoded to 128 x 96: "thing" spans x 32..92; a 38 px wide window at the left
    # keeps 10 % of it (below the 25 % threshold: dropped); "corner" stays whole
    builder.add_step("crop", crop_w=38.0, crop_h=96.0, crop_pos_x=0.0, crop_pos_y=0.0)
    assert builder.last_error is None
    builder.preview.captions[0][0].click()
    text = html.unescape(builder.inspector.labels.value)
    assert "step 0 (crop): dropped 1 box (thing, kept 10 % of its area)" in text, text
    assert "dropped at step 0 (crop)" in text and "whole" in text
    assert builder.last_result.render.labels[0].labels.classes.tolist() == [CORNER]
    # a lower threshold keeps it, clipped (dashed on the tile)
    builder.labels.min_kept.value = 0.05
    assert builder.engine.min_kept == 0.05
    builder.inspect(0, 0)
    text = html.unescape(builder.inspector.labels.value)
    assert "clipped 1 box (thing, kept 10 % of its area)" in text, text
    assert builder.last_result.render.labels[0].labels.classes.tolist() == [THING, CORNER]
    with pytest.raises(ValueError, match="from 0.01 to 1.0"):
        builder.labels.set_min_kept(0.0)


def test_distribution_counts_the_boxes_each_step_drops(builder):
    builder.add_step("crop", crop_w=38.0, crop_h=96.0, crop_pos_x={"uniform": [0.0, 1.0]},
                     crop_pos_y=0.0)
    builder.distribution.sync = True
    assert builder.distribution.run(60)
    result = builder.distribution.result
    assert result is not None and result.boxes == {(0, None): 120}  # 2 boxes x 60 draws
    assert 0 < result.dropped[(0, None)] < 120
    assert "boxes dropped" in builder.distribution.dropped.value


def test_distribution_drops_the_boxes_the_preview_drops_for_the_same_draws(builder):
    # crop's window is in pixels: on a 64 px thumbnail a 38 px window keeps more of each box
    # than on the 128 x 96 image the preview renders (22 dropped against 28 for these draws)
    builder.add_step("crop", crop_w=38.0, crop_h=96.0, crop_pos_x={"uniform": [0.0, 1.0]},
                     crop_pos_y=0.0)
    builder.distribution.sync = True
    assert builder.distribution.run(25)
    result = builder.distribution.result
    assert result is not None and result.batches == 1
    render = builder.engine.render(builder.preset, draws=25, images=[0])  # the same draws
    assert [r.values for r in render.records] == [r.values for r in result.records]
    dropped = sum(out.dropped(builder.engine.min_kept)[(0, None)] for out in render.labels)
    assert result.dropped[(0, None)] == dropped
    assert not result.shrunk and result.side == 128
    assert "the image at 128 px" in builder.distribution.status.value


def test_with_the_training_output_shown_the_inspector_names_the_boxes_its_crop_dropped(builder):
    """The tail moves the labels (its centre crop reports its drops), but with "show training
    output" on the inspector showed no labels and the tiles had none drawn."""
    from dali_gallery.widgets.builder_layout import _show_tail

    builder.add_step("hue", hue=10.0)
    builder.model.set_output({"resize_shorter": None, "crop": [60, 40], "mean": [0.5] * 3,
                              "std": [0.2] * 3, "layout": "CHW", "dtype": "float32",
                              "mirror_probability": 0.0})
    _show_tail(builder, True)
    assert builder.last_error is None
    tile = builder.last_result.render.tile(0, 0)
    assert tile.shape == (3, 60, 40)  # CHW float: the labels are drawn on it all the same
    assert (-1, None) in builder.last_result.render.labels[0].kept
    builder.inspect(0, 0)
    text = html.unescape(builder.inspector.labels.value)
    assert "training output (centre crop): dropped 1 box (corner" in text, text
    assert "after (px of 40×60)" in text and "dropped at training output (centre crop)" in text
    assert coloured(pixels(builder.tile_bytes(0, 0)), THING).any()


def test_bad_annotations_argument_is_named_before_anything_starts(folder):
    with pytest.raises(FileNotFoundError, match="annotations='nope.json'"):
        make(folder, annotations="nope.json")
    with pytest.raises(TypeError, match="annotations=int"):
        make(folder, annotations=3)


def test_a_served_builder_offers_the_folders_files_by_name_and_names_no_server_path(folder):
    root = folder.parent
    outside = root.parent / f"{root.name}-outside"
    outside.mkdir()
    (outside / "secret.json").write_text("{}")
    (folder / "link.json").symlink_to(outside / "secret.json")
    b = make(folder, allowed_root=root)
    try:
        assert [v for _, v in b.labels.found.options] == ["instances.json", "link.json"]
        problems = b.labels.load_found("link.json")
        assert "leads outside the allowed root" in problems[0].reason and b.engine.labels is None
        assert b.labels.load_found("typed/../path.json") == []  # only offered names load
        assert b.labels.load_found("instances.json") == []
        assert [len(s.boxes) for s in b.engine.labels] == [2, 1, 0]
        texts = " ".join(widget_texts(b.labels.widget))
        assert str(root) not in texts and str(outside) not in texts
    finally:
        b.close()


def test_labels_of_a_folder_leave_with_its_images(builder, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    image_file(other, "a.png")  # same name, another folder: not its labels
    builder.set_images(other)
    assert builder.engine.labels is None and builder.labels.source is None
    assert "belong to the images of another folder" in builder.labels.summary.value
    assert builder.last_error is None


def test_the_export_reads_the_annotations_and_drops_boxes_as_the_preview_does(builder):
    builder.add_step("rotate", angle=10.0)
    builder.labels.set_min_kept(0.4)
    assert builder.model.preset.output is not None  # the tail moves the labels too
    code = builder.code
    assert "def finish(images, labels, seed=SEED)" in code
    assert "fn.readers.coco(" in code and "def create_pipeline(" in code
    assert "_move_labels(" in code and "less than 0.4 of its area" in code  # the preview's
    builder.add_step("water")  # cannot move labels: the export says why instead of code
    with pytest.raises(ValueError, match="water"):
        _ = builder.code
    builder.labels.clear()
    assert "fn.readers.file(" in builder.code  # no annotations: the images-only module


def test_yolo_labels_in_the_split_layout_are_offered_inside_the_allowed_root(tmp_path):
    """ds/images/train with its labels in ds/labels/train (Ultralytics' layout): offered and
    loaded when the allowed root holds ds, neither when it is the images folder itself."""
    ds = tmp_path / "ds"
    images = ds / "images" / "train"
    images.mkdir(parents=True)
    for name in ("a.png", "b.png"):
        image_file(images, name)
    labels = ds / "labels" / "train"
    labels.mkdir(parents=True)
    (labels / "a.txt").write_text("0 0.5 0.5 0.4 0.4\n")
    b = make(images, allowed_root=ds)
    try:
        assert (YOLO_CHOICE, YOLO) in b.labels.found.options
        assert b.labels.load_found(YOLO) == []
        assert [len(s.boxes) for s in b.engine.labels] == [1, 0]
    finally:
        b.close()
    b = make(images, allowed_root=images)
    try:
        assert (YOLO_CHOICE, YOLO) not in b.labels.found.options
    finally:
        b.close()


@pytest.mark.parametrize("chosen", ["train", "train/images"])
def test_yolo_labels_of_a_roboflow_export_are_offered_with_the_names_of_its_data_yaml(
        tmp_path, chosen):
    """Roboflow keeps ds/data.yaml beside ds/train/images and ds/train/labels: the images
    chosen as ds/train (listed as images/a.png) or ds/train/images get their labels and the
    class names; with the allowed root at ds/train, data.yaml above it is not read."""
    ds = tmp_path / "ds"
    images = ds / "train" / "images"
    images.mkdir(parents=True)
    for name in ("a.png", "b.png"):
        image_file(images, name)
    (ds / "train" / "labels").mkdir()
    (ds / "train" / "labels" / "a.txt").write_text("1 0.5 0.5 0.4 0.4\n")
    (ds / "data.yaml").write_text("train: ../train/images\nnc: 2\nnames: ['cat', 'dog']\n")
    for root, legend in ((ds, "dog"), (ds / "train", "class 1")):
        b = make(ds / chosen, allowed_root=root)
        try:
            assert (YOLO_CHOICE, YOLO) in b.labels.found.options
            assert b.labels.load_found(YOLO) == []
            assert [len(s.boxes) for s in b.engine.labels] == [1, 0]
            assert "labels for 2 of 2 image(s)" in b.labels.summary.value
            assert legend in b.labels.legend.value
        finally:
            b.close()


def test_the_export_tab_follows_the_labels_and_the_view(builder):
    """The Export tab shows what the preview shows once idle: after a new drop threshold,
    removing the labels and loading them again, and after the draws, image count or size
    change (its command reproduces the grid); it kept the old module until the next edit."""
    builder.add_step("rotate", angle=10.0)
    assert builder.wait_idle(60) and builder.export.text == builder.code
    builder.labels.min_kept.value = 0.37
    assert builder.wait_idle(60)
    assert "less than 0.37 of its area" in builder.export.text
    builder.labels.clear()
    assert builder.wait_idle(60) and "fn.readers.file(" in builder.export.text
    builder.labels.load(builder.labels.images_folder() / "instances.json")
    assert builder.wait_idle(60) and "fn.readers.coco(" in builder.export.text
    builder.preview.draws.value = 1
    builder.preview.count.value = 2
    assert builder.wait_idle(60)
    assert builder.export.cli_text == builder.cli_command
    assert "--draws 1" in builder.export.cli_text and "--batch-size 2" in builder.export.cli_text
