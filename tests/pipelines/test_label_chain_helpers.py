"""Consecutive moving steps share one Python step (pipelines.label_chain_helpers), and move
labels exactly as the steps did one by one."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from dali_gallery.gallery.bench_inputs import bench_images
from dali_gallery.gallery.labels_bench import DETECTION_CHAIN, synthetic_labels
from dali_gallery.pipelines import codegen
from dali_gallery.pipelines.codegen import chain_source
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.kept_pipelines import KEPT
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


def _render(doc: dict, how: str, monkeypatch, tail: bool = False, masks: bool = True) -> list:
    """The labels of 2 draws of 4 images: ``how`` "shared" (the graph's shared Python
    step, as exported), "alone" (every move written alone: the labels before the shared
    step) or "after" (moved after the run, the preview's way where it can)."""
    if how == "alone":
        monkeypatch.setattr(codegen, "waits_for_labels", lambda *a: True)
    images = bench_images(128, 4)
    engine = PreviewEngine("cpu", cache=PipelineCache(None))
    engine.labels_after_run = how == "after"
    engine.set_arrays(images)
    labels = synthetic_labels(images, seed=3)
    engine.set_labels(labels if masks else [replace(x, mask=None) for x in labels])
    render = engine.render(load(json.dumps(doc)), draws=2, tail=tail)
    built = list(engine._own.entries.values())[-1]
    assert built.chain.labels.after_run == (how == "after")
    engine.close()
    monkeypatch.undo()
    return [(o.labels.boxes, o.labels.classes, o.labels.keypoints, o.labels.mask, o.kept)
            for o in render.labels]


def _same(first: list, second: list) -> None:
    assert len(first) == len(second) == 8
    for a, b in zip(first, second, strict=True):
        for x, y in zip(a[:4], b[:4], strict=True):
            assert (x is None and y is None) or (np.array_equal(x, y) and x.dtype == y.dtype)
        assert a[4].keys() == b[4].keys()
        assert all(np.array_equal(a[4][k], b[4][k]) for k in a[4])
    assert any(len(f[0]) < 8 or any((k < 1).any() for k in f[4].values()) for f in first), \
        "no box was clipped or dropped: the chains test too little"


MIXED = {"format": "dali-gallery/preset", "version": 1, "seed": 7, "steps": [
    {"op": "rotate", "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "resize", "params": {}},
    {"op": "flip", "params": {"vertical": True}},
    {"op": "random_resized_crop", "params": {"size": 96, "area_min": 0.1}},
    {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}}]}
CHAINS = [BENCH, _chain(s2={"params": {"angle": 40.0, "keep_size": False}}), MIXED]


@pytest.mark.parametrize("doc", CHAINS, ids=["bench", "rotate-grows", "mixed"])
def test_the_shared_step_moves_labels_as_the_steps_one_by_one(doc, monkeypatch):
    _same(_render(doc, "shared", monkeypatch), _render(doc, "alone", monkeypatch))


TAILED = {**MIXED, "output": {"resize_shorter": 120, "crop": [100, 90],
                              "mirror_probability": 0.5}}
PIXELS_IN_GROUP = {**BENCH, "steps": [*BENCH["steps"][:3], {
    "one_of": BENCH["steps"][3:], "pick": 1, "probability": 0.5}]}


@pytest.mark.parametrize(("doc", "tail", "masks"), [
    (BENCH, False, True), (BENCH, False, False), (CHAINS[1], False, True),
    (MIXED, False, False), (TAILED, True, True), (TAILED, True, False),
    (PIXELS_IN_GROUP, False, True)],
    ids=["bench", "bench-boxes", "rotate-grows", "mixed-boxes", "tail", "tail-boxes",
         "pixel-group"])
def test_labels_moved_after_the_run_are_the_graphs(doc, tail, masks, monkeypatch):
    """The preview's labels after the run: bit for bit those of the exported graph's Python
    step (boxes, classes, keypoints, masks, every kept fraction), the tail's crop and
    mirror too."""
    _same(_render(doc, "after", monkeypatch, tail, masks),
          _render(doc, "shared", monkeypatch, tail, masks))


@pytest.mark.parametrize(("change", "after"), [
    ({}, True), ({"s1": {"probability": 0.5}}, False), ({"s3": {"probability": 0.5}}, True)],
    ids=["run", "random-flip", "random-colour"])
def test_which_chains_move_labels_after_the_run(change, after):
    """Only a chain where no step reads boxes in the graph or moves them under a condition:
    a flip that fires at random keeps the graph's way; a colour step that does, not."""
    doc = _chain(**change)
    code, chain = codegen.preview_module(load(json.dumps(doc)), labels=LabelSet())
    assert chain.labels.after_run is after
    assert ("_move_labels" in code) is not after and ("after_run = [" in code) is after
    crop = {**doc, "steps": [{"op": "random_bbox_crop", "params": {}}, *doc["steps"]]}
    assert not codegen.preview_module(load(json.dumps(crop)), labels=LabelSet())[1].labels.after_run


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


def test_a_chain_moving_labels_after_the_run_is_kept_in_the_pipeline_cache(tmp_path):
    """No Python operator in it: a second kernel loads the labelled pipeline instead of
    tracing it, another engine of the same kernel takes it built (kept_pipelines), and both
    move the labels the same."""
    images = bench_images(96, 2)
    labels = synthetic_labels(images, seed=5)
    out = []
    for source in ("traced", "loaded", "kept"):
        if source == "loaded":
            KEPT.clear()  # a new kernel keeps nothing
        engine = PreviewEngine("cpu", cache=PipelineCache(tmp_path))
        engine.set_arrays(images)
        engine.set_labels(labels)
        render = engine.render(load(json.dumps(BENCH)), draws=2)
        out.append(((engine.cache_hits, engine.kept_hits), render))
        engine.close()
    assert [hits for hits, _ in out] == [(0, 0), (1, 0), (0, 1)]
    first = out[0][1].labels
    for _, other in out[1:]:
        for a, b in zip(first, other.labels, strict=True):
            assert np.array_equal(a.labels.boxes, b.labels.boxes)
            assert np.array_equal(a.labels.mask, b.labels.mask)
            assert all(np.array_equal(a.kept[k], b.kept[k]) for k in a.kept)
    assert all(np.array_equal(x, y) for x, y in zip(out[0][1].images, out[2][1].images,
                                                    strict=True))


@pytest.mark.parametrize("widths", [(2, 2, 2, 2), (2, 0, 3, 2)], ids=["same-k", "ragged-k"])
def test_one_batch_pass_is_each_sample_alone(widths):
    """_moved splits its one NumPy pass into samples at the end: a batch (the same number of
    keypoints per box everywhere, or not) gives each sample what a batch of it alone does,
    boxes dropped and empty samples included."""
    rng = np.random.default_rng(4)
    sizes = [4, 0, 6, 3]
    boxes, classes, points = [], [], []
    for n, k in zip(sizes, widths, strict=True):
        lt = rng.uniform(-0.3, 0.9, (n, 2))
        boxes.append(np.concatenate([lt, lt + rng.uniform(0.05, 0.5, (n, 2))], 1)
                     .astype(np.float32))
        classes.append(rng.integers(1, 9, n).astype(np.int32))
        points.append(rng.uniform(0, 1, (n, k, 3)).astype(np.float32))
    m = [rng.normal(0, 0.6, (2, 3)).astype(np.float32) + np.eye(2, 3, dtype=np.float32)
         for _ in sizes]
    shape_in = [np.array([60, 80, 3])] * 4
    shape_out = [np.array([50, 70, 3])] * 4
    batch = _moved(boxes, classes, points, m, shape_in, shape_out, 0.4, "centres")
    assert sum(len(b) for b in batch[0]) < sum(sizes), "nothing dropped: too easy"
    for s in range(len(sizes)):
        alone = _moved(boxes[s:s + 1], classes[s:s + 1], points[s:s + 1], m[s:s + 1],
                       shape_in[:1], shape_out[:1], 0.4, "centres")
        for column, one in zip(batch, alone, strict=True):
            assert column[s].dtype == one[0].dtype and column[s].shape == one[0].shape
            assert column[s].tobytes() == one[0].tobytes()
    assert [p.shape[1:] for p in batch[2]] == [(k, 3) for k in widths]
