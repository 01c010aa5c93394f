"""The served page's poster (gallery.poster) in a real Chromium against real Voilà servers.

A page that gets a kernel from the pool carries the gallery's first cards, DALI's pictures, in
the page itself: the browser paints them before Voilà's frontend has made a single widget, and
they go once the live gallery shows a tile (the same card, the same pictures). A page whose
kernel is started for it has no poster (nothing is rendered before its page is ready).
"""

from __future__ import annotations

import base64
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.gallery.browser_bench import _MARKS_JS, _wait_pool
from dali_gallery.gallery.serve import PAGE_EXTENSIONS
from tests.browser.conftest import img_bytes
from tests.gallery.test_poster import CARD_RE, IMG_RE

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"



def _open(browser, url: str):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(120_000)
    context.add_init_script(_MARKS_JS)
    page = context.new_page()
    response = page.goto(url, wait_until="domcontentloaded")
    return context, page, response.text()


def _decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)


def test_a_pooled_page_paints_the_first_cards_before_its_widgets(voila_server, browser):
    server = voila_server(pool_size=1)
    assert _wait_pool(server.log_path, 1), server.log_tail()  # its kernel has made the poster
    context, page, sent = _open(browser, server.page_url())
    try:
        # in the page as sent: HTML, not an output left for Voilà's frontend to draw
        assert sent.count('class="dg-poster"') == 1
        ops = CARD_RE.findall(sent)
        pictures = IMG_RE.findall(sent)
        assert ops and pictures, sent[:2000]
        # and the page loads the widget managers as its only frontend extensions
        config = json.loads(re.search(r'<script id="jupyter-config-data" '
                                      r'type="application/json">(.*?)</script>', sent, re.S)[1])
        assert {e["name"] for e in config["federated_extensions"]} == set(PAGE_EXTENSIONS)
        page.wait_for_function("() => 'poster' in window.__dgMarks")
        if page.locator(".dg-poster").count():  # still up: the README's picture of it
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "poster.png"))
        page.wait_for_function("() => 'first_image' in window.__dgMarks")
        marks = page.evaluate("() => window.__dgMarks")
        assert marks["poster"] < marks["widgets"] < marks["first_image"], marks
        page.wait_for_function("() => !document.querySelector('.dg-poster')", timeout=10_000)

        # the live gallery's first card is the poster's first card, with the same pictures
        first = page.locator(".dg-gallery-row").first
        assert first.locator(".dg-gallery-head b").inner_text() == ops[0]
        buttons = first.locator(".dg-gallery-add button").all_inner_texts()
        width, alts = int(pictures[0][0]), [alt for _, alt, _ in pictures[:1 + len(buttons)]]
        assert alts == ["original", *buttons]
        live = first.locator("img.dg-gallery-tile").first
        assert int(live.evaluate("(e) => e.getBoundingClientRect().width")) == width
        poster = _decode(base64.b64decode(pictures[1][2]))
        shown = Image.open(io.BytesIO(img_bytes(page, live))).convert("RGB")
        shown = np.asarray(shown.resize((poster.shape[1], poster.shape[0]),
                                        Image.Resampling.BILINEAR), dtype=np.int16)
        assert np.abs(poster - shown).mean() < 6.0  # the same DALI render, re-encoded smaller
        page.locator(".dg-gallery-row").nth(1).wait_for()  # the page goes on as usual
    finally:
        context.close()


def test_a_page_with_a_kernel_of_its_own_has_no_poster(voila_server, browser):
    server = voila_server(pool_size=0)
    context, page, sent = _open(browser, server.page_url())
    try:
        assert "dg-poster" not in sent
        page.wait_for_function("() => 'first_image' in window.__dgMarks", timeout=180_000)
        assert "poster" not in page.evaluate("() => window.__dgMarks")
    finally:
        context.close()
