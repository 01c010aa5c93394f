"""``dali-gallery bench browser``: the served app as a visitor sees it, in a real Chromium.

A Voilà server with the real ``serve.voila_command`` settings (the pool of kernels started ahead
included) and headless Chromium driven by Playwright. Measured with the page's own clock
(``performance.now()``, from the start of navigation): page open to the first widget, to the
poster (a pooled kernel's first cards, in the page itself: :mod:`.poster`) and to the first live
gallery image, for a first visit (new browser context: nothing cached; a new tab of an
open window, and once a page opening a new window) and for a reload,
and to the whole gallery; in the builder, structural edits and mode changes without and with a
policy in the chain (:mod:`.browser_edits`), and a parameter change (slider key press), each to
the new preview. Each figure is reported beside the
engine's own render time (the status lines of the gallery and the builder) and the machine's
load average, since the page, the server and the kernels share the machine's cores.

Needs Playwright (Python) and a Chromium (``$DALI_GALLERY_CHROMIUM``, else ``chromium`` on the
PATH); without them the section says so and is skipped.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.pipeline_cache import CACHE_ENV
from dali_gallery.widgets.style import param_class

from .bench_inputs import standard_preset
from .browser_edits import TILE, builder_edits, engine_ms, settle, summary
from .gallery_bench import measure_slider_latency
from .page_request import READY_LOG
from .serve import DEFAULT_IMAGES_DIR, GALLERY_NOTEBOOK, voila_command

FIRST_IMAGE_TARGET_S = 2.0
"""Page open to the first gallery picture on the 2-core CPU machine (issue 13). Reported for
the first picture on screen (``first_picture_s``: the pooled kernel's poster, ``poster_s``, see
:mod:`.poster`, else a live tile) and for the first live tile (``first_image_s``)."""
POOL = 2
"""Kernels started ahead (``dali-gallery serve --pool-size``), measured against none."""
SHUTDOWN_LOG = "Kernel shutdown:"
"""What Voilà logs when a kernel is shut down (a closed page's, here)."""
CHROMIUM_ENV = "DALI_GALLERY_CHROMIUM"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 # nothing but this machine: other hosts fail at name resolution (Voilà's page
                 # links a CDN stylesheet), as without internet. Not with Playwright's request
                 # routing: every one of a page's ~190 requests then went through this process
                 # and back, which cost a page open 0.6-0.7 s on the 2-core machine.
                 "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost"]
QUIET_BUSY = 0.15
"""The machine counts as quiet below this share of its cores busy (see :func:`_quiet`)."""
MAGNITUDE = ".dg-step-card .{} .widget-slider:visible"
"""A step's slider of one parameter (a range symmetric about the neutral value: its
half-width slider; an asymmetric one: its lower handle)."""

_MARKS_JS = """(() => {
  const marks = window.__dgMarks = {};
  const mark = (k) => { if (!(k in marks)) marks[k] = performance.now(); };
  document.addEventListener("load", (e) => {
    const t = e.target;
    if (t.tagName === "IMG" && t.classList.contains("dg-gallery-tile") && t.naturalWidth > 0)
      mark("first_image");
    if (t.tagName === "IMG" && t.classList.contains("dg-poster-tile") && t.naturalWidth > 0)
      mark("poster");
  }, true);
  new MutationObserver(() => {
    if (document.querySelector(".jupyter-widgets")) mark("widgets");
    const s = document.querySelector(".dg-gallery-status");
    if (s && / operators in /.test(s.textContent)) mark("gallery");
  }).observe(document, {subtree: true, childList: true, characterData: true});
})();"""


def _chromium() -> str | None:
    return os.environ.get(CHROMIUM_ENV) or shutil.which("chromium") or shutil.which(
        "chromium-browser")


@contextlib.contextmanager
def _server(workdir: Path, pool_size: int) -> Iterator[tuple[str, Path]]:
    """A Voilà server on the gallery notebook with the served settings, private Jupyter
    folders, its log in ``workdir``; stopped (kernels included) on the way out. Its pipeline
    cache starts empty: the builder's edits make chains it has not seen, whose pipelines are
    traced as a user's first edits are, not loaded from what an earlier run left."""
    port = _free_port()
    cmd = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=port,
                        pool_size=pool_size)
    env = dict(os.environ)
    env[CACHE_ENV] = str(workdir / "pipeline-cache")
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        env[name] = str(workdir / name.lower())
    env.pop("JUPYTER_TOKEN", None)
    log = workdir / "voila.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, cwd=GALLERY_NOTEBOOK.parent, env=env, stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        from .serve import _wait_until_ready

        if not _wait_until_ready("127.0.0.1", port, proc, timeout=120):
            raise RuntimeError(f"the Voilà server did not start: {log.read_text()[-2000:]}")
        yield f"http://127.0.0.1:{port}/", log
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pool_ready(log: Path) -> int:
    """Kernels started ahead that have run the app so far (each says so in the log)."""
    return _logged(log, READY_LOG)


def _logged(log: Path, line: str) -> int:
    """How many times the server's log holds ``line`` so far."""
    return log.read_text(errors="replace").count(line)


def _wait_pool(log: Path, ready: int, timeout: float = 180.0) -> bool:
    """Until ``ready`` pooled kernels have run the app: the next visitor gets one that is
    ready, as on a server that has been up a while. Nothing to wait for without a pool.
    Whether they all had within ``timeout``."""
    deadline = time.monotonic() + timeout
    while _pool_ready(log) < ready and time.monotonic() < deadline:
        time.sleep(0.3)
    time.sleep(1.0)  # the kernel's last output reaches the server
    return _pool_ready(log) >= ready


def _context(browser: Any) -> Any:
    """A new browser context: nothing cached, no cookies, no storage (a first visit)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(180_000)
    context.add_init_script(_MARKS_JS)
    return context


def _tab(context: Any) -> Any:
    """A new tab of a browser window that is already open, as a visitor opens a link. The
    context's first page is its window: Chromium makes the window's own UI (~1.6 s of CPU on
    the 2-core machine) as it opens, which would land in the middle of the page's load; the
    window is opened first and left to settle, and stays open behind the tab."""
    context.new_page()
    _quiet()
    return context.new_page()


def _quiet(timeout: float = 10.0, window: float = 0.2) -> bool:
    """Until the machine's cores are nearly idle for two windows in a row (Linux's
    ``/proc/stat``; elsewhere a fixed 2 s wait); False if they never were."""
    stat = Path("/proc/stat")
    if not stat.is_file():
        time.sleep(2.0)
        return False

    def busy() -> float:
        def sample() -> tuple[int, int]:
            ticks = [int(x) for x in stat.read_text().split("\n", 1)[0].split()[1:]]
            return sum(ticks), ticks[3] + ticks[4]  # all, idle + iowait
        total, idle = sample()
        time.sleep(window)
        total2, idle2 = sample()
        return 1.0 - (idle2 - idle) / max(1, total2 - total)

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if busy() < QUIET_BUSY and busy() < QUIET_BUSY:
            return True
    return False


def _open(page: Any, url: str | None) -> dict[str, Any]:
    """Page open (or reload) until the whole gallery is shown: the page's marks in seconds."""
    if url is None:
        page.reload(wait_until="domcontentloaded")
    else:
        page.goto(url, wait_until="domcontentloaded")
    page.wait_for_function("() => window.__dgMarks && 'gallery' in window.__dgMarks",
                           timeout=600_000)
    marks = page.evaluate("() => window.__dgMarks")
    status = page.locator(".dg-gallery-status").inner_text()
    engine = re.search(r"operators in ([\d.]+) s \(first in ([\d.]+) s\)", status)
    poster = marks.get("poster")
    return {"widgets_s": round(marks["widgets"] / 1000, 2),
            "poster_s": round(poster / 1000, 2) if poster is not None else None,
            "first_picture_s": round(min(marks["first_image"], poster or math.inf) / 1000, 2),
            "first_image_s": round(marks["first_image"] / 1000, 2),
            "gallery_s": round(marks["gallery"] / 1000, 2),
            "engine_gallery_s": float(engine.group(1)) if engine else None,
            "engine_first_row_s": float(engine.group(2)) if engine else None,
            "load_average": round(os.getloadavg()[0], 2)}


def _device(page: Any) -> str:
    """What the page says its previews are rendered on."""
    text = page.locator(".dg-app").first.inner_text()
    m = re.search(r"rendered live by DALI on (.+?)\. ", text)
    return m.group(1) if m else "unknown"


def _visits(browser: Any, url: str, log: Path, visits: int, pool: int) -> dict[str, Any]:
    """``visits`` first visits (each a new browser context, the page a new tab of an open
    window; with a pool, on a server whose pool is full again, each page closed as a tab is,
    which ends its kernel), the last one reloaded once (its browser cache warm); then one
    first visit whose page opens a new window (``new_window``: Chromium's window start-up
    shares the machine with the page's load)."""
    opens, reload, ready = [], None, pool
    for k in range(visits):
        _wait_pool(log, ready)
        context = _context(browser)
        try:
            page = _tab(context)
            opens.append(_open(page, url))
            ready += bool(pool)  # its replacement
            if k == visits - 1:
                _wait_pool(log, ready)
                reload = _open(page, None)
                ready += bool(pool)
                reload["device"] = _device(page)
            _close(page, log)
        finally:
            context.close()
    _wait_pool(log, ready)
    context = _context(browser)
    try:  # once more, the page opening its own window (see _tab): reported beside
        page = context.new_page()
        window = _open(page, url)
        ready += bool(pool)
        _close(page, log)
    finally:
        context.close()
    pictures = [o["first_picture_s"] for o in opens]
    live = [o["first_image_s"] for o in opens]
    return {"visits": opens, "reload": reload, "first_picture_s": summary(pictures),
            "within_target": max(pictures) <= FIRST_IMAGE_TARGET_S,
            "first_image_s": summary(live), "live_within_target": max(live) <= FIRST_IMAGE_TARGET_S,
            "new_window": window, "ready": ready}


def _close(page: Any, log: Path, timeout: float = 10.0) -> None:
    """Close the page as a tab closes: it posts its kernel's shutdown as it unloads. A browser
    delivers that post after the tab is gone; closing the browser context at once would drop
    it, so wait for the server to log the shutdown."""
    before = _logged(log, SHUTDOWN_LOG)
    page.close(run_before_unload=True)
    deadline = time.monotonic() + timeout
    while _logged(log, SHUTDOWN_LOG) == before and time.monotonic() < deadline:
        time.sleep(0.1)


def _edits(browser: Any, url: str, log: Path, moves: int, ready: int) -> dict[str, Any]:
    """Edits in the builder of a page opened on a full pool, timed once the pool has its
    page's kernel back (``ready`` + 1): its replacement starts 10 s after the page took it,
    which fell among the edits (a kernel starting Python, DALI and the app beside them)."""
    context = _context(browser)
    try:
        page = _tab(context)
        _open(page, url)
        _wait_pool(log, ready + 1)
        page.locator(".dg-app-tabs > .lm-TabBar .lm-TabBar-tab", has_text="Builder").click()
        page.locator(TILE).first.wait_for(state="visible", timeout=120_000)
        ops = [step.op for step in standard_preset().steps[:3]]  # the bench's usual chain
        magnitude = CATALOG[ops[0]].magnitude  # the parameter a user moves first
        edits = builder_edits(page, ops, magnitude)
        slider = page.locator(MAGNITUDE.format(param_class(magnitude))).first
        settle(page)
        param = measure_slider_latency(page, slider, TILE, moves=moves,
                                       engine_ms=lambda: engine_ms(page))
        _close(page, log)
    finally:
        context.close()
    param.pop("samples_ms", None)
    return {**edits, "parameter_change": param}


def bench_browser(device: str, quick: bool) -> dict[str, Any]:
    """The served app in Chromium: page open, whole gallery, edits to previews (see module).
    ``device`` is not used: the served kernels pick theirs ('auto'); ``reload.device`` says
    which. ``quick``: the pooled server only, fewer visits and slider moves."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        return {"skipped": "playwright (Python) is not installed: pip install playwright"}
    chromium = _chromium()
    if chromium is None:
        return {"skipped": f"no Chromium found (set ${CHROMIUM_ENV} or put chromium on PATH)"}
    out: dict[str, Any] = {"target_first_image_s": FIRST_IMAGE_TARGET_S,
                           "cpu_cores": os.cpu_count()}
    pools = [POOL] if quick else [POOL, 0]
    with sync_playwright() as pw, tempfile.TemporaryDirectory(prefix="dg-browser-") as tmp:
        try:
            browser = pw.chromium.launch(executable_path=chromium, headless=True,
                                         args=CHROMIUM_ARGS)
        except Error as e:
            return {"skipped": f"Chromium did not start: {str(e).splitlines()[0]}"}
        try:
            for pool in pools:
                workdir = Path(tmp) / f"pool{pool}"
                workdir.mkdir()
                with _server(workdir, pool) as (url, log):
                    visits = _visits(browser, url, log, 2 if quick else 4, pool)
                    if pool:
                        _wait_pool(log, visits["ready"])
                        visits["edits"] = _edits(browser, url, log, 10 if quick else 30,
                                                 visits["ready"])
                    visits.pop("ready")
                    out[f"pool_size_{pool}"] = visits
        finally:
            browser.close()
    return out


if __name__ == "__main__":  # python -m dali_gallery.gallery.browser_bench [--quick]
    import json

    print(json.dumps(bench_browser("cpu", "--quick" in sys.argv), indent=2))
