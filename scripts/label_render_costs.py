"""Where a labelled preview render's time goes: the detection chain of ``dali-gallery bench
--only labels`` (8 images of 256x256, 8 boxes an image with keypoints, and a category mask),
rendered by the engine (median of 100, each after its RNG restore has finished), then its parts
run by hand on the same built pipeline: the RNG restore, feeding and DALI's run,
``read_labels`` (moving boxes and keypoints after the run, reading the masks) and
``read_outputs`` (images and records); without labels, with boxes and keypoints, with masks.
A measurement for the README, not a test:

    python scripts/label_render_costs.py [cpu|gpu]
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from dali_gallery.gallery.bench_inputs import bench_images
from dali_gallery.gallery.labels_bench import DETECTION_CHAIN, synthetic_labels
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.fed_values import feed
from dali_gallery.pipelines.label_render import read_labels
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load_file
from dali_gallery.pipelines.preview_pipeline import fed_arrays
from dali_gallery.pipelines.render_result import read_outputs

RUNS = 100


def _timed(times: list[float], call: Callable[[], Any]) -> Any:
    t = time.perf_counter()
    out = call()
    times.append(time.perf_counter() - t)
    return out


def costs(device: str, kind: str) -> dict[str, float]:
    """Median ms of a render and of its parts for ``kind``: none, boxes or masks."""
    images = bench_images(256, 8)
    full = synthetic_labels(images)
    labels = {"none": None, "masks": full,
              "boxes": [replace(x, mask=None) for x in full]}[kind]
    preset = load_file(DETECTION_CHAIN)
    eng = PreviewEngine(device, cache=PipelineCache(None))
    try:
        eng.set_arrays(images)
        eng.set_labels(labels)
        eng.render(preset)
        times: dict[str, list[float]] = {k: [] for k in (
            "render", "restore", "run", "read_labels", "read_outputs")}
        for _ in range(RUNS):
            eng.settle()
            time.sleep(0.002)
            _timed(times["render"], lambda: eng.render(preset))
        eng.settle()
        built = next(iter(eng._pipes.values()))
        graph = built.chain.labels
        feeds = dict(fed_arrays(preset, built.chain.feeds, 8))
        feeds.update(eng._batches.feeds(eng._arrays, labels if graph else None, None, 8,
                                        graph.graph_names if graph else ()))
        first = 1 + len(built.chain.records)
        for _ in range(RUNS):
            _timed(times["restore"],
                   lambda: built.pipe._pipe.RestoreFromSerializedCheckpoint(built.checkpoint))
            out = _timed(times["run"], lambda: (feed(built.pipe, feeds), built.pipe.run())[1])
            if labels is not None:
                _timed(times["read_labels"], lambda o=out: read_labels(
                    o, built.chain, first, labels, eng.min_kept))
            _timed(times["read_outputs"], lambda o=out: read_outputs(o, built.chain, 8, 1,
                                                                     eng.device))
        return {k: round(float(np.median(v)) * 1000, 3) for k, v in times.items() if v}
    finally:
        eng.close()


if __name__ == "__main__":
    dev = sys.argv[1] if len(sys.argv) > 1 else "cpu"
    print(json.dumps({kind: costs(dev, kind) for kind in ("none", "boxes", "masks")}))
