"""Where the preview engine's fixed cost per render goes: bare-DALI variants of the standard
chain at 8x256^2, each adding one thing a live preview needs (DALI's dynamic executor, the
per-sample record outputs, the RNG checkpoint restored before each run, run-time values fed as
one vector and sliced; with ``labels``, boxes, classes and keypoints fed and returned as they
are), timed interleaved (best of three medians) beside the engine itself, without and with
labels. A measurement for the README, not a test:

    python scripts/engine_costs.py [cpu|gpu]
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
from nvidia.dali import fn, pipeline_def, types

from dali_gallery.gallery.bench_inputs import bench_images, standard_preset
from dali_gallery.gallery.bench_reference import standard_chain
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.fed_values import layout, pack
from dali_gallery.pipelines.label_render import SampleLabels
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preview_pipeline import feed_values
from dali_gallery.pipelines.timing import calls_median_ms

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "gpu"
THREADS = os.cpu_count() or 2
IMAGES = bench_images(256)
RANGES = np.array([-15, 15, .8, 1.2, .8, 1.2, -10, 10, .8, 1.2, .1, 1.5], np.float32)


def median_ms(run: Callable[[], Any], n: int = 40) -> float:
    run()
    run()
    return calls_median_ms(run, n)


def chain_with_records(x: Any, fed: Any = None) -> tuple[Any, list[Any]]:
    """The standard chain, returning its random values; ``fed``: ranges sliced from it."""
    def rng(k: int) -> Any:
        return RANGES[2 * k:2 * k + 2].tolist() if fed is None else fed[2 * k:2 * k + 2]

    values = [fn.random.uniform(range=rng(k)) for k in range(6)]
    angle, brightness, contrast, hue, saturation, sigma = values
    coin = fn.random.coin_flip(dtype=types.INT32)
    x = fn.rotate(x, angle=angle, keep_size=True, fill_value=0.0)
    x = fn.brightness_contrast(x, brightness=brightness, contrast=contrast)
    x = fn.hsv(x, hue=hue, saturation=saturation)
    x = fn.gaussian_blur(x, sigma=sigma)
    x = fn.flip(x, horizontal=coin)
    return fn.noise.gaussian(x, stddev=8.0), [*values, coin]


BOXES = [np.random.default_rng(k).uniform(0, 1, (8, 4)).astype(np.float32) for k in range(8)]
LABELS = {"boxes": BOXES, "classes": [np.arange(8, dtype=np.int32) for _ in BOXES],
          "keypoints": [np.zeros((8, 4, 3), np.float32) for _ in BOXES]}


def variant(*, dynamic: bool | None = None, records: bool = False, checkpoint: bool = False,
            fed: bool = False, labels: bool = False) -> Callable[[], Any]:
    executor = {} if dynamic is None else {"exec_pipelined": True, "exec_async": True,
                                           "exec_dynamic": dynamic}

    @pipeline_def(batch_size=len(IMAGES), num_threads=THREADS, seed=42, prefetch_queue_depth=1,
                  device_id=0 if DEVICE == "gpu" else None, enable_checkpointing=checkpoint,
                  **executor)
    def pipe() -> Any:
        x = fn.external_source(name="images", layout="HWC", dtype=types.UINT8)
        vector = fn.external_source(name="fed", dtype=types.FLOAT) if fed else None
        x = x.gpu() if DEVICE == "gpu" else x
        passed = [fn.external_source(name=k, dtype=types.INT32 if k == "classes" else
                                     types.FLOAT) for k in LABELS] if labels else []
        if not records and not fed:
            return standard_chain(x), *passed
        x, values = chain_with_records(x, vector)
        return (x, *values, *passed) if records else (x, *passed)

    p = pipe()
    p.build()
    state = p.checkpoint() if checkpoint else None
    feeds: dict[str, Any] = {"images": IMAGES}
    if fed:
        feeds["fed"] = [RANGES.copy() for _ in IMAGES]
    if labels:
        feeds.update(LABELS)

    def run() -> None:
        if state is not None:
            p._pipe.RestoreFromSerializedCheckpoint(state)
        for out in p.run(**feeds):
            if hasattr(out, "as_cpu"):
                out.as_cpu()  # on the host, as a preview needs its outputs

    return run


def own_pipeline(engine: PreviewEngine, preset: Any) -> Callable[[], Any]:
    """The pipeline the engine built for ``preset``, run with the engine's feeds but none of
    its Python around the run (checkpoint restored; outputs to the host)."""
    engine.render(preset)
    built = next(reversed(engine._pipes.values()))  # the one just used
    values = feed_values(preset, built.chain.feeds, len(IMAGES))
    feeds = pack(values, layout(built.chain.feeds), len(IMAGES))
    feeds["images"] = IMAGES

    def run() -> None:
        built.pipe._pipe.RestoreFromSerializedCheckpoint(built.checkpoint)
        outputs = built.pipe.run(**feeds)
        if hasattr(outputs[0], "as_cpu"):
            outputs[0].as_cpu()

    return run


def main() -> None:
    variants = {
        "bare chain (DALI's default executor)": variant(),
        "+ dynamic executor": variant(dynamic=True),
        "+ dynamic, 7 record outputs": variant(dynamic=True, records=True),
        "+ dynamic, checkpoint restored per run": variant(dynamic=True, checkpoint=True),
        "+ dynamic, values fed as one vector": variant(dynamic=True, fed=True),
        "+ all four": variant(dynamic=True, records=True, checkpoint=True, fed=True),
        "+ all four, labels fed and returned": variant(dynamic=True, records=True,
                                                       checkpoint=True, fed=True, labels=True),
    }
    engine = PreviewEngine(DEVICE, num_threads=THREADS, cache=PipelineCache(None))
    engine.set_arrays(IMAGES)
    preset = standard_preset()
    variants["engine (the same chain, fed by name)"] = lambda: engine.render(preset)
    variants["the engine's own pipeline, run bare"] = own_pipeline(engine, preset)
    labelled = PreviewEngine(DEVICE, num_threads=THREADS, cache=PipelineCache(None))
    labelled.set_arrays(IMAGES)
    labelled.set_labels([SampleLabels(b, c, k) for b, c, k in zip(*LABELS.values(), strict=True)])
    colour = copy.deepcopy(preset)
    colour.steps = [s for s in colour.steps if not CATALOG[s.op].labels.moves]
    variants["engine, the chain's colour steps"] = lambda: engine.render(colour)
    variants["engine, colour steps with labels"] = lambda: labelled.render(colour)
    variants["engine, whole chain with labels"] = lambda: labelled.render(preset)
    best = {name: float("inf") for name in variants}
    for _ in range(3):
        for name, run in variants.items():
            best[name] = min(best[name], median_ms(run))
    for name, ms in best.items():
        print(f"{name:42s} {ms:8.3f} ms")
    engine.close()
    labelled.close()


if __name__ == "__main__":
    main()
