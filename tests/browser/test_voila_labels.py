"""Labels in the served app, in a real Chromium: load the annotated samples from the Labels
section, rotate in the builder, and see the cat's box follow the rotation, in the inspector's
numbers and in the tile's pixels; "show labels" hides the overlay.

One Voilà server and one page for the module, as in test_voila_app.py (whose page fixture and
helpers this module uses).
"""

from __future__ import annotations

import io
import json
import math
import re

import numpy as np
import pytest
from PIL import Image

from dali_gallery.widgets.label_overlay import category_colour
from tests.browser.test_voila_app import (  # the page fixture and helpers, not its tests
    SAMPLES,
    TILE,
    app,
    ensure_rotate_step,
    screenshot,
)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

assert app  # the module-scoped page fixture, used by name below
ANNOTATIONS = json.loads((SAMPLES / "instances.json").read_text())
CAT = next(c["id"] for c in ANNOTATIONS["categories"] if c["name"] == "cat")
ROW = re.compile(r"^cat\s+(\S+), (\S+), (\S+), (\S+)\s+(\S+), (\S+), (\S+), (\S+)", re.M)
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


def test_annotated_samples_load_and_the_cats_box_follows_a_rotation(app, ui):
    page = app.page
    page.locator(".dg-app-images").get_by_text("Labels", exact=True).first.click()
    found = page.locator(".dg-labels-found select")
    found.wait_for(state="visible")
    found.select_option(label="instances.json")
    page.locator("button.dg-labels-load").click()
    page.locator(".dg-labels", has_text="labels for").first.wait_for(timeout=60_000)
    assert "cat" in page.locator(".dg-labels").inner_text()

    ensure_rotate_step(page)  # a rotate step (from the gallery), the Builder tab shown
    inspect = page.locator(".dg-builder .dg-tile-inspect")
    inspector = page.locator(".dg-builder .dg-inspector")
    shown = None
    for k in range(inspect.count()):  # the first tile of cat.jpg
        inspect.nth(k).click()
        inspector.locator(".dg-inspector-labels").first.wait_for(timeout=60_000)
        text = inspector.inner_text()
        if ROW.search(text):
            shown = k
            break
    assert shown is not None, "no tile of cat.jpg in the builder"
    angle = float(re.search(r"angle=(-?\d+(?:\.\d+)?)", text).group(1))
    assert abs(angle) >= 5, text  # the gallery's rotate column turns the image
    w0, h0, w1, h1 = (int(v) for v in SIZES.search(text).groups())
    numbers = [float(v) for v in ROW.search(text).groups()]
    before, after = np.array(numbers[:4]), np.array(numbers[4:])
    rel = before / [w0, h0, w0, h0]  # the annotation, as a fraction of the image
    expected = rotated_box(rel * [w1, h1, w1, h1], angle, w1, h1)
    assert np.allclose(after, expected, atol=2.5), (before, after, expected, angle)

    # the tile draws that box: the cat's colour along its moved top edge
    tile = page.locator(TILE).nth(shown)
    drawn = decode(ui.img_bytes(page, tile))
    sy, sx = drawn.shape[0] / h1, drawn.shape[1] / w1  # the tile may be shown smaller
    left, top, right, bottom = (after * [sx, sy, sx, sy]).round().astype(int)
    colour = np.abs(drawn - np.array(category_colour(CAT))).max(axis=2) < 60
    edge = colour[max(top - 1, 0):top + 3, (left + right) // 2:right - 3]
    assert edge.any(axis=0).mean() > 0.6, (left, top, right, bottom)
    screenshot(page, "detection.png")

    # "show labels" off: the same tile without the overlay
    page.locator(".dg-labels-show input").click()
    ui.wait_img_changed(page, ui.img_bytes(page, tile), tile, timeout_ms=60_000)
    plain = decode(ui.img_bytes(page, tile))
    plain_colour = np.abs(plain - np.array(category_colour(CAT))).max(axis=2) < 60
    assert plain_colour[max(top - 1, 0):top + 3, (left + right) // 2:right - 3] \
        .any(axis=0).mean() < edge.any(axis=0).mean()
    page.locator(".dg-labels-show input").click()
    assert not app.errors, app.errors
