"""The pipeline survives a reload and travels in a link, in the served app (issue 13).

One Voilà server with the real ``gallery.serve`` settings (pages get kernels from the pool);
every test opens its pages in browser contexts of its own, so nothing is carried by cookies or
storage: only the link. Before, reloading the page lost the whole pipeline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.widgets.share_link import MAX_LINK_CHARS, PARAM, decode
from dali_gallery.widgets.suggest import suggested_params
from tests.browser.conftest import chain, move_slider, slider_value

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]

# the suggested range is symmetric about 0: one slider, its half-width d (-d to d)
ANGLE = ".dg-step-card .dg-param-angle .widget-slider:visible"


@pytest.fixture
def new_page(browser, gallery_voila) -> Iterator[Any]:
    """``new_page(query='')``: the app in a new browser context (its own cookies and storage),
    loaded until its widgets are on screen; page errors fail the test."""
    contexts, errors = [], []

    def open_page(query: str = "") -> Any:
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(120_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(gallery_voila.page_url(query), wait_until="domcontentloaded")
        wait_app(page)
        return page

    yield open_page
    for context in contexts:
        context.close()
    assert not errors, errors


def wait_app(page) -> None:
    page.locator(".dg-share-link [data-dg-preset]").first.wait_for()
    page.locator(".dg-app-tabs > .lm-TabBar .lm-TabBar-tab", has_text="Builder").click()
    page.locator(".dg-builder .dg-seed input").first.wait_for(state="visible")


def seed(page) -> str:
    return page.locator(".dg-builder .dg-seed input").first.input_value()


def wait_chain(page, expected: list[str]) -> None:
    page.wait_for_function(
        """(n) => document.querySelectorAll('.dg-step-card').length === n""",
        arg=len(expected))
    assert chain(page) == expected


def link_value(page) -> str:
    """The ``preset`` parameter of the page's address ('' when it has none)."""
    return parse_qs(urlparse(page.url).query).get(PARAM, [""])[0]


def add_step(page, name: str) -> None:
    before = page.locator(".dg-step-card").count()
    search = page.locator(".dg-picker-search input").first
    search.fill(name)
    search.press("Enter")
    page.wait_for_function("(n) => document.querySelectorAll('.dg-step-card').length > n",
                           arg=before)


def shared_angle(page) -> Any:
    """The first step's angle in the link the page shows."""
    value = page.locator(".dg-share-link [data-dg-preset]").first.get_attribute("data-dg-preset")
    return decode(value).steps[0].params["angle"] if value else None


def move_angle(page) -> None:
    """One key press on the angle slider, pressed again if the page lost it: a press made
    while the kernel was still busy with the new card could be overwritten by its echo."""
    suggested = suggested_params(CATALOG["rotate"])["angle"]
    for _ in range(3):
        try:
            move_slider(page, 1, page.locator(ANGLE).first, timeout_ms=20_000)
        except AssertionError:  # the echo moved the handle back under the press: press again
            continue
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if shared_angle(page) not in (None, suggested):
                return
            page.wait_for_timeout(200)
    raise AssertionError(f"the angle stayed at {shared_angle(page)}")


def build_chain(page) -> tuple[list[str], str, str]:
    """rotate (angle moved off its default) + hue, a new draw: (chain, seed, angle)."""
    add_step(page, "rotate")
    move_angle(page)
    add_step(page, "hue")
    old = seed(page)
    page.locator(".dg-builder .dg-new-draw").first.click()
    page.wait_for_function(
        "(s) => document.querySelector('.dg-builder .dg-seed input').value !== s", arg=old)
    return chain(page), seed(page), slider_value(page, page.locator(ANGLE).first)


def wait_link_holds(page, steps: int, seed_value: str, timeout_s: float = 30.0) -> str:
    """Wait until the address bar's link holds that pipeline (the page's link element and
    the address bar agree, and it decodes to ``steps`` steps and that seed: a link of the
    state before the last edit agrees too, for a moment); returns the parameter."""
    deadline = time.monotonic() + timeout_s
    while True:
        page.wait_for_function(
            """(name) => {
                const v = new URL(location.href).searchParams.get(name);
                const el = document.querySelector('.dg-share-link [data-dg-preset]');
                return v && el && el.getAttribute('data-dg-preset') === v; }""",
            arg=PARAM)
        value = link_value(page)
        preset = decode(value)
        if (len(preset.steps) == steps and str(preset.seed) == seed_value) \
                or time.monotonic() > deadline:
            break
        page.wait_for_timeout(200)
    assert len(preset.steps) == steps and str(preset.seed) == seed_value
    return value


def test_a_reload_keeps_the_chain_the_parameters_and_the_seed(new_page):
    page = new_page()
    assert link_value(page) == "" and chain(page) == []
    steps, seed_value, angle = build_chain(page)
    assert steps == ["rotate", "hue"]
    value = wait_link_holds(page, 2, seed_value)
    moved = decode(value).steps[0].params["angle"]  # the suggested range, widened by a step
    assert (moved.lo, moved.hi) == (-float(angle), float(angle))
    assert moved != suggested_params(CATALOG["rotate"])["angle"]
    page.reload(wait_until="domcontentloaded")
    wait_app(page)
    wait_chain(page, steps)
    assert seed(page) == seed_value
    assert slider_value(page, page.locator(ANGLE).first) == angle
    assert page.locator(".dg-app-message").inner_text().strip() == ""


def test_the_link_opens_the_same_pipeline_elsewhere_and_nothing_is_shared_without_it(new_page):
    mine = new_page()
    steps, seed_value, angle = build_chain(mine)
    value = wait_link_holds(mine, 2, seed_value)
    # the link on the page resolves to this page with only the pipeline (no token, no state)
    href = mine.locator(".dg-share-link a[data-dg-preset]").first.evaluate("a => a.href")
    assert parse_qs(urlparse(href).query) == {PARAM: [value]}

    colleague = new_page(f"?{PARAM}={value}")
    wait_chain(colleague, steps)
    assert seed(colleague) == seed_value
    assert slider_value(colleague, colleague.locator(ANGLE).first) == angle
    assert link_value(colleague) == value

    stranger = new_page()  # the same server, no link: the default pipeline
    assert chain(stranger) == [] and seed(stranger) == "42"
    assert link_value(stranger) == ""
    # the colleague's edits do not reach the first page (each page has its own kernel)
    add_step(colleague, "contrast")
    colleague.wait_for_function(
        "(v) => new URL(location.href).searchParams.get('preset') !== v", arg=value)
    mine.wait_for_timeout(1500)
    assert chain(mine) == steps and link_value(mine) == value


@pytest.mark.parametrize("value, says", [
    ("not*base64", "must be base64url text"),
    ("eNpVUEFugzAQ", "cut short"),
    ("A" * (MAX_LINK_CHARS + 4), f"a link holds at most {MAX_LINK_CHARS}"),
])
def test_a_bad_link_says_why_and_the_app_starts_with_the_default(new_page, value, says):
    page = new_page(f"?{PARAM}={value}")
    message = page.locator(".dg-app-message .dg-error").first
    message.wait_for()
    assert "was not loaded" in message.inner_text() and says in message.inner_text()
    assert chain(page) == []
    add_step(page, "rotate")  # the app works, and the address now holds the new pipeline
    page.wait_for_function("() => new URL(location.href).searchParams.get('preset') !== null "
                           "&& document.querySelector('.dg-share-link a[data-dg-preset]')")
    assert [s.op for s in decode(link_value(page)).steps] == ["rotate"]
