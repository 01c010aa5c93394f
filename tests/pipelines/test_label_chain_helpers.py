"""Consecutive moving steps share one Python step (pipelines.label_chain_helpers), and move
labels exactly as the steps did one by one."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dali_gallery.gallery.bench_inputs import bench_images
from dali_gallery.gallery.labels_bench import DETECTION_CHAIN, synthetic_labels
from dali_gallery.pipelines import codegen
from dali_gallery.pipelines.codegen import chain_source
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.label_chain_helpers import _flipped, _moved_chain_batch
from dali_gallery.pipelines.label_code import LabelSet
from dali_gallery.pipelines.label_helpers import _moved
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load

BENCH = json.loads(DETECTION_CHAIN.read_text())


def _chain(**changes) -> dict:
    doc = json.loads(json.dumps(BENCH))
    for index, step in changes.items():
        doc["steps"][int(index[1:])].update(step)
    return doc


def _calls(doc: dict, name: str) -> int:
    body = "\n".join(chain_source(load(json.dumps(doc)), "export", labels=LabelSet()).body)
    return body.count(f"{name}(")


def test_a_run_of_moving_steps_shares_one_python_step():
    """The detection chain's crop, flip and rotation: one Python step, no box flip."""
    assert _calls(BENCH, "_move_labels_chain") == 1
    assert _calls(BENCH, "_move_labels") == 0 and _calls(BENCH, "_flip_labels") == 0


def test_a_step_under_a_condition_ends_the_run():
    """A flip that fires at random moves its labels in its own branch: the crop before it
    is written alone, then the rotation alone."""
    doc = _chain(s1={"probability": 0.5})
    assert _calls(doc, "_move_labels_chain") == 0
    assert _calls(doc, "_move_labels") == 2 and _calls(doc, "_flip_labels") == 1


def test_flips_alone_stay_dali_operators():
    doc = {"format": "dali-gallery/preset", "version": 1, "seed": 1,
           "steps": [{"op": "flip", "params": {"horizontal": True}},
                     {"op": "brightness", "params": {}},
                     {"op": "flip", "params": {"vertical": True}}]}
    assert _calls(doc, "_flip_labels") == 2 and _calls(doc, "_move_labels_chain") == 0


def _render(doc: dict, fused: bool, monkeypatch) -> list:
    if not fused:  # every move written alone: the labels as before the shared step
        monkeypatch.setattr(codegen, "waits_for_labels", lambda *a: True)
    images = bench_images(128, 4)
    engine = PreviewEngine("cpu", cache=PipelineCache(None))
    engine.set_arrays(images)
    engine.set_labels(synthetic_labels(images, seed=3))
    render = engine.render(load(json.dumps(doc)), draws=2)
    engine.close()
    monkeypatch.undo()
    return [(o.labels.boxes, o.labels.classes, o.labels.keypoints, o.labels.mask, o.kept)
            for o in render.labels]


@pytest.mark.parametrize("doc", [
    BENCH,
    _chain(s2={"params": {"angle": 40.0, "keep_size": False}}),
    {"format": "dali-gallery/preset", "version": 1, "seed": 7, "steps": [
        {"op": "rotate", "params": {"angle": {"uniform": [-30, 30]}}},
        {"op": "resize", "params": {}},
        {"op": "flip", "params": {"vertical": True}},
        {"op": "random_resized_crop", "params": {"size": 96, "area_min": 0.1}},
        {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}}]},
], ids=["bench", "rotate-grows", "mixed"])
def test_the_shared_step_moves_labels_as_the_steps_one_by_one(doc, monkeypatch):
    fused, alone = _render(doc, True, monkeypatch), _render(doc, False, monkeypatch)
    assert len(fused) == len(alone) == 8
    for a, b in zip(fused, alone, strict=True):
        for x, y in zip(a[:4], b[:4], strict=True):
            assert (x is None and y is None) or np.array_equal(x, y)
        assert a[4].keys() == b[4].keys()
        assert all(np.array_equal(a[4][k], b[4][k]) for k in a[4])
    assert any(len(f[0]) < 8 or any((k < 1).any() for k in f[4].values()) for f in fused), \
        "no box was clipped or dropped: the chains test too little"


def test_the_numpy_pass_is_the_steps_in_turn():
    rng = np.random.default_rng(0)
    sizes = [3, 0, 5, 1]
    boxes = []
    for n in sizes:
        lt = rng.uniform(0, 0.6, (n, 2))
        boxes.append(np.concatenate([lt, lt + rng.uniform(0.05, 0.4, (n, 2))], 1)
                     .astype(np.float32))
    classes = [np.arange(n, dtype=np.int32) for n in sizes]
    points = [rng.uniform(0, 1, (n, 2, 3)).astype(np.float32) for n in sizes]
    shape_a = [np.array([60, 80, 3])] * 4
    shape_b = [np.array([50, 50, 3])] * 4
    window = [np.array([5.0, 10.0, 40.0, 30.0], np.float32)] * 4
    rot = [np.array([[0.8, -0.6, 0.0], [0.6, 0.8, 0.0]], np.float32)] * 4
    flags = [np.array(v, np.int32) for v in (1, 0, 1, 1)]
    kinds = (("window",), ("mirror", None, True), ("centres",))
    got = _moved_chain_batch(0.3, kinds)(boxes, classes, points, window, shape_a, shape_b,
                                         flags, rot, shape_b, shape_b)
    b, c, k, kept_1 = _moved(boxes, classes, points, window, shape_a, shape_b, 0.3, "window")
    b, k = _flipped(b, k, [bool(f) for f in flags], [True] * 4)
    b, c, k, kept_2 = _moved(b, c, k, rot, shape_b, shape_b, 0.3, "centres")
    for mine, theirs in zip(got, (b, c, k, kept_1, kept_2), strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(mine, theirs, strict=True))
    assert [len(x) for x in got[0]] == [len(x) for x in b]
