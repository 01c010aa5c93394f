"""The gallery on annotated images (issue 14): every row moves the labels with its pixels and
draws them with the builder's drawing code, an operator that cannot move labels says why on its
card, "show labels" draws the cards again without rendering, and without labels the tiles are
byte for byte what they were. In the app the gallery draws the builder's own labels, and the
"detection" pick shows the bundled annotated samples in both tabs.

Real DALI renders (CPU) of the bundled samples at 128 px with their hand-drawn COCO file.
"""

from __future__ import annotations

import io
import shutil

import numpy as np
import pytest
from PIL import Image

from dali_gallery.gallery.app import App
from dali_gallery.gallery.row import GAP_PX
from dali_gallery.gallery.view import GalleryView
from dali_gallery.pipelines.image_collect import FolderSelection
from dali_gallery.widgets.image_source import SAMPLE_ANNOTATIONS
from dali_gallery.widgets.label_overlay import box_pixels, category_colour
from dali_gallery.widgets.label_source import from_path
from dali_gallery.widgets.label_task import CLASSIFICATION, DETECTION, annotated_samples
from tests.support import SAMPLES

pytestmark = pytest.mark.timeout(300)

IMAGES = ("cat.jpg", "coffee.jpg")
NOSE = 3
"""The cat's nose: a small box at the bottom of cat.jpg, blue where the photo has no blue."""
MOVING, PIXEL, REFUSED = "flip", "hue", "auto_aug.rotate"
VERTICAL = 1
"""flip's column ``horizontal=False, vertical=True`` (card column 2: 0 is the originals)."""


def decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(bytes(data))).convert("RGB")).astype(int)


def render(view: GalleryView, *terms: str) -> None:
    """Render the rows a search for each term finds (rows stay valid across searches)."""
    for term in terms:
        view.search.value = term
        assert view.wait_idle(120), view.status.value


def shown_tile(view: GalleryView, op: str, column: int, image: int) -> np.ndarray:
    """Image ``image`` of card column ``column`` (0: the originals) as the page shows it: cut
    out of the column's JPEG strip (tiles are centred in a shared cell; at 128 px the strip
    is sent unscaled)."""
    row = view.row(op)
    strip = decode(row.images[column].value)
    h, w = row.strips.cell
    assert strip.shape[1] == w, "the strip was scaled"
    tile = row.originals[image] if column == 0 else row.result.tiles[column - 1][image]
    th, tw = tile.shape[:2]
    y, x = image * (h + GAP_PX) + (h - th) // 2, (w - tw) // 2
    return strip[y:y + th, x:x + tw]


def bottom_edge(tile: np.ndarray, box: np.ndarray, category: int) -> float:
    """The fraction of the middle half of ``box``'s bottom side drawn in the category's colour
    (JPEG's tolerance; the caption sits at the top left, so the bottom is the box alone)."""
    x0, _, x1, y1 = box_pixels(box, *tile.shape[:2])
    quarter = (x1 - x0) // 4
    edge = tile[y1 - 1:y1 + 1, x0 + quarter:x1 - quarter + 1]
    return float((np.abs(edge - np.array(category_colour(category))).max(axis=2) < 60)
                 .any(axis=0).mean())


@pytest.fixture(scope="module")
def view():
    """One gallery on cat.jpg and coffee.jpg: the rows rendered without labels first (their
    strips kept in ``view.plain``), then with the samples' labels."""
    v = GalleryView(FolderSelection(SAMPLES, IMAGES), device="cpu", size=128, max_images=2)
    render(v, MOVING, "rotate")
    v.plain = {op: [bytes(img.value) for img in v.row(op).images] for op in (MOVING, PIXEL)}
    v.plain_renders = v.engine.renders
    v.source = from_path(SAMPLE_ANNOTATIONS, SAMPLES)
    v.set_labels(v.source)
    render(v, MOVING, "rotate")
    yield v
    v.close()
    v.source.close()


def test_moving_rows_draw_the_moved_boxes_and_pixel_rows_the_original_ones(view):
    assert view.engine.names == list(IMAGES) and view.engine.labels is not None
    before = view.row(MOVING).labels.before[0]  # cat.jpg's labels as fed
    nose = before.boxes[list(before.classes).index(NOSE)]
    # the originals column and a pixel operator's tiles: the box where it was
    for op, column in ((MOVING, 0), (PIXEL, 1), (PIXEL, 4)):
        assert bottom_edge(shown_tile(view, op, column, 0), nose, NOSE) > 0.8, (op, column)
    # flipped upside down: the engine moved the box, and the tile shows it there, not where
    # it was
    moved = view.results[MOVING].labels[VERTICAL][0].labels
    assert moved.classes.tolist() == before.classes.tolist()
    flipped = moved.boxes[list(moved.classes).index(NOSE)]
    assert np.allclose(flipped[[1, 3]], 1 - nose[[3, 1]], atol=1e-5)
    tile = shown_tile(view, MOVING, VERTICAL + 1, 0)
    assert bottom_edge(tile, flipped, NOSE) > 0.8
    assert bottom_edge(tile, nose, NOSE) < 0.2
    assert view.results[PIXEL].labels is not None  # pixel operators hand them back too


def test_an_operator_that_cannot_move_labels_says_why_instead_of_tiles(view):
    result = view.results[REFUSED]
    assert result.refused.startswith("not label-aware: ") and not result.tiles
    assert result.error is None and not result.ok
    row = view.row(REFUSED)
    notes = [w for w in row.widget.children if "dg-gallery-refused" in w._dom_classes]
    assert notes and "not label-aware" in notes[0].value and row.images == []
    assert len(row.add.options) == len(result.plan.columns)  # it can still be added
    assert "1 not label-aware (their cards say why)" in view.status.value


def test_show_labels_draws_again_without_rendering_and_the_zoom_follows(view):
    renders = view.engine.renders
    view.row(MOVING).click_tile(0, VERTICAL + 1)
    blue = np.abs(decode(view.zoom.large.value) - np.array(category_colour(NOSE))).max(axis=2)
    assert (blue < 40).sum() > 20  # the zoom draws the labels too
    try:
        view.set_labels(view.source, show=False)
        assert view.zoom.shown is None  # it showed labels that are no longer drawn
        render(view, MOVING, "rotate")
        assert view.engine.renders == renders, "hiding labels must not render again"
        for op in (MOVING, PIXEL):
            assert [bytes(img.value) for img in view.row(op).images] == view.plain[op], op
        view.row(MOVING).click_tile(0, VERTICAL + 1)
        blue = np.abs(decode(view.zoom.large.value) - np.array(category_colour(NOSE)))
        assert (blue.max(axis=2) < 40).sum() == 0
    finally:
        view.set_labels(view.source, show=True)
        render(view, MOVING, "rotate")
    assert bottom_edge(shown_tile(view, PIXEL, 1, 0), view.row(PIXEL).labels.before[0].boxes[
        list(view.row(PIXEL).labels.before[0].classes).index(NOSE)], NOSE) > 0.8


def test_without_labels_the_tiles_are_what_they_were(view):
    try:
        view.set_labels(None)
        render(view, MOVING, "rotate")
        assert view.engine.labels is None
        for op in (MOVING, PIXEL):
            assert view.results[op].labels is None and view.row(op).labels is None
            assert [bytes(img.value) for img in view.row(op).images] == view.plain[op], op
        assert view.results[REFUSED].ok  # rendered again, as an operator like any other
    finally:
        view.set_labels(view.source)
        render(view, MOVING, "rotate")


def test_bad_label_settings_are_named():
    v = GalleryView(device="cpu", size=128, max_images=1)
    try:
        with pytest.raises(TypeError, match="labels=str is not allowed; expected a LabelSource"):
            v.set_labels("instances.json")
        with pytest.raises(ValueError, match="min_kept 0 is not allowed; expected a fraction"):
            v.set_labels(None, min_kept=0)
    finally:
        v.close()


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A served app whose images folder (inside the allowed root) has no annotations."""
    root = tmp_path / "root"
    photos = root / "photos"
    photos.mkdir(parents=True)
    for name in ("gravel.jpg", "cat.jpg"):
        shutil.copy(SAMPLES / name, photos / name)
    app = App(photos, allowed_root=root, device="cpu", size=128, gallery_images=2)
    app.gallery.search.value = "rotate"
    yield app
    app.close()


def test_the_detection_pick_shows_the_annotated_samples_in_both_tabs(served):
    app = served
    assert app.wait_idle(120) and app.gallery.engine.labels is None
    labels = app.builder.labels
    assert labels.task.value == CLASSIFICATION and labels.likely_found() is None
    labels.task.widget.value = DETECTION  # the samples lie outside the allowed root
    assert app.wait_idle(120), app.gallery.status.value
    assert labels.task.value == DETECTION and labels.problems == []
    # the collapsed section's title says which labels the views draw
    n = len(annotated_samples())
    assert app.images.titles[1] == f"Labels: {labels.source.origin}, {n} of {n} images"
    assert app.builder.renderer.names == sorted(annotated_samples())
    assert app.gallery.engine.names == sorted(annotated_samples())[:2]
    assert app.gallery.labels.source is app.builder.renderer.labels  # one set, both tabs
    assert [len(s.boxes) > 0 for s in app.gallery.engine.labels] == [True, True]
    assert app.gallery.results["rotate"].labels is not None
    assert app.gallery.results["auto_aug.rotate"].refused
    labels.show.value = False  # the builder's "show labels" applies to the gallery
    assert app.gallery.labels.overlay is False
    labels.show.value = True
    labels.task.widget.value = CLASSIFICATION
    assert app.wait_idle(120)
    assert app.builder.renderer.labels is None and app.gallery.engine.labels is None
    assert app.images.titles[1] == "Labels"
    assert app.gallery.results["auto_aug.rotate"].ok
