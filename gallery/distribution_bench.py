"""``dali-gallery bench --only distribution``: what the Distribution tab costs.

Times :func:`dali_gallery.pipelines.distribution.collect` for 400 draws on the CPU (the tab's
CPU default) of the standard chain with one step at p = 0.3, and of a chain with the three
auto-augment policies, each from a fresh engine with the pipeline cache off (the trace is part
of the time a first run costs) and again with the pipeline built (what a second run of the
same chain costs in a kernel); on a GPU machine, 1000 draws on the GPU too.
"""

from __future__ import annotations

import time
from typing import Any

from dali_gallery.pipelines.distribution import DEFAULT_DRAWS, collect
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import Preset, load_file

from .bench_inputs import SAMPLES, bench_images, standard_preset

POLICIES = SAMPLES / "bench_policies.json"
"""The policy chain (a bundled preset, so no operator is named in code here)."""


def _chains() -> dict[str, Preset]:
    standard = standard_preset()
    standard.steps[0].probability = 0.3
    return {"standard_chain": standard, "policies": load_file(POLICIES)}


def _time(preset: Preset, device: str, draws: int) -> dict[str, Any]:
    image = bench_images(256, 1)[0]
    engine = PreviewEngine(device, cache=PipelineCache(None))
    try:
        t = time.perf_counter()
        first = collect(preset, image, draws, engine=engine)
        cold = time.perf_counter() - t
        t = time.perf_counter()
        collect(preset, image, draws, engine=engine)
        warm = time.perf_counter() - t
    finally:
        engine.close()
    return {"draws": first.draws, "batches": first.batches, "batch": first.batch,
            "first_run_s": round(cold, 2), "built_run_s": round(warm, 2),
            "built_ms_per_draw": round(warm * 1000 / first.draws, 2)}


def bench_distribution(device: str, quick: bool) -> dict[str, Any]:
    chains = _chains()
    if quick:
        chains = {"standard_chain": chains["standard_chain"]}
    out: dict[str, Any] = {}
    for name, preset in chains.items():
        out[f"cpu_{name}"] = _time(preset, "cpu", DEFAULT_DRAWS["cpu"])
        if device == "gpu":
            out[f"gpu_{name}"] = _time(preset, "gpu", DEFAULT_DRAWS["gpu"])
    return out
