"""The Distribution tab in a real Chromium (Voilà): run N draws of the builder's chain, watch the
progress bar fill, then see the firing rates, the histograms and the policy's picks that the
kernel computed from the pipeline's own records."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from tests.support import write_notebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

B = ".dg-builder"
TILE = f"{B} img.dg-preview-tile"
PRESET = {"format": "dali-gallery/preset", "version": 1, "seed": 9, "steps": [
    {"op": "rotate", "probability": 0.3, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "rand_augment", "probability": 0.5, "params": {"n": 2, "m": 9}},
]}
NOTEBOOK = f"""from dali_gallery.widgets import Builder

builder = Builder(device="cpu", thumbnails=False, draws=2, max_images=2, size=128,
                  preset={json.dumps(PRESET)!r})
builder"""
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def test_run_draws_watch_the_bar_finish_and_see_the_histograms(voila_server, browser, ui,
                                                                tmp_path):
    folder = tmp_path / "app"
    folder.mkdir()
    write_notebook(folder / "builder.ipynb", NOTEBOOK)
    server = voila_server(notebook=folder / "builder.ipynb")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(60_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(server.page_url(), wait_until="domcontentloaded")
        page.locator(TILE).first.wait_for(state="visible", timeout=180_000)
        page.locator(f"{B} .lm-TabBar-tab", has_text="Distribution").click()
        panel = page.locator(f"{B} .dg-distribution")
        panel.wait_for(state="visible")
        count = panel.locator(".dg-dist-draws input")
        count.fill("300")
        count.press("Enter")
        run = panel.locator("button.dg-dist-run")
        run.filter(has_text="Run 300 draws").wait_for()  # the kernel saw the new count
        run.click()
        bar = panel.locator(".dg-dist-progress .progress-bar")
        widths = []
        page.wait_for_function(
            "(el) => el.classList.contains('progress-bar-info') || "
            "el.classList.contains('progress-bar-success')", arg=bar.element_handle())
        while "progress-bar-success" not in (bar.get_attribute("class") or ""):
            widths.append(bar.evaluate("(el) => el.style.width"))
            assert len(widths) < 3000, f"the bar did not finish: {widths[-5:]}"
            page.wait_for_timeout(50)
        assert bar.evaluate("(el) => el.style.width") == "100%"
        assert all(float(w.rstrip("%") or 0) <= 100 for w in widths)
        panel.locator(".dg-dist-status", has_text="300 draws in").wait_for()
        image = panel.locator("img.dg-dist-histograms")
        page.wait_for_function("(el) => el.naturalWidth > 300 && el.naturalHeight > 100",
                               arg=image.element_handle())
        png = Image.open(io.BytesIO(ui.img_bytes(page, image)))
        assert png.format == "PNG"
        rates = panel.locator(".dg-dist-rates").inner_text()
        assert "rotate" in rates and "binomial range" in rates and "/ 300 =" in rates
        picks = panel.locator(".dg-dist-picks").inner_text()
        assert "rand_augment" in picks and "identity" in picks and "level 2" in picks
        assert not run.is_disabled()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        panel.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / "distribution.png"), full_page=True)
        assert not errors, errors
    finally:
        context.close()
