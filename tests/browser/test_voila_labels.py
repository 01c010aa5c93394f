"""Labels in the served app, in a real Chromium: load the annotated samples from the Labels
section, rotate in the builder, and see a box follow the rotation, in the inspector's numbers
and in the tile's pixels; "show labels" hides the overlay; the gallery draws labels too.

One Voilà server and one page for the module, as in test_voila_app.py (whose page fixture and
helpers this module uses).
"""

from __future__ import annotations

import io
import json
import math
import re
import time

import numpy as np
import pytest
from PIL import Image
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from dali_gallery.widgets.label_overlay import category_colour
from tests.browser.test_voila_app import (  # the page fixture and helpers, not its tests
    GALLERY_DONE_JS,
    SAMPLES,
    SCREENSHOTS,
    TILE,
    app,
    ensure_rotate_step,
    screenshot,
    tab,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

assert app  # the module-scoped page fixture, used by name below
ANNOTATIONS = json.loads((SAMPLES / "instances.json").read_text())
SIZES = re.compile(r"px of (\d+)\D(\d+)\).*px of (\d+)\D(\d+)\)")


def rotated_box(box, angle_deg: float, w: float, h: float) -> np.ndarray:
    """The tight box of a box's corners turned by ``angle_deg`` counter-clockwise (as seen, y
    down) about the centre of a w x h image that keeps its size."""
    a = math.radians(angle_deg)
    cx, cy = w / 2, h / 2
    left, top, right, bottom = box
    xs, ys = [], []
    for x, y in ((left, top), (right, top), (left, bottom), (right, bottom)):
        dx, dy = x - cx, y - cy
        xs.append(cx + dx * math.cos(a) + dy * math.sin(a))
        ys.append(cy - dx * math.sin(a) + dy * math.cos(a))
    return np.array([max(min(xs), 0), max(min(ys), 0), min(max(xs), w), min(max(ys), h)])


def decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(int)


def test_annotated_samples_load_and_a_box_follows_a_rotation(app, ui):
    page = app.page
    page.locator(".dg-app-images").get_by_text("Labels", exact=True).first.click()
    labels = page.locator(".dg-app-images .dg-labels").first  # the app's (the builder's own view)
    found = labels.locator(".dg-labels-found select")
    found.wait_for(state="visible")
    found.select_option(label="instances.json")
    labels.locator("button.dg-labels-load").click()
    page.locator(".dg-app-images .dg-labels", has_text="labels for").first.wait_for(
        timeout=60_000)
    assert "cat" in labels.inner_text()

    ensure_rotate_step(page)  # a rotate step (from the gallery), the Builder tab shown
    inspector = page.locator(".dg-builder .dg-inspector")
    deadline = time.monotonic() + 90
    while True:  # until the tile inspected is the rotated render (it may still be rendering)
        page.locator(".dg-builder .dg-tile-inspect").first.click()
        inspector.locator(".dg-inspector-labels").first.wait_for(timeout=60_000)
        text = inspector.inner_text()
        found = re.search(r"angle=(-?\d+(?:\.\d+)?)", text)
        rows = [line.split("\t") for line in text.splitlines() if line.count(",") == 6]
        # the sampled values and the labels' table are two updates of the inspector: read
        # them once both show the rotated render (its first box moved)
        if (found and rows and rows[0][1] != rows[0][2]) or time.monotonic() > deadline:
            break
        page.wait_for_timeout(1000)
    assert found, text
    angle = float(found.group(1))
    assert abs(angle) >= 5, text  # the gallery's rotate column turns the image
    w0, h0, w1, h1 = (int(v) for v in SIZES.search(text).groups())
    assert rows, text  # one row per box: name, before l, t, r, b, after l, t, r, b
    name, before_text, after_text = rows[0][:3]
    before = np.array([float(v) for v in before_text.split(",")])
    after = np.array([float(v) for v in after_text.split(",")])
    rel = before / [w0, h0, w0, h0]  # the annotation, as a fraction of the image
    expected = rotated_box(rel * [w1, h1, w1, h1], angle, w1, h1)
    assert np.allclose(after, expected, atol=2.5), (name, before, after, expected, angle)

    # the tile draws that box: its category's colour along the moved box's longest edge
    category = next(c["id"] for c in ANNOTATIONS["categories"] if c["name"] == name.strip())
    tile = page.locator(TILE).first
    drawn = decode(ui.img_bytes(page, tile))
    sy, sx = drawn.shape[0] / h1, drawn.shape[1] / w1  # the tile may be shown smaller
    left, top, right, bottom = (after * [sx, sy, sx, sy]).round().astype(int)
    colour = np.abs(drawn - np.array(category_colour(category))).max(axis=2) < 60
    inner = min(bottom, drawn.shape[0]) - 2  # the bottom edge (the caption sits at the top)
    edge = colour[max(inner - 2, 0):inner + 2, left + 3:right - 3]
    assert edge.any(axis=0).mean() > 0.6, (name, left, top, right, bottom)
    screenshot(page, "detection.png")

    # "show labels" off: the same tile without the overlay
    show = page.locator(".dg-app-images .dg-labels-show input").first
    drawn_bytes = ui.img_bytes(page, tile)  # read before the click: the render can be quicker
    show.click()
    ui.wait_img_changed(page, drawn_bytes, tile, timeout_ms=60_000)
    plain = decode(ui.img_bytes(page, tile))
    plain_colour = np.abs(plain - np.array(category_colour(category))).max(axis=2) < 60
    assert plain_colour[max(inner - 2, 0):inner + 2, left + 3:right - 3] \
        .any(axis=0).mean() < edge.any(axis=0).mean()
    show.click()
    assert not app.errors, app.errors


def test_the_gallery_draws_the_labels_and_its_large_view_too(app, ui):
    page = app.page
    tab(page, "Gallery")
    page.wait_for_function(GALLERY_DONE_JS, timeout=240_000)
    row = page.locator(".dg-gallery-row-rotate")
    strip = row.locator("img.dg-gallery-tile").nth(2)
    # the test before switched "show labels" off and on: the status can still read "done"
    # from before the kernel took the last click, while its cards are drawn again
    try:
        strip.wait_for(state="attached", timeout=120_000)
    except PlaywrightTimeout:  # say what the page shows instead
        status = page.locator(".dg-gallery-status").inner_text()
        card = row.first.inner_text() if row.count() else "no rotate card"
        raise AssertionError(f"no rotate tile: status {status!r}; card {card[:400]!r}") from None
    strip.scroll_into_view_if_needed()
    box = strip.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.1)
    zoom = row.locator(".dg-zoom")
    zoom.wait_for(state="visible")
    large = decode(ui.img_bytes(page, zoom.locator("img.dg-zoom-large")))
    colours = {c["id"]: category_colour(c["id"]) for c in ANNOTATIONS["categories"]}
    drawn = [k for k, c in colours.items()
             if (np.abs(large - np.array(c)).max(axis=2) < 30).sum() > 50]
    assert drawn, "no category's colour in the large view"
    zoom.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "zoom.png"))
    zoom.locator(".dg-zoom-close").click()
    assert not app.errors, app.errors
