"""Previews never lie about geometry, measured on the pixels a user sees in a real Chromium.

One Voilà server on a folder holding two pictures of a red circle, one 640x320 and one 320x640
(made here: the point is a shape whose roundness can be measured), and one page for the
module; the tests run in file order on the same app, the way a user goes through it. A circle
is measured on Playwright screenshots of the elements that show it: its extent in x and in y
must agree within 3 %, whatever the tile size, the number of draws or the zoom.
"""

from __future__ import annotations

import importlib.util
import io
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image, ImageDraw

from dali_gallery.gallery.serve import GALLERY_NOTEBOOK
from tests.browser.conftest import open_images

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
RED = (220, 30, 30)
GREY = (200, 200, 200)
WIDE, TALL = "circle_wide.png", "circle_tall.png"
ROTATE = ".dg-gallery-row-rotate"
TILE = ".dg-builder img.dg-preview-tile"
DRAWS = ".dg-builder .dg-draws"
GALLERY_DONE_JS = """() => /operators in/.test(
    (document.querySelector('.dg-gallery-status') || {}).textContent || '')"""
CHAIN = ["rotate", "hsv", "gaussian_blur", "saturation", "hue"]


def _start_voila():
    """``start_voila`` of this folder's conftest (loaded by path, as tests/gallery/test_serve.py
    does): the module-scoped server here needs an images folder of its own."""
    path = Path(__file__).with_name("conftest.py")
    spec = importlib.util.spec_from_file_location("_dali_gallery_geometry_helpers", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module.start_voila


def circle_picture(path: Path, width: int, height: int) -> None:
    """A red disc as large as the short side allows, centred on grey."""
    img = Image.new("RGB", (width, height), GREY)
    r = min(width, height) * 0.44
    cx, cy = width / 2, height / 2
    ImageDraw.Draw(img).ellipse((cx - r, cy - r, cx + r, cy + r), fill=RED)
    img.save(path)


def circle_extent(a: np.ndarray) -> tuple[int, int]:
    """(width, height) in screen pixels of the red disc in a screenshot."""
    red = (a[..., 0] > 150) & (a[..., 1] < 100) & (a[..., 2] < 100)
    ys, xs = np.nonzero(red)
    assert xs.size > 100, "no red disc in the screenshot"
    return int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)


def assert_round(locator, what: str, parts: int = 1) -> None:
    """Each of ``parts`` equal horizontal bands of the element (a gallery strip stacks one
    image per band) shows a round disc."""
    shot = np.asarray(Image.open(io.BytesIO(locator.screenshot())).convert("RGB")).astype(int)
    for k, band in enumerate(np.array_split(shot, parts, axis=0)):
        w, h = circle_extent(band)
        assert abs(w / h - 1) < 0.03, f"{what} [{k}]: the circle is {w}x{h} screen px"


@pytest.fixture(scope="module")
def app(browser, tmp_path_factory):
    images = tmp_path_factory.mktemp("circles")
    circle_picture(images / WIDE, 640, 320)
    circle_picture(images / TALL, 320, 640)
    server = _start_voila()(GALLERY_NOTEBOOK, tmp_path_factory.mktemp("geometry-voila"),
                         images_dir=images)
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  device_scale_factor=2)
    context.set_default_timeout(60_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.page_url(), wait_until="domcontentloaded")
    page.locator(".dg-gallery-search input").wait_for(timeout=180_000)
    # only the rotate cards: the rest of the catalog would compete for the two CPU cores
    page.locator(".dg-gallery-search input").fill("rotate")
    yield SimpleNamespace(page=page, errors=errors, server=server)
    context.close()
    server.stop()


def tab(page, title: str) -> None:
    page.locator(".dg-app-tabs > .lm-TabBar .lm-TabBar-tab", has_text=title).click()
    page.wait_for_function(
        """(t) => { const c = document.querySelector(
            '.dg-app-tabs > .lm-TabBar .lm-TabBar-tab.lm-mod-current');
            return c && c.textContent.trim() === t; }""", arg=title, timeout=30_000)


def width(locator) -> float:
    return locator.bounding_box()["width"]


def wait_loaded(page, selector: str, count: int) -> None:
    """``count`` images match ``selector`` and all of them are decoded."""
    page.wait_for_function(
        """([sel, n]) => { const imgs = document.querySelectorAll(sel);
            return imgs.length === n && Array.from(imgs).every(
                i => i.complete && i.naturalWidth > 0); }""", arg=[selector, count],
        timeout=120_000)


def click_centre(page, locator) -> None:
    """A mouse click in the middle of what the user sees (not a click on a hidden button)."""
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)


def set_draws(page, ui, draws: int) -> None:
    now = int(float(ui.slider_value(page, DRAWS)))
    if now != draws:
        ui.move_slider(page, draws - now, DRAWS)
    wait_loaded(page, TILE, 2 * draws)


def test_gallery_tiles_are_round_and_follow_the_size_control(app):
    page = app.page
    page.wait_for_function(GALLERY_DONE_JS, timeout=240_000)
    tiles = f"{ROTATE} img.dg-gallery-tile"
    wait_loaded(page, tiles, 4)
    for k in range(4):  # rotating a centred disc with keep_size leaves it round
        assert_round(page.locator(tiles).nth(k), f"gallery rotate column {k}", parts=2)
    assert_round(page.locator(f"{ROTATE} img.dg-gallery-original"), "gallery original", 2)
    before = width(page.locator(tiles).first)
    page.locator(".dg-gallery-size select").select_option(label="512 px")
    page.wait_for_function(
        "([sel, w]) => { const i = document.querySelector(sel); "
        "return i && i.getBoundingClientRect().width > w + 10 && i.naturalWidth > 0; }",
        arg=[tiles, before], timeout=120_000)
    page.wait_for_function(GALLERY_DONE_JS, timeout=120_000)
    wait_loaded(page, tiles, 4)
    after = width(page.locator(tiles).first)
    assert after >= 1.8 * before, f"size 256 -> 512 px: tiles {before} -> {after} CSS px"
    assert_round(page.locator(tiles).nth(1), "gallery rotate at 512 px", parts=2)
    page.locator(".dg-gallery-size select").select_option(label="256 px")
    page.wait_for_function(
        "([sel, w]) => { const i = document.querySelector(sel); "
        "return i && Math.abs(i.getBoundingClientRect().width - w) < 2; }",
        arg=[tiles, before], timeout=120_000)
    page.wait_for_function(GALLERY_DONE_JS, timeout=120_000)
    assert not app.errors, app.errors


def test_clicking_a_gallery_tile_opens_a_large_view_beside_the_original(app):
    page = app.page
    tiles = page.locator(f"{ROTATE} img.dg-gallery-tile")
    wait_loaded(page, f"{ROTATE} img.dg-gallery-tile", 4)
    strip = tiles.nth(1)  # 30 deg; the strip holds both images, the wide one second
    box = strip.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] * 0.75)
    zoom = page.locator(f"{ROTATE} .dg-zoom")
    zoom.wait_for(state="visible")
    assert WIDE in zoom.inner_text() and "30 deg" in zoom.inner_text()
    wait_loaded(page, f"{ROTATE} .dg-zoom img", 2)
    large, original = zoom.locator("img.dg-zoom-large"), zoom.locator("img.dg-zoom-original")
    assert width(large) >= 2 * width(strip), (width(large), width(strip))
    lb, ob = large.bounding_box(), original.bounding_box()
    assert ob["x"] >= lb["x"] + lb["width"] - 1 and abs(ob["y"] - lb["y"]) < 5, \
        "the original is not beside the large view"
    assert_round(large, "gallery zoom")
    assert_round(original, "gallery zoom original")
    zoom.locator(".dg-zoom-close").click()
    zoom.wait_for(state="hidden")
    assert not app.errors, app.errors


def test_builder_tiles_keep_the_circle_round_at_any_number_of_draws(app, ui):
    page = app.page
    tab(page, "Gallery")
    page.locator(f"{ROTATE} .dg-gallery-add button", has_text="30 deg").click()
    page.locator(".dg-step-card").first.wait_for()
    tab(page, "Builder")
    set_draws(page, ui, 3)
    widths = {}
    for draws in (3, 1, 8):
        set_draws(page, ui, draws)
        tile = page.locator(TILE).first
        box = tile.bounding_box()
        assert abs(box["width"] - box["height"]) <= 1, f"{draws} draws: cell {box} not square"
        widths[draws] = box["width"]
        for k in (0, 2 * draws - 1):  # the wide and the tall picture
            assert_round(page.locator(TILE).nth(k), f"builder, {draws} draws, tile {k}")
        for k in range(2):
            assert_round(page.locator(".dg-builder img.dg-preview-original").nth(k),
                         f"builder original {k}, {draws} draws")
    assert widths[1] > widths[3] > widths[8], f"tile widths by draws: {widths}"
    set_draws(page, ui, 3)
    assert not app.errors, app.errors


def test_clicking_a_builder_tile_opens_the_inspector_under_it_with_a_large_view(app, ui):
    page = app.page
    set_draws(page, ui, 3)
    tile = page.locator(TILE).nth(1)  # image 0 (the tall picture), draw 1
    click_centre(page, tile)
    inspector = page.locator(".dg-builder .dg-inspector")
    inspector.wait_for(state="visible")
    wait_loaded(page, ".dg-builder .dg-inspector .dg-zoom img", 2)
    large = inspector.locator("img.dg-zoom-large")
    assert width(large) >= 2 * width(tile), (width(large), width(tile))
    assert_round(large, "builder zoom")
    assert "draw 1" in inspector.inner_text()
    # right under the clicked tile's row, inside the preview, above the next image's row
    ib, tb = inspector.bounding_box(), tile.bounding_box()
    caption = page.locator(".dg-builder .dg-tile-inspect").nth(1).bounding_box()
    preview = page.locator(".dg-builder .dg-preview").bounding_box()
    next_row = page.locator(TILE).nth(3).bounding_box()  # image 1, draw 0
    assert tb["y"] + tb["height"] <= ib["y"] <= caption["y"] + caption["height"] + 40, (ib, tb)
    assert ib["y"] + ib["height"] <= next_row["y"] + 1, "the inspector is not under its row"
    assert preview["x"] - 1 <= ib["x"] and ib["x"] + ib["width"] <= preview["x"] + \
        preview["width"] + 1, (ib, preview)
    assert not app.errors, app.errors


def test_captions_list_every_step_that_fired(app, ui):
    page = app.page
    search = page.locator(".dg-builder .dg-picker-search input").first
    for op in CHAIN[1:]:
        cards = page.locator(".dg-step-card").count()
        search.fill(op)
        search.press("Enter")
        page.wait_for_function("(n) => document.querySelectorAll('.dg-step-card').length > n",
                               arg=cards)
    expected = ", ".join(CHAIN)
    caption = page.locator(".dg-builder .dg-tile-inspect").first
    for draws in (3, 8):
        set_draws(page, ui, draws)
        page.wait_for_function(
            "([sel, t]) => { const b = document.querySelector(sel); "
            "return b && b.textContent.replace(/\\s+/g, ' ').trim() === t; }",
            arg=[".dg-builder .dg-tile-inspect", expected], timeout=120_000)
        assert expected in caption.get_attribute("title")
        clipped = caption.evaluate("b => [b.scrollWidth - b.clientWidth, "
                                   "b.scrollHeight - b.clientHeight]")
        assert max(clipped) <= 1, f"{draws} draws: the caption is cut off by {clipped} px"
    set_draws(page, ui, 3)
    assert not app.errors, app.errors


def test_loading_other_images_clears_the_inspector(app):
    """The inspector is on image 1; the new set has one image: nothing of the old may stay."""
    page = app.page
    tab(page, "Builder")
    # image 1 (the wide picture), draw 0, through its caption
    page.locator(".dg-builder .dg-tile-inspect").nth(3).click()
    inspector = page.locator(".dg-builder .dg-inspector")
    page.locator(".dg-builder .dg-inspector", has_text=WIDE).wait_for(state="visible")
    open_images(page)
    panel = page.locator(".dg-app-images")
    cat = (REPO / "gallery" / "samples" / "cat.jpg").read_bytes()
    with page.expect_file_chooser() as chooser:
        panel.locator(".dg-upload").first.click()
    chooser.value.set_files([{"name": "mine.jpg", "mimeType": "image/jpeg", "buffer": cat}])
    panel.locator(".widget-html", has_text="mine.jpg").first.wait_for()
    deadline = time.monotonic() + 60
    while inspector.is_visible() and time.monotonic() < deadline:
        page.wait_for_timeout(100)
    if inspector.is_visible():  # it may only ever refer to the image now loaded
        text = inspector.inner_text()
        assert "mine.jpg" in text and TALL not in text and WIDE not in text, text
    wait_loaded(page, TILE, 3)
    assert not app.errors, app.errors
