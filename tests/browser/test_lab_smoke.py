"""Smoke test of the JupyterLab fixtures: open a notebook, Run > Run All Cells, see a widget."""

from __future__ import annotations

import time

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

KERNEL_IDLE_JS = """() => Array.from(document.querySelectorAll('.jp-StatusBar-TextItem'))
    .some(e => /\\| Idle$/.test(e.textContent.trim()))"""
PROMPTS_JS = """() => Array.from(document.querySelectorAll('.jp-Notebook .jp-InputArea-prompt'))
    .map(e => e.textContent.trim())"""


def write_smoke_notebook(folder):
    nb = new_notebook(
        cells=[
            new_code_cell("import ipywidgets as w\nw.IntSlider(value=7, description='smoke')"),
            new_code_cell("print('second cell', 6 * 7)"),
        ]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    path = folder / "smoke.ipynb"
    nbformat.write(nb, path)
    return path


def test_lab_runs_all_cells_and_shows_widget(tmp_path, lab_server, page, page_log):
    root = tmp_path / "root"
    root.mkdir()
    write_smoke_notebook(root)
    lab = lab_server(root)

    t0 = time.monotonic()
    page.goto(lab.url + "lab/tree/smoke.ipynb", wait_until="domcontentloaded")
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    # The toolbar's execution indicator says "idle" before any kernel exists; the status bar
    # item ("Python 3 (ipykernel) | Idle") only does once the kernel has answered.
    page.wait_for_function(KERNEL_IDLE_JS)
    opened_s = time.monotonic() - t0

    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-item").filter(has=page.get_by_text("Run All Cells", exact=True)).click()

    slider = page.locator(".jp-OutputArea-output .widget-slider")
    slider.wait_for(state="visible")
    assert slider.locator(".widget-readout").inner_text().strip() == "7"
    page.wait_for_function(f"() => ({PROMPTS_JS})().join(' ') === '[1]: [2]:'")
    page.get_by_text("second cell 42").wait_for()
    ran_s = time.monotonic() - t0 - opened_s

    assert not page_log.page_errors, page_log.summary()
    print(
        f"lab: server ready in {lab.start_s:.1f} s, kernel idle after {opened_s:.1f} s, "
        f"cells run and widget shown in {ran_s:.1f} s"
    )
