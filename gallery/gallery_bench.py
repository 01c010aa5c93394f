"""``dali-gallery bench`` sections of the gallery layer.

``gallery``: the full gallery render as the page sees it (every operator this device can run x 4
magnitudes x 4 images of 256x256, DALI rows plus the JPEG strips and widgets), from the moment
the images are set, in a new view and engine each time:

* ``cold``: nothing cached (every pipeline traced: the very first page load), in a process that
  started the policies' trace worker and CuPy's warm-up before its imports, as the served
  notebook's kernel does (:func:`pipelines.trace_ahead.prestart`; ``dali-gallery bench`` calls
  it first);
* ``warm``: the gallery again in the same process (new images, a cell run again, another view
  of the kernel): the pipelines the last gallery's engine let go are kept built
  (:mod:`pipelines.kept_pipelines`) and taken as they are;
* ``warm_loaded``: a new engine in a process that keeps none: every pipeline loaded from the
  disk cache (deserialized and built), as the first gallery of a pre-started kernel does;
* ``warm_loaded.new_kernel`` (not ``--quick``): the same in fresh processes, imports apart
  (:mod:`.fresh_bench`);
* ``cold_new_kernel`` (not ``--quick``): the very first page, a fresh process on an empty
  cache, with the policies' trace worker started ahead of the imports (the served notebook)
  and with the view (:func:`.fresh_bench.new_kernel_cold`).

Each warm figure (the median of three, once with ``quick``; a first, recorded run is not
timed) alternates with its floor, plain DALI doing the same DALI work
(:func:`pipelines.dali_record.replay`: the same pipelines, fed and run as often, the outputs
copied to the host; those the gallery took built are built before plain DALI's clock starts,
the others inside it): ``plain_dali_s`` and ``over_plain_dali``.
``measure_slider_latency`` (not a bench section: it needs Chromium and Playwright) measures
slider input -> changed preview ``<img>`` in a real browser; the browser tests call it and so
can any script.
"""

from __future__ import annotations

import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dali_gallery.pipelines.dali_record import DaliWork, recording, replay
from dali_gallery.pipelines.kept_pipelines import KEPT
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.timing import p95

from .bench_inputs import bench_images
from .fresh_bench import new_kernel, new_kernel_cold
from .gallery_run import render_gallery

GALLERY_TARGET_S = {"cpu": {"cold": 15.0, "warm": 15.0}, "gpu": {"cold": 3.0, "warm": 1.0}}
"""Full-gallery targets, cold and warm: the 2-core CPU machine, and an H100/H200."""


def bench_gallery(device: str, quick: bool) -> dict[str, Any]:
    """The full gallery cold, warm and warm_loaded (see the module docstring), each warm one
    alternating with plain DALI doing its DALI work (three times each; ``quick``: once)."""
    images = bench_images(256, 4)
    with tempfile.TemporaryDirectory(prefix="dali-gallery-bench-cache-") as folder:
        cache = PipelineCache(folder)
        KEPT.clear()
        cold = render_gallery(device, images, cache)
        runs: dict[str, tuple[dict[str, Any], DaliWork, list[float], list[float]]] = {}
        for name in ("warm", "warm_loaded"):  # recorded (serializing what it notes), not timed
            if name == "warm_loaded":
                KEPT.clear()  # shut down before the clock starts
            with recording() as work:
                runs[name] = (render_gallery(device, images, cache), work, [], [])
        for _ in range(1 if quick else 3):
            for name, (_, work, walls, plain) in runs.items():
                if name == "warm_loaded":
                    KEPT.clear()
                walls.append(render_gallery(device, images, cache).get("total_s", float("inf")))
                plain.append(replay(work))
        loaded_work = runs["warm_loaded"][1]
        if not quick:  # a new kernel's page: fresh processes on this cache
            loaded_work.save(Path(folder) / "work.npz")
            runs["warm_loaded"][0]["new_kernel"] = new_kernel(device, folder,
                                                             Path(folder) / "work.npz")
        KEPT.clear()
    out: dict[str, Any] = {"images": "4x256x256", "cold": cold}
    if not quick:
        out["cold_new_kernel"] = new_kernel_cold(device)
    target = GALLERY_TARGET_S[device]
    for name, (result, work, walls, plain) in runs.items():
        result["total_s"] = statistics.median(walls)  # the recorded run is not timed
        result["walls_s"] = walls
        result["plain_dali_s"] = [round(s, 3) for s in plain]
        result["over_plain_dali"] = round(statistics.median(walls) / statistics.median(plain), 2)
        result["plain_dali_work"] = {
            "pipelines": len(work.pipelines), "runs": work.runs,
            "built_before_the_clock": sum(p.prebuilt for p in work.pipelines),
            "not_replayed": {"pipelines_with_python_operators": work.not_serializable,
                             "their_runs": work.runs_not_replayed,
                             "failed_runs": work.runs_failed}}
        out[name] = result
        out[f"{name}_within_target"] = statistics.median(walls) <= target["warm"]
    out["target_s"] = target
    out["cold_within_target"] = cold.get("total_s", float("inf")) <= target["cold"]
    return out


# ---- browser latency ------------------------------------------------------------------------

_IMG_KEY_JS = """async (el) => {
    const src = el.currentSrc || el.src;
    if (!src) return null;
    const buf = new Uint8Array(await (await fetch(src)).arrayBuffer());
    let h = 0;
    for (let i = 0; i < buf.length; i++) { h = (h * 31 + buf[i]) | 0; }
    return buf.length + ":" + h;
}"""
_WATCH_JS = """([sel]) => {
    const img = document.querySelector(sel);
    window.__dgSrc = img ? img.src : null;
    window.__dgChanged = null;
    window.__dgKey = null;
    if (window.__dgObs) window.__dgObs.disconnect();
    if (!img) return false;
    document.addEventListener("keydown", () => {
        if (window.__dgKey === null) window.__dgKey = performance.now();
    }, {capture: true, once: true});
    window.__dgObs = new MutationObserver(() => {
        if (window.__dgChanged === null && img.src !== window.__dgSrc) {
            window.__dgChanged = performance.now();
        }
    });
    window.__dgObs.observe(img, {attributes: true, attributeFilter: ["src"]});
    return true;
}"""


def _direction(handle: Any, k: int, previous: int) -> int:
    """Small back-and-forth moves (3 one way, 3 back), turning away from a close bound."""
    now, lo, hi = (float(handle.get_attribute(a) or 0)
                   for a in ("aria-valuenow", "aria-valuemin", "aria-valuemax"))
    direction = -previous if k and k % 3 == 0 else previous
    margin = (hi - lo) / 20
    if now >= hi - margin:
        return -1
    if now <= lo + margin:
        return 1
    return direction


def measure_slider_latency(page: Any, slider: Any, image_selector: str, *, moves: int = 30,
                           engine_ms: Callable[[], float | None] | None = None,
                           timeout_ms: int = 30_000, pause_ms: int = 150) -> dict[str, Any]:
    """Slider input -> changed preview, as the user sees it, in a Playwright ``page``.

    Presses an arrow key on the handle of ``slider`` (a ``.widget-slider`` locator) ``moves``
    times; each sample is the page's own clock from the keydown to the ``<img>`` matching
    ``image_selector`` getting a new ``src``. ``engine_ms()`` (optional) reads the engine's
    render time of the same move (e.g. from the builder's status line)."""
    handle = slider.locator(".noUi-handle").first
    latencies: list[float] = []
    engine: list[float] = []
    direction = 1
    for k in range(moves):
        direction = _direction(handle, k, direction)
        if not page.evaluate(_WATCH_JS, [image_selector]):
            raise AssertionError(f"no image matches {image_selector!r}")
        handle.focus()
        handle.press("ArrowRight" if direction > 0 else "ArrowLeft")
        page.wait_for_function("() => window.__dgChanged !== null", timeout=timeout_ms)
        latencies.append(page.evaluate("() => window.__dgChanged - window.__dgKey"))
        if engine_ms is not None:
            value = engine_ms()
            if value is not None:
                engine.append(value)
        page.wait_for_timeout(pause_ms)  # let any trailing render land before the next move
    out: dict[str, Any] = {
        "moves": moves,
        "median_ms": round(statistics.median(latencies), 1),
        "p95_ms": round(p95(latencies), 1),
        "max_ms": round(max(latencies), 1),
        "samples_ms": [round(v, 1) for v in latencies],
    }
    if engine:
        out["engine_median_ms"] = round(statistics.median(engine), 1)
        out["engine_p95_ms"] = round(p95(engine), 1)
    return out


def image_key(page: Any, selector: str) -> str | None:
    """A short fingerprint of the bytes behind an ``<img>`` (fetched inside the page)."""
    return page.locator(selector).first.evaluate(_IMG_KEY_JS)
