"""The served app in a real Chromium: gallery, gallery -> builder, sliders, export, uploads.

One Voilà server and one page (one kernel) for the module: the tests run in file order on the
same app, the way a user would go through it. Tests that need a builder step add one from the
gallery if an earlier test did not. Screenshots for the README go to docs/screenshots/.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

from dali_gallery.gallery.browser_edits import engine_ms
from dali_gallery.gallery.gallery_bench import measure_slider_latency
from dali_gallery.pipelines.catalog import CATALOG
from tests.browser.conftest import open_images

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = REPO / "docs" / "screenshots"
SAMPLES = REPO / "gallery" / "samples"
TILE = ".dg-builder img.dg-preview-tile"
ANGLE = ".dg-step-card .dg-param-angle .widget-slider"
GALLERY_DONE_JS = """() => /operators in/.test(
    (document.querySelector('.dg-gallery-status') || {}).textContent || '')"""


@pytest.fixture(scope="module")
def app(gallery_voila, browser):
    """The app page, opened once; ``errors`` collects uncaught page errors."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  accept_downloads=True)
    context.set_default_timeout(60_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    t0 = time.monotonic()
    page.goto(gallery_voila.page_url(), wait_until="domcontentloaded")
    page.locator(".dg-gallery-row").first.wait_for(timeout=180_000)
    first_row_s = time.monotonic() - t0
    yield SimpleNamespace(page=page, errors=errors, first_row_s=first_row_s, t0=t0,
                          server=gallery_voila)
    context.close()


def tab(page, title: str) -> None:
    page.locator(".dg-app-tabs > .lm-TabBar .lm-TabBar-tab", has_text=title).click()
    wait_tab(page, title)


def wait_tab(page, title: str) -> None:
    page.wait_for_function(
        """(t) => { const c = document.querySelector(
            '.dg-app-tabs > .lm-TabBar .lm-TabBar-tab.lm-mod-current');
            return c && c.textContent.trim() === t; }""", arg=title, timeout=30_000)


def current_tab(page) -> str:
    return page.locator(".dg-app-tabs > .lm-TabBar .lm-mod-current").inner_text().strip()


def decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(np.int16)


def wait_rows(page) -> None:
    """The kernel has finished; the browser may still be creating the last cards' views."""
    page.wait_for_function("(n) => document.querySelectorAll('.dg-gallery-row').length === n",
                           arg=len(CATALOG))


def screenshot(page, name: str) -> None:
    """The app from its tab bar down, for the README."""
    page.evaluate("() => document.querySelector('.dg-app-tabs').scrollIntoView()")
    page.wait_for_timeout(300)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / name))


def ensure_rotate_step(page) -> None:
    """A rotate step in the builder (added from the gallery) and the Builder tab shown."""
    if page.locator(".dg-step-card").count() == 0:
        tab(page, "Gallery")
        page.locator(".dg-gallery-row-rotate .dg-gallery-add button").nth(2).click()
    tab(page, "Builder")
    page.locator(ANGLE).first.wait_for(state="visible")
    page.locator(TILE).first.wait_for(state="visible")


def test_gallery_loads_and_shows_rendered_images(app, ui):
    page = app.page
    page.wait_for_function(GALLERY_DONE_JS, timeout=240_000)
    all_rows_s = time.monotonic() - app.t0
    assert current_tab(page) == "Gallery"
    wait_rows(page)
    # every rendered column is a decodable image with real content
    tiles = page.locator(".dg-gallery-row-rotate img.dg-gallery-tile")
    assert tiles.count() == 4
    columns = [decode(ui.img_bytes(page, tiles.nth(k))) for k in range(4)]
    assert all(c.shape == columns[0].shape and c.std() > 10 for c in columns)
    assert np.abs(columns[0] - columns[3]).mean() > 10, "0 and 90 degrees look the same"
    loaded = page.evaluate("""() => Array.from(document.querySelectorAll(
        'img.dg-gallery-tile, img.dg-gallery-original')).filter(
        i => i.complete && i.naturalWidth > 0).length""")
    assert loaded >= 4 * len([op for op in CATALOG.values() if op.cpu])
    labels = page.locator(".dg-gallery-row-rotate .dg-gallery-add button").all_inner_texts()
    assert [t.strip() for t in labels] == ["0 deg", "30 deg", "60 deg", "90 deg"]
    gpu_only = [name for name, op in CATALOG.items() if not op.cpu]
    for name in gpu_only:
        note = page.locator(f".dg-gallery-row-{name.replace('.', '-')} .dg-gallery-gpu-only")
        assert "GPU only" in note.inner_text()
    screenshot(page, "gallery.png")
    status = page.locator(".dg-gallery-status").inner_text()
    print(f"\nvoila gallery: first row on the page {app.first_row_s:.1f} s after opening it, "
          f"all rows {all_rows_s:.1f} s; kernel says: {status}")
    assert not app.errors, app.errors


def test_adding_from_the_gallery_puts_the_step_in_the_builder(app, ui):
    page = app.page
    tab(page, "Gallery")
    before = page.locator(".dg-step-card").count()
    page.locator(".dg-gallery-row-rotate .dg-gallery-add button", has_text="60 deg").click()
    page.wait_for_function("(n) => document.querySelectorAll('.dg-step-card').length > n",
                           arg=before)
    wait_tab(page, "Builder")  # the app switches to the builder (a message of its own)
    card = page.locator(".dg-step-card").nth(before)
    card.wait_for(state="visible")
    assert "rotate" in card.locator(".dg-step-title").inner_text()
    assert float(ui.slider_value(page, card.locator(".dg-param-angle .widget-slider").first)) == 60
    assert "added rotate (angle=60 deg)" in page.locator(".dg-gallery-status").inner_text()
    assert not app.errors, app.errors


def test_dragging_a_slider_changes_the_preview(app, ui):
    page = app.page
    ensure_rotate_step(page)
    tile = page.locator(TILE).first
    before = ui.wait_img_changed(page, None, tile)
    slider = page.locator(ANGLE).first
    start = float(ui.slider_value(page, slider))
    # drag the handle with the mouse, as a user does
    handle = slider.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + 60, box["y"] + box["height"] / 2, steps=8)
    page.mouse.up()
    moved = float(ui.slider_value(page, slider))
    assert moved > start
    after = ui.wait_img_changed(page, before, tile)
    assert np.abs(decode(after) - decode(before)).mean() > 2
    assert not app.errors, app.errors


def test_slider_to_preview_latency_benchmark(app, ui, tmp_path_factory):
    """Benchmark, not a time assertion: keypress on a slider -> new preview <img> src."""
    page = app.page
    ensure_rotate_step(page)
    slider = page.locator(ANGLE).first
    page.locator(TILE).first.wait_for(state="visible")
    figures = measure_slider_latency(page, slider, TILE, moves=30,
                                     engine_ms=lambda: engine_ms(page))
    figures["preview"] = page.locator(".dg-builder .dg-status").first.inner_text().strip()
    out = tmp_path_factory.mktemp("bench") / "voila_slider_latency.json"
    out.write_text(json.dumps(figures, indent=2))
    print(f"\nvoila slider -> preview: median {figures['median_ms']} ms, "
          f"p95 {figures['p95_ms']} ms over {figures['moves']} moves; engine render median "
          f"{figures.get('engine_median_ms')} ms, p95 {figures.get('engine_p95_ms')} ms "
          f"({figures['preview']}); written to {out}")
    assert figures["moves"] == 30 and len(figures["samples_ms"]) == 30
    assert figures.get("engine_median_ms") is not None
    assert not app.errors, app.errors


def test_inspecting_a_tile_shows_the_values_drawn_for_it(app, ui):
    """A second step drawn per sample (hsv's hue, added from the picker's search), then a click
    on a tile's caption: the inspector lists both steps with the values used on that tile."""
    page = app.page
    ensure_rotate_step(page)
    tile = page.locator(TILE).first
    before = ui.img_bytes(page, tile)
    cards = page.locator(".dg-step-card").count()
    search = page.locator(".dg-builder .dg-picker-search input").first
    search.fill("hsv")
    search.press("Enter")
    page.wait_for_function("(n) => document.querySelectorAll('.dg-step-card').length > n",
                           arg=cards)
    assert "hsv" in page.locator(".dg-step-card .dg-step-title").nth(cards).inner_text()
    ui.wait_img_changed(page, before, tile, timeout_ms=90_000)
    page.locator(".dg-builder .dg-tile-inspect").nth(1).click()  # image 0, draw 1
    inspector = page.locator(".dg-builder .dg-inspector")
    inspector.locator("td", has_text="hsv").first.wait_for()
    text = inspector.inner_text()
    assert "draw 1" in text and "rotate" in text
    hue = re.search(r"hue=(-?\d+(?:\.\d+)?)\*", text)  # * = drawn for this sample
    assert hue is not None, text
    lo, hi = CATALOG["hsv"].param("hue").random_default  # what the picker suggests
    assert lo <= float(hue.group(1)) <= hi
    assert ui.img_bytes(page, inspector.locator("img.dg-histogram")).startswith(b"\x89PNG")
    screenshot(page, "builder.png")
    assert not app.errors, app.errors


def test_export_tab_download_runs_and_reproduces_the_preview(app, ui, tmp_path):
    page = app.page
    ensure_rotate_step(page)
    # the augmentations alone (a new pipeline trains through the ImageNet tail: resize, crop,
    # normalise; tests/browser/test_builder_export.py checks that export)
    enabled = page.locator(".dg-builder .dg-output-enabled input")
    if enabled.is_checked():
        enabled.uncheck()
        page.locator(".dg-export .dg-batch-warning .dg-error").first.wait_for(state="attached")
    # exact parity needs the original image size (smaller sizes shrink before augmenting)
    before = ui.img_bytes(page, page.locator(TILE).first)
    page.locator(".dg-builder .dg-size select").select_option(label="original")
    ui.wait_img_changed(page, before, page.locator(TILE).first, timeout_ms=90_000)
    n = page.locator(".dg-builder img.dg-preview-original").count()
    draws = page.locator(TILE).count() // n
    preview = [decode(ui.img_bytes(page, page.locator(TILE).nth(i * draws))) for i in range(n)]

    tab(page, "Export")
    code = page.locator(".dg-export-code:visible").first
    code.wait_for()
    # the export follows the pipeline once the preview is idle: wait for it, not for any code
    page.locator(".dg-export-code:visible", has_text="fn.rotate").first.wait_for()
    assert "def augment" in code.inner_text() and "fn.rotate" in code.inner_text()
    with page.expect_download() as info:
        page.locator("a.dg-download-py:visible").first.click()
    download = info.value
    assert download.suggested_filename.endswith(".py")
    script = tmp_path / download.suggested_filename
    download.save_as(script)
    out = tmp_path / "batch.npz"
    run = subprocess.run([sys.executable, str(script), "--images", str(SAMPLES), "--batch-size",
                          str(n), "--device", "cpu", "--no-shuffle", "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    batch = np.load(out)
    exported = [batch[f"image_{i:04d}"].astype(np.int16) for i in range(n)]
    for i in range(n):
        assert exported[i].shape == preview[i].shape
        diff = np.abs(exported[i] - preview[i]).mean()  # the preview tile is a JPEG
        assert diff < 3, f"image {i}: exported batch differs from the preview by {diff:.1f}"
        other = exported[(i + 1) % n]
        if other.shape == preview[i].shape:
            assert np.abs(other - preview[i]).mean() > 10
    assert not app.errors, app.errors


def test_a_bad_upload_shows_a_message_and_the_app_keeps_working(app, ui):
    page = app.page
    open_images(page)
    panel = page.locator(".dg-app-images")
    names_before = panel.locator(".widget-html").all_inner_texts()

    def upload(files: list[dict]) -> None:
        """Through the real file chooser of the upload button, as a user picks files."""
        with page.expect_file_chooser() as chooser:
            panel.locator(".dg-upload").first.click()
        chooser.value.set_files(files)
    upload([{"name": "notes.jpg", "mimeType": "image/jpeg", "buffer": b"this is not a JPEG"}])
    message = panel.locator(".dg-error", has_text="no usable image")
    message.wait_for(state="visible")
    assert "previous images are kept" in message.inner_text()
    # the list of problems is another widget: its update may land a frame later
    page.wait_for_function("""() => [...document.querySelectorAll(
        '.dg-app-images .dg-image-problems')].some(e => e.innerText.includes('notes.jpg'))""",
        timeout=30_000)
    assert names_before  # the panel still lists what is loaded

    # the app still works: the builder renders a slider move, the gallery still shows rows
    ensure_rotate_step(page)
    tile = page.locator(TILE).first
    before = ui.img_bytes(page, tile)
    ui.move_slider(page, 3, page.locator(ANGLE).first)
    ui.wait_img_changed(page, before, tile, timeout_ms=90_000)

    # a mixed upload: the good image is shown in both views, the bad one is listed
    cat = (SAMPLES / "cat.jpg").read_bytes()
    upload([{"name": "mine.jpg", "mimeType": "image/jpeg", "buffer": cat},
            {"name": "broken.png", "mimeType": "image/png", "buffer": b"\x89PNG\r\n\x1a\n junk"}])
    panel.locator(".widget-html", has_text="mine.jpg").first.wait_for()
    panel.locator(".dg-image-problems", has_text="broken.png").wait_for()
    assert "notes.jpg" not in panel.locator(".dg-image-problems").inner_text()
    tab(page, "Gallery")
    page.wait_for_function(GALLERY_DONE_JS, timeout=240_000)
    wait_rows(page)
    originals = page.locator(".dg-gallery-row-rotate img.dg-gallery-original")
    shape = decode(ui.img_bytes(page, originals.first)).shape
    assert shape[0] < 300, f"the gallery should show the one uploaded image, got {shape}"
    wait_rows(page)
    assert not app.errors, app.errors
