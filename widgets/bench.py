"""Latency of the widget layer: "slider value changed -> new preview bytes ready".

Measured through a real :class:`Builder` (slider ``.value`` set, model validation, history,
scheduler hand-off to the worker thread, DALI render, JPEG encoding, tile update) against a
bare ``engine.render`` of the same preset on the same engine, interleaved in the same run.
Encoding is reported separately: it is display cost the bare engine does not pay. The gallery
registers :func:`bench_widget` as the ``widget`` section of ``dali-gallery bench``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from dali_gallery.pipelines.preset import load

from .builder import Builder
from .images_panel import SAMPLES_DIR

CHAIN = [
    {"op": "rotate", "params": {"angle": 0.0, "keep_size": True}},
    {"op": "brightness_contrast", "params": {"brightness": {"uniform": [0.8, 1.2]},
                                             "contrast": {"uniform": [0.8, 1.2]}}},
    {"op": "hsv", "params": {"hue": {"uniform": [-10, 10]}, "saturation": {"uniform": [0.8, 1.2]}}},
    {"op": "gaussian_blur", "params": {"sigma": {"uniform": [0.1, 1.5]}}},
    {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
    {"op": "noise.gaussian", "params": {"stddev": 8.0}},
]
"""The bench's standard chain; the rotate angle is the slider being dragged."""


def _ms(samples: list[float]) -> float:
    return round(statistics.median(samples) * 1000, 2)


def _p95(samples: list[float]) -> float:
    s = sorted(samples)
    return round(s[min(len(s) - 1, int(0.95 * len(s)))] * 1000, 2)


def bench_widget(device: str, quick: bool) -> dict[str, Any]:
    """Median ms from a slider change to new tile bytes, vs the bare engine render."""
    reps = 10 if quick else 40
    preset = load({"format": "dali-gallery/preset", "version": 1, "seed": 42, "steps": CHAIN})
    b = Builder(images=SAMPLES_DIR, preset=preset, device=device, draws=3, max_images=6,
                size=256, thumbnails=False)
    try:
        b.wait_idle()
        slider = b.cards[0].controls["angle"].fixed
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
            if result is None or result.request.preset.steps[0].params["angle"] != value:
                raise RuntimeError("the builder shows a render of another slider value")
            widget.append(result.done_at - t)
            encode.append(result.encode_ms / 1000)
            renders.append(result.render.ms / 1000)
            same = b.preset
            with b.renderer.lock:
                t = time.perf_counter()
                b.engine.render(same, draws=3, images=list(range(result.shape[0])))
                engine.append(time.perf_counter() - t)
        w_ms, e_ms, enc_ms = _ms(widget), _ms(engine), _ms(encode)
        return {
            "images": f"{result.shape[0]} samples, longest side 256, x {result.shape[1]} draws",
            "slider_to_bytes_ms": w_ms,
            "slider_to_bytes_p95_ms": _p95(widget),
            "engine_render_ms": e_ms,
            "engine_render_in_widget_ms": _ms(renders),
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
