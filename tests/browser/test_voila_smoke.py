"""Smoke test of the browser fixtures: the served gallery notebook renders live widgets, asks
nothing of the server that is refused, and shows no source code.

It relies only on generic hooks (``.jupyter-widgets``), not on what the app shows; what the app
does is tested in ``test_voila_app.py``.
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
    # The browser reaches this machine only: Voilà's page links a CDN stylesheet, and that
    # request failed in the browser (other hosts do not resolve: CHROMIUM_ARGS), it went nowhere.
    assert any("cdn.jsdelivr.net" in url for url in page_log.blocked), page_log.summary()
    # Sources are stripped (the placeholder's import line; harmless if the app has none).
    assert "import ipywidgets" not in page.content()
    print(f"voila: server ready in {gallery_voila.start_s:.1f} s, widgets in {rendered_s:.1f} s")
