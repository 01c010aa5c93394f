"""The builder's edits in the served app, each reaching the preview (issue 13): steps added
from the picker, disabled and enabled, duplicated, moved and removed, without and with a
policy in the chain, and a parameter switched between fixed, range and list. Driven by the
browser bench's own flow (:mod:`gallery.browser_edits`), so what the bench times is what this
test proves works; the times themselves are the bench's to judge, not this test's."""

from __future__ import annotations

import pytest

from dali_gallery.gallery.browser_edits import POLICY, builder_edits
from tests.browser.conftest import chain

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

OPS = ["rotate", "brightness_contrast", "hsv"]


def test_every_builder_edit_reaches_the_preview(browser, gallery_voila):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(120_000)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(gallery_voila.page_url(), wait_until="domcontentloaded")
        page.locator(".dg-app-tabs > .lm-TabBar .lm-TabBar-tab", has_text="Builder").click()
        page.locator(".dg-builder .dg-picker-search input").first.wait_for(state="visible")
        assert chain(page) == []
        found = builder_edits(page, OPS, "angle")
        assert chain(page) == [*OPS, POLICY]  # every edit left the chain it should
    finally:
        context.close()
    assert not errors, errors
    card = ["disable", "enable", "duplicate", "move up", "remove"]
    assert [e["edit"] for e in found["no_policy"]["edits"]] == [f"add {o}" for o in OPS] + card
    assert [e["edit"] for e in found["with_policy"]["edits"]] == [f"add {POLICY}"] + card
    # the picker's rotate starts with a range
    assert [e["edit"] for e in found["mode_change"]["edits"]] == [
        "angle: fixed", "angle: range", "angle: list", "angle: range"]
    every = [e for group in ("no_policy", "with_policy", "mode_change")
             for e in found[group]["edits"]]
    # each timed from its press to a new picture, and rendered by the engine (its status line)
    assert all(e["ms"] > 0 and e["engine_ms"] is not None for e in every), every
