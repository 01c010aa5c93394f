"""The labels panel's "classification | detection" pick (issue 14): detection loads the images
folder's annotations file when it has one, else shows the bundled annotated samples with their
COCO file; classification removes the labels; the pick follows labels loaded or removed in any
other way."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from dali_gallery.widgets import Builder
from dali_gallery.widgets.image_source import SAMPLE_ANNOTATIONS, SAMPLES_DIR
from dali_gallery.widgets.label_task import CLASSIFICATION, DETECTION, annotated_samples
from tests.widgets.conftest import make_builder
from tests.widgets.test_images_panel import browser_upload, upload
from tests.widgets.test_label_source import ann, coco, image_file


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    """A folder of images without any annotations file."""
    images = tmp_path / "images"
    images.mkdir()
    for name in ("a.png", "b.png"):
        image_file(images, name)
    return images


def make(images: Path, **kwargs) -> Builder:
    return make_builder(images=images, draws=1, max_images=6, sync=True, autosave=None,
                        **kwargs)


def test_detection_shows_the_annotated_samples_and_classification_removes_them(plain):
    b = make(plain)
    try:
        assert b.labels.task.value == CLASSIFICATION and b.engine.labels is None
        b.labels.task.widget.value = DETECTION  # what clicking the button does
        assert b.labels.task.value == DETECTION
        assert b.live.source.folder == SAMPLES_DIR
        assert b.renderer.names == sorted(annotated_samples())  # the annotated ones only
        assert b.renderer.labels is not None and b.labels.problems == []
        assert b.renderer.labels.origin == SAMPLE_ANNOTATIONS.name
        assert all(len(s.boxes) for s in b.engine.labels)
        assert "labels for 4 of 4 image(s)" in b.labels.summary.value
        assert b.last_error is None and b.last_result.render.labels is not None
        b.labels.task.widget.value = CLASSIFICATION
        assert b.renderer.labels is None and b.engine.labels is None
        assert b.last_result.render.labels is None
        assert b.renderer.names == sorted(annotated_samples())  # the images stay
        # detection again, on the samples: their own file, as offered in the folder
        assert b.labels.task.pick(DETECTION) == [] and b.engine.labels is not None
    finally:
        b.close()


def test_detection_loads_the_folders_own_annotations(plain):
    (plain / "instances.json").write_text(json.dumps(coco([ann(1, 1, 1, [40, 30, 80, 60])])))
    b = make(plain)
    try:
        assert b.labels.likely_found() == "instances.json"
        assert b.labels.task.pick(DETECTION) == []
        assert b.live.source.folder == plain and b.renderer.names == ["a.png", "b.png"]
        assert [len(s.boxes) for s in b.engine.labels] == [1, 0]
    finally:
        b.close()


def test_detection_loads_the_folders_yolo_labels(plain):
    """A YOLO folder (a .txt per image) used to make detection switch to the samples."""
    (plain / "a.txt").write_text("0 0.5 0.5 0.25 0.5\n1 0.2 0.2 0.1 0.1\n")
    (plain / "b.txt").write_text("")
    b = make(plain)
    try:
        assert b.labels.likely_found() == "yolo"
        assert b.labels.task.pick(DETECTION) == []
        assert b.labels.task.value == DETECTION
        assert b.live.source.folder == plain and b.renderer.names == ["a.png", "b.png"]
        assert [len(s.boxes) for s in b.engine.labels] == [2, 0]
        assert b.renderer.labels.origin == "YOLO labels"
    finally:
        b.close()


def test_the_pick_follows_labels_loaded_or_removed_otherwise(plain):
    b = make(plain)
    try:
        doc = coco([ann(1, 1, 1, [40, 30, 80, 60])])
        browser_upload(b.labels.upload_button, upload("mine.json", json.dumps(doc).encode()))
        assert b.engine.labels is not None and b.labels.task.value == DETECTION
        b.labels.clear_button.click()
        assert b.engine.labels is None and b.labels.task.value == CLASSIFICATION
        with pytest.raises(ValueError, match="task 'segmentation' is not allowed; expected "
                                             "one of"):
            b.labels.task.pick("segmentation")
    finally:
        b.close()


def test_without_bundled_samples_detection_says_what_to_do(plain):
    b = make(plain, samples=None)
    try:
        problems = b.labels.task.pick(DETECTION)
        assert problems and "no bundled samples" in problems[0].reason
        assert "upload a .json" in html.unescape(b.labels.problems_html.value)
        assert b.labels.task.value == CLASSIFICATION and b.live.source.folder == plain
    finally:
        b.close()


def test_a_served_builder_loads_the_samples_own_file_by_name(plain):
    # the samples lie outside the allowed root: they pass the check inside their own folder
    b = make(plain, allowed_root=plain.parent)
    try:
        assert b.images_panel.load_samples() == []
        assert b.labels.load_found("instances.json") == []
        assert b.engine.labels is not None and b.labels.task.value == DETECTION
    finally:
        b.close()
