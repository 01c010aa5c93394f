"""``dali-gallery bench --only labels``: what carrying labels costs a preview render.

The detection chain (``samples/bench_detection.json``: a random resized crop, a flip, a small
rotation, colour) renders 8 images of 256 x 256 with and without labels on the same engine,
render by render alternating, both pipelines built first; labels are 8 boxes per image with
their keypoints and a category mask (what a COCO instances image has), and the same without
the mask (a detection dataset). The figures to watch are the ratios of the medians: the label
lines (the masks' moves; the matrices, shapes and flags the preview reads to move boxes after the
run) against the images alone. ``*_in_graph`` are the same labels moved inside the pipeline
by the exported module's Python step (what the preview did before, and still does for a
chain where a step reads boxes or moves them under a condition).

``plain_dali`` is the floor: the same chain and labels written by hand in plain DALI
(:func:`bench_reference.labelled_pipeline`, no tight boxes, clipping or dropping), timed in the
same alternation (feed, run, every output on the host). Its ratios say what carrying these
labels costs DALI itself; ``over_plain_dali`` is ours against it.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import replace
from typing import Any

import numpy as np
from nvidia.dali.backend import TensorListGPU

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.label_render import SampleLabels
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load_file

from .bench_inputs import SAMPLES, bench_images, to_host
from .bench_reference import labelled_pipeline

DETECTION_CHAIN = SAMPLES / "bench_detection.json"
BOXES = 8


def synthetic_labels(images: list[np.ndarray], seed: int = 0) -> list[SampleLabels]:
    """BOXES random boxes per image, a keypoint at each corner and a mask that fills them."""
    rng = np.random.default_rng(seed)
    out = []
    for img in images:
        h, w = img.shape[:2]
        lt = rng.uniform(0.0, 0.7, (BOXES, 2))
        wh = rng.uniform(0.05, 0.3, (BOXES, 2))
        boxes = np.concatenate([lt, lt + wh], axis=1).astype(np.float32)
        corners = boxes[:, [0, 1, 2, 1, 0, 3, 2, 3]].reshape(BOXES, 4, 2)
        keypoints = np.concatenate([corners, np.full((BOXES, 4, 1), 2.0)], axis=2)
        mask = np.zeros((h, w, 1), np.uint8)
        for k, (left, top, right, bottom) in enumerate(boxes):
            mask[int(top * h):int(bottom * h), int(left * w):int(right * w)] = k + 1
        out.append(SampleLabels(boxes, np.arange(1, BOXES + 1), keypoints, mask))
    return out


def _timed_ms(engine: PreviewEngine, preset: Any, labels: list[SampleLabels] | None) -> float:
    engine.set_labels(labels)
    t = time.perf_counter()
    engine.render(preset)
    ms = (time.perf_counter() - t) * 1000
    engine.settle()  # its RNG restore (left to a worker) ends before the next is timed
    return ms


def _plain_feeds(images: list[np.ndarray], labels: list[SampleLabels], boxes: bool,
                 masks: bool) -> dict[str, list[np.ndarray]]:
    """What :func:`bench_reference.labelled_pipeline` is fed, made once (as the preview makes
    its batches once per image set): the images, their shapes, and the labels it moves."""
    feeds = {"images": images, "shape": [np.array(a.shape, np.int64) for a in images]}
    if boxes:
        feeds["wh"] = [np.array(a.shape[1::-1], np.int32) for a in images]
        corners = [s.boxes[:, [0, 1, 2, 1, 0, 3, 2, 3]].reshape(-1, 2) for s in labels]
        feeds["points"] = [np.concatenate([c, s.keypoints[..., :2].reshape(-1, 2)])
                           for c, s in zip(corners, labels, strict=True)]
    if masks:
        feeds["masks"] = [s.mask for s in labels]
    return feeds


def _plain_ms(pipe: Any, feeds: dict[str, list[np.ndarray]]) -> float:
    """One render of :func:`bench_reference.labelled_pipeline`: feed, run, outputs on the host."""
    t = time.perf_counter()
    for name, samples in feeds.items():
        pipe.feed_input(name, samples)
    for out in pipe.run():
        to_host(out, "gpu" if isinstance(out, TensorListGPU) else "cpu")
    return (time.perf_counter() - t) * 1000


def bench_labels(device: str, quick: bool) -> dict[str, Any]:
    images = bench_images(256, 8)
    labels = synthetic_labels(images)
    preset = load_file(DETECTION_CHAIN)
    runs = 10 if quick else 60
    out: dict[str, Any] = {}
    for dev in ["cpu"] + (["gpu"] if device == "gpu" else []):
        engine = PreviewEngine(dev, cache=PipelineCache(None))
        in_graph = PreviewEngine(dev, cache=PipelineCache(None))
        in_graph.labels_after_run = False
        plain = {k: (labelled_pipeline(len(images), dev, engine.num_threads, *flags),
                     _plain_feeds(images, labels, *flags))
                 for k, flags in {"without": (False, False), "boxes": (True, False),
                                  "masks": (True, True)}.items()}
        boxes_only = [replace(x, mask=None) for x in labels]
        variants = {"without": (engine, None), "boxes": (engine, boxes_only),
                    "masks": (engine, labels), "boxes_in_graph": (in_graph, boxes_only),
                    "masks_in_graph": (in_graph, labels)}
        times: dict[str, list[float]] = {k: [] for k in [*variants, *("plain_" + k for k in plain)]}
        try:
            engine.set_arrays(images)
            in_graph.set_arrays(images)
            for eng, lab in variants.values():  # build every pipeline first
                _timed_ms(eng, preset, lab)
            for pipe, feeds in plain.values():
                _plain_ms(pipe, feeds)
            for _ in range(runs):  # render by render, alternating: the same machine load
                for k, (eng, lab) in variants.items():
                    times[k].append(_timed_ms(eng, preset, lab))
                for k, (pipe, feeds) in plain.items():
                    times["plain_" + k].append(_plain_ms(pipe, feeds))
        finally:
            engine.close()
            in_graph.close()
        p, box, lab, box_g, lab_g = (statistics.median(times[k]) for k in variants)
        plain_ms = {k: statistics.median(times["plain_" + k]) for k in plain}
        floor = {k: plain_ms[k] / plain_ms["without"] for k in ("boxes", "masks")}
        out[dev] = {"images": "8 x 256x256", "boxes_per_image": BOXES, "renders": runs,
                    "without_labels_ms": round(p, 1), "with_labels_ms": round(lab, 1),
                    "ratio": round(lab / p, 2), "boxes_keypoints_only_ms": round(box, 1),
                    "boxes_keypoints_only_ratio": round(box / p, 2), "target_ratio": 1.2,
                    "with_labels_in_graph_ratio": round(lab_g / p, 2),
                    "boxes_keypoints_only_in_graph_ratio": round(box_g / p, 2),
                    "plain_dali": {"without_labels_ms": round(plain_ms["without"], 1),
                                   "with_labels_ratio": round(floor["masks"], 2),
                                   "boxes_keypoints_only_ratio": round(floor["boxes"], 2)},
                    "over_plain_dali": {"with_labels": round(lab / p / floor["masks"], 2),
                                        "boxes_keypoints_only": round(box / p / floor["boxes"],
                                                                      2)}}
    return out
