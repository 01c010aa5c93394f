"""Smoke test of the browser fixtures: the served gallery notebook renders live widgets.

It relies only on generic hooks (some ``.jupyter-widgets`` and a slider), not on what the app
shows, so it keeps working when the placeholder notebook is replaced by the real app.
"""

from __future__ import annotations

import time

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]


def test_gallery_renders_widgets(gallery_voila, page, page_log, ui):
    t0 = time.monotonic()
    ui.wait_for_voila(page, gallery_voila.page_url())
    rendered_s = time.monotonic() - t0

    assert page.locator(".jupyter-widgets").count() >= 1
    assert not page_log.page_errors, page_log.summary()
    # Nothing the page asked the server for was refused: in particular the app needs nothing
    # from /voila/files/ (which the serve settings close).
    assert not page_log.failed_responses, page_log.summary()
    # Sources are stripped (the placeholder's import line; harmless if the app has none).
    assert "import ipywidgets" not in page.content()
    print(f"voila: server ready in {gallery_voila.start_s:.1f} s, widgets in {rendered_s:.1f} s")


def test_slider_updates_image(gallery_voila, page, page_log, ui):
    ui.wait_for_voila(page, gallery_voila.page_url())
    if page.locator(".widget-slider .noUi-handle").count() == 0:
        pytest.skip("the served notebook shows no slider")
    if page.locator("img.widget-image").count() == 0:
        pytest.skip("the served notebook shows no image widget")
    before = ui.img_bytes(page)
    assert before, "image widget has no bytes"
    t0 = time.monotonic()
    ui.move_slider(page, 5)
    after = ui.wait_img_changed(page, before)
    print(f"voila: slider -> new image in {time.monotonic() - t0:.2f} s")
    assert after != before
    assert not page_log.page_errors, page_log.summary()
