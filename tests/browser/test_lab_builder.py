"""notebooks/builder.ipynb in a real JupyterLab: Run All Cells, move a slider, see the preview.

The notebook runs from a temporary copy of the repository layout it expects (``notebooks/``
next to ``gallery/samples``), so Lab's autosave never touches the repository, and its exports
go to a temporary folder (``DALI_GALLERY_EXPORT_DIR``).
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = REPO / "notebooks" / "builder.ipynb"
KERNEL_IDLE_JS = """() => Array.from(document.querySelectorAll('.jp-StatusBar-TextItem'))
    .some(e => /\\| Idle$/.test(e.textContent.trim()))"""
PROMPTS_JS = """() => Array.from(document.querySelectorAll(
    '.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')).map(e => e.textContent.trim())"""


@pytest.fixture
def lab_copy(tmp_path, monkeypatch):
    assert NOTEBOOK.exists(), "notebooks/builder.ipynb is missing"
    root = tmp_path / "root"
    (root / "notebooks").mkdir(parents=True)
    shutil.copy(NOTEBOOK, root / "notebooks" / NOTEBOOK.name)
    shutil.copytree(REPO / "gallery" / "samples", root / "gallery" / "samples")
    export = tmp_path / "export"
    export.mkdir()
    monkeypatch.setenv("DALI_GALLERY_EXPORT_DIR", str(export))  # the server's kernels inherit it
    return root, export


def test_builder_notebook_runs_and_a_slider_updates_the_preview(lab_copy, lab_server, page,
                                                                page_log, ui):
    root, export = lab_copy
    lab = lab_server(root)
    t0 = time.monotonic()
    page.goto(lab.url + "lab/tree/notebooks/builder.ipynb", wait_until="domcontentloaded")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    page.wait_for_function(KERNEL_IDLE_JS)

    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-item").filter(has=page.get_by_text("Run All Cells", exact=True)).click()
    n_code = page.evaluate(PROMPTS_JS.replace(".map(e => e.textContent.trim())", ".length"))
    page.wait_for_function(
        f"() => {{ const p = ({PROMPTS_JS})(); return p.length === {n_code} && "
        "p.every(t => /^\\[\\d+\\]:$/.test(t)); }", timeout=240_000)
    ran_s = time.monotonic() - t0
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
                          " .jp-RenderedText", has_text="Traceback")
    assert errors.count() == 0, errors.first.inner_text()
    assert (export / "my_augment.py").exists(), "the export cell did not write its module"

    builder = page.locator(".jp-OutputArea-output .dg-builder").first
    builder.scroll_into_view_if_needed()
    tile = builder.locator("img.dg-preview-tile").first
    tile.wait_for(state="visible")
    before = ui.wait_img_changed(page, None, tile, timeout_ms=90_000)
    slider = builder.locator(".dg-step-card .dg-param-angle .widget-slider:visible").first
    start = ui.slider_value(page, slider)
    moved = ui.move_slider(page, 3, slider)
    assert float(moved) == float(start) + 3
    after = ui.wait_img_changed(page, before, tile, timeout_ms=90_000)
    assert after != before
    status = builder.locator(".dg-status").first.inner_text()
    assert re.search(r"in \d+ ms", status), status
    assert not page_log.page_errors, page_log.summary()
    print(f"\nlab: builder.ipynb ran in {ran_s:.1f} s; angle {start} -> {moved}; "
          f"preview: {status}")
