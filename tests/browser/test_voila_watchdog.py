"""A served page whose kernel answers the widgets' state too late reloads itself
(widgets/page_watchdog.py), and the abandoned kernel is shut down; a page that keeps failing
stops after two reloads and says why.

The kernel is made late the way a busy server makes it: the served notebook is the real
gallery notebook with one cell before it that makes the kernel's answer to the page's
``request_states`` wait 6 s (the page waits 4 s, then falls back to loading widget by widget,
which never finishes for the app: "Loading widget..." for good without the watchdog).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from dali_gallery.gallery.serve import GALLERY_NOTEBOOK
from dali_gallery.widgets.page_ready import LATE_LOG
from dali_gallery.widgets.page_watchdog import NOTE_CLASS, RELOADS, WATCH_ENV
from tests.browser.conftest import Server, kernel_pids

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(420)]

WATCH_S = 8
UPLOAD = ".dg-app-images .dg-upload"
_LATE_CELL = """import os, time
from ipywidgets import Widget
_answer = Widget._handle_control_comm_msg.__func__
def _late(cls, msg):
    # late for the first {late} page(s) this server serves (the count is kept in a file)
    if msg.get("content", {{}}).get("data", {{}}).get("method") == "request_states":
        with open({count!r}, "a+") as f:
            f.seek(0)
            served = len(f.read())
            f.write("x")
        if served < {late}:
            time.sleep(6)
    _answer(cls, msg)
Widget._handle_control_comm_msg = classmethod(_late)
"""


def late_notebook(folder: Path, late: int) -> Path:
    """The gallery notebook, its kernels late for the first ``late`` pages."""
    notebook = json.loads(GALLERY_NOTEBOOK.read_text())
    cell = {"cell_type": "code", "execution_count": None, "id": "late-kernel", "metadata": {},
            "outputs": [], "source": _LATE_CELL.format(late=late, count=str(folder / "count"))}
    notebook["cells"].insert(0, cell)
    path = folder / "gallery.ipynb"
    path.write_text(json.dumps(notebook))
    return path


def started_kernels(log: str) -> list[str]:
    return re.findall(r"Kernel started: ([0-9a-f-]{36})", log)


def open_late(voila_server, page, folder: Path,
              late: int) -> tuple[Server, list[str], float]:
    """Serve the gallery late for the first ``late`` pages (a kernel started for each page)
    and open it; returns the server, the list the page's loads are recorded in and the
    ``time.monotonic()`` the page was asked for."""
    server = voila_server(notebook=late_notebook(folder, late), pool_size=0,
                          extra_env={WATCH_ENV: str(WATCH_S)})
    loads: list[str] = []
    page.on("load", lambda p: loads.append(p.url))
    asked = time.monotonic()
    page.goto(server.page_url(), wait_until="domcontentloaded")
    return server, loads, asked


def test_a_page_left_without_its_widgets_reloads_and_its_first_kernel_goes(
        voila_server, page, tmp_path):
    server, loads, t0 = open_late(voila_server, page, tmp_path, late=1)
    page.locator(UPLOAD).first.wait_for(state="attached", timeout=180_000)
    shown_s = time.monotonic() - t0
    log = server.log_tail(200_000)
    first, second = started_kernels(log)[:2]
    assert len(loads) == 2, (loads, log[-3000:])  # one reload, then the app
    assert shown_s > WATCH_S, shown_s  # not before the watchdog's time was up
    assert LATE_LOG in log  # the server's log says the kernel was late
    deadline = time.monotonic() + 60  # the abandoned page's kernel is shut down
    while f"Kernel shutdown: {first}" not in server.log_tail(200_000):
        assert time.monotonic() < deadline, server.log_tail(4000)
        time.sleep(0.5)
    assert len(kernel_pids(server)) == 1
    assert second not in re.findall(r"Kernel shutdown: (\S+)", server.log_tail(200_000))
    # the reloaded page works: the app's tabs are there, and no note of a failure is left
    assert page.locator(".dg-app-tabs").count() == 1
    assert page.locator(f".{NOTE_CLASS}.dg-error").count() == 0
    # the count starts again once the script sees the app (it looks every 0.5 s)
    page.wait_for_function("() => sessionStorage.length === 0", timeout=10_000)


def test_a_page_that_never_gets_its_widgets_stops_after_two_reloads_and_says_so(
        voila_server, page, tmp_path):
    server, loads, _ = open_late(voila_server, page, tmp_path, late=99)
    note = page.locator(f".{NOTE_CLASS}.dg-error").first
    note.wait_for(timeout=240_000)
    page.wait_for_function(
        "(cls) => /times in a row/.test(document.querySelector('.' + cls).textContent)",
        arg=NOTE_CLASS, timeout=120_000)
    text = note.inner_text()
    assert f"{RELOADS} times in a row" in text and "Reload the page" in text, text
    page.wait_for_timeout(WATCH_S * 1000 + 2000)  # and it does not reload again
    assert len(loads) == RELOADS + 1, loads
    assert page.locator(UPLOAD).count() == 0
    assert len(started_kernels(server.log_tail(200_000))) == RELOADS + 1
