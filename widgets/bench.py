"""Latency of the widget layer: "slider value changed -> new preview bytes ready".

Measured through a real :class:`Builder` (slider ``.value`` set, model validation, history,
scheduler hand-off to the worker thread, DALI render, JPEG encoding, tile update) against a
bare ``engine.render`` of the same preset on the same engine, interleaved in the same run.
Encoding is reported separately: it is display cost the bare engine does not pay.
``dali-gallery bench`` runs :func:`bench_widget` as its ``widget`` section.
"""

from __future__ import annotations

import time
from typing import Any

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.preset import Preset, load_file
from dali_gallery.pipelines.timing import median_ms, p95_ms

from .builder import Builder
from .images_panel import SAMPLES_DIR

CHAIN = SAMPLES_DIR / "bench_chain.json"
"""The bench's standard chain (shared with ``dali-gallery bench``); the magnitude of its first
step, fixed at 0 to start, is the slider being dragged."""


def _chain() -> tuple[Preset, str]:
    """The standard chain with its first step's magnitude fixed, and that parameter's name."""
    preset = load_file(CHAIN)
    first = preset.steps[0]
    name = CATALOG[first.op].magnitude
    if name is None:
        raise ValueError(f"{CHAIN.name}: the first step ({first.op}) has no magnitude to drag")
    first.params[name] = 0.0
    return preset, name


def bench_widget(device: str, quick: bool) -> dict[str, Any]:
    """Median ms from a slider change to new tile bytes, vs the bare engine render."""
    reps = 10 if quick else 40
    preset, name = _chain()
    b = Builder(images=SAMPLES_DIR, preset=preset, device=device, draws=3, max_images=6,
                size=256, thumbnails=False)
    try:
        b.wait_idle()
        slider = b.cards[0].controls[name].fixed
        slider.value = 1.0  # warm the run-time path once
        b.wait_idle()
        builds = b.engine.builds
        stats_before = b.scheduler.stats.rendered
        widget, engine, encode, renders = [], [], [], []
        for k in range(reps):
            value = round(-45.0 + 90.0 * k / max(1, reps - 1), 2)
            t = time.perf_counter()
            slider.value = value
            if not b.wait_idle(60):
                raise RuntimeError(f"the builder did not finish a render within 60 s ({device})")
            result = b.last_result
            if result is None or result.request.preset.steps[0].params[name] != value:
                raise RuntimeError("the builder shows a render of another slider value")
            widget.append(result.done_at - t)
            encode.append(result.encode_ms / 1000)
            renders.append(result.render.ms / 1000)
            same = b.preset
            with b.renderer.lock:
                t = time.perf_counter()
                b.engine.render(same, draws=3, images=list(range(result.shape[0])))
                engine.append(time.perf_counter() - t)
        w_ms, e_ms, enc_ms = median_ms(widget), median_ms(engine), median_ms(encode)
        return {
            "images": f"{result.shape[0]} samples, longest side 256, x {result.shape[1]} draws",
            "slider_to_bytes_ms": w_ms,
            "slider_to_bytes_p95_ms": p95_ms(widget),
            "engine_render_ms": e_ms,
            "engine_render_in_widget_ms": median_ms(renders),
            "encode_ms": enc_ms,
            "overhead_ms": round(w_ms - e_ms - enc_ms, 2),
            "ratio_vs_engine_plus_encode": round(w_ms / (e_ms + enc_ms), 3),
            "ratio_vs_engine_excluding_encode": round((w_ms - enc_ms) / e_ms, 3),
            "target_ratio": 1.2,
            "builds_during_drag": b.engine.builds - builds,
            "renders": b.scheduler.stats.rendered - stats_before,
        }
    finally:
        b.close()
