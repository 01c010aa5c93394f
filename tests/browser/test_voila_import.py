"""The served app in a real Chromium: paste a torchvision pipeline into the builder's Import
tab, see it rendered by DALI with the parity report, export it; pasted code that tries to run
something is refused in the page and changes nothing."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

TILE = ".dg-builder img.dg-preview-tile"
PIPELINE = """import torchvision.transforms as T

train_transform = T.Compose([
    T.RandomResizedCrop(160),
    T.RandomHorizontalFlip(),
    T.RandomGrayscale(p=0.5),
    T.ToTensor(),
    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])
"""
SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


@pytest.fixture(scope="module")
def app(gallery_voila, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(60_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(gallery_voila.page_url(), wait_until="domcontentloaded")
    page.locator(".dg-app-tabs").first.wait_for(timeout=180_000)
    yield page, errors
    context.close()


def open_import(page) -> None:
    page.locator(".dg-app-tabs > .lm-TabBar .lm-TabBar-tab", has_text="Builder").click()
    page.locator(".dg-builder .lm-TabBar-tab", has_text="Import").click()
    page.locator(".dg-import-text textarea").wait_for(state="visible")


def test_paste_import_see_the_parity_report_and_export(app, ui):
    page, errors = app
    open_import(page)
    page.locator(TILE).first.wait_for(state="visible", timeout=120_000)
    before = ui.img_bytes(page, page.locator(TILE).first)
    page.locator(".dg-import-text textarea").fill(PIPELINE)
    t0 = time.monotonic()
    page.locator(".dg-import-button").click()
    result = page.locator(".dg-import-result")
    result.get_by_text("5 of 5 transforms imported from torchvision").wait_for()
    assert "RandomResizedCrop" in result.inner_text()
    assert "identical" in result.inner_text()  # RandomHorizontalFlip's verdict
    # the preview now renders the imported chain with DALI: 160x160 crops
    ui.wait_img_changed(page, before, page.locator(TILE).first, timeout_ms=120_000)
    tile = page.locator(TILE).first
    page.wait_for_function("(el) => el.naturalWidth === 160 && el.naturalHeight === 160",
                           arg=tile.element_handle(), timeout=60_000)
    # the parity report arrives from its worker thread: both outputs, the diff, the verdict
    parity = page.locator(".dg-parity")
    parity.wait_for(timeout=240_000)
    steps = page.locator(".dg-parity-step")
    assert steps.count() == 4  # crop, flip, grayscale, normalize
    assert page.locator(".dg-parity-step[data-holds='False']").count() == 0
    flip = steps.filter(has_text="RandomHorizontalFlip")
    assert "bit-identical" in flip.inner_text()
    assert flip.locator("img").count() >= 4  # input, torchvision, DALI, difference
    assert "torchvision (CPU)" in page.locator(".dg-timing").inner_text()
    report_s = time.monotonic() - t0
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("() => document.querySelector('.dg-import').scrollIntoView()")
    page.wait_for_timeout(300)
    page.screenshot(path=str(SCREENSHOTS / "import.png"))
    # and the Export tab has the DALI training module of the imported pipeline
    page.locator(".dg-app-tabs > .lm-TabBar .lm-TabBar-tab", has_text="Export").click()
    code = page.locator(".dg-export-code:visible").first
    code.wait_for()
    page.wait_for_function("(el) => el.innerText.includes('fn.random_resized_crop')",
                           arg=code.element_handle(), timeout=60_000)
    assert "crop_mirror_normalize" in code.inner_text()
    print(f"\nimport + parity report in the browser: {report_s:.1f} s")
    assert not errors, errors


def test_code_that_tries_to_run_is_refused_in_the_page(app, ui, tmp_path):
    page, errors = app
    open_import(page)
    canary = tmp_path / "ran"
    page.locator(".dg-import-text textarea").fill(
        f"import torchvision.transforms as T\nT.Compose([__import__('os').system("
        f"'touch {canary}')])")
    page.locator(".dg-import-button").click()
    status = page.locator(".dg-import-status")
    status.get_by_text("not imported, nothing was run or changed").wait_for()
    assert "'__import__'" in status.inner_text() and "line 2" in status.inner_text()
    assert not canary.exists()
    # the imported pipeline is still the builder's
    assert "5 of 5 transforms" in page.locator(".dg-import-result").inner_text()
    assert not errors, errors
