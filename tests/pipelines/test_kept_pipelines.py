"""Pipelines an engine lets go are kept built for the next engine of the process: it renders
exactly what a fresh pipeline renders (the first draw, whatever the last one left), only what
can be shared is kept, two engines never hold one pipeline, and the pool keeps its bounds."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.kept_pipelines import KEPT, KeptPipelines
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from tests.pipelines.test_fused_render import gallery_columns
from tests.support import cpu_engine, preset_dict, sample_arrays

RANDOM = [
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "noise.gaussian", "params": {"stddev": 12.0}},
]
CLAHE = [{"op": "clahe", "params": {"clip_limit": 3.0}}]


@pytest.fixture(scope="module")
def arrays():
    return sample_arrays(3, max_side=192)


def fresh(arrays, preset, draws=2):
    """What an engine that keeps nothing and finds nothing kept renders."""
    eng = PreviewEngine("cpu", num_threads=2, cache=PipelineCache(None), keep=False)
    eng.set_arrays(arrays)
    try:
        return eng.render(preset, draws=draws)
    finally:
        eng.close()


def same(a, b) -> None:
    assert len(a.images) == len(b.images)
    for x, y in zip(a.images, b.images, strict=True):
        np.testing.assert_array_equal(x, y)
    assert [r.values for r in a.records] == [r.values for r in b.records]


def test_the_next_engine_takes_the_pipeline_built_and_renders_the_first_draw(arrays):
    preset = load(preset_dict(RANDOM, seed=3))
    first = cpu_engine(arrays, PipelineCache(None))
    first.render(preset, draws=2, stream=True)
    first.render(preset, draws=2, advance=True)  # its state left past the first draw
    first.close()
    assert len(KEPT) == 1
    second = cpu_engine(arrays, PipelineCache(None))
    got = second.render(preset, draws=2)
    assert (second.builds, second.cache_hits, second.kept_hits, len(KEPT)) == (0, 0, 1, 0)
    assert not got.built
    same(got, fresh(arrays, preset))
    again = second.render(preset, draws=2)  # the engine's own now: restored as any
    same(again, got)
    second.close()


def test_two_engines_never_hold_one_pipeline(arrays):
    preset = load(preset_dict(RANDOM, seed=4))
    a, b = cpu_engine(arrays, PipelineCache(None)), cpu_engine(arrays, PipelineCache(None))
    a.render(preset)
    b.render(preset)  # a holds its pipeline: b builds its own
    assert (a.builds, b.builds, b.kept_hits) == (1, 1, 0)
    a.close()
    b.close()  # the same key again: the older one is dropped
    assert len(KEPT) == 1


def _shift(amount: int):
    def shift(image, level):
        return (image.astype(np.int16) + amount).clip(0, 255).astype(np.uint8)

    return shift


def test_python_operators_are_kept_by_their_functions_source(arrays):
    """A pipeline with a Python operator is keyed by its module, which carries the function's
    source: another catalog's operator of the same name but another function builds its own."""
    from dali_gallery.pipelines.catalog import CATALOG, Catalog
    from dali_gallery.pipelines.custom import custom_op
    from dali_gallery.pipelines.params import Param

    level = (Param("level", "float", 0.5, "A value", bounds=(0, 1), slider=(0, 1), step=0.01,
                   runtime=True),)
    one, two = Catalog(list(CATALOG.values())), Catalog(list(CATALOG.values()))
    custom_op("custom.kept_shift", "Shift.", params=level, catalog=one)(_shift(40))
    custom_op("custom.kept_shift", "Shift.", params=level, catalog=two)(_shift(90))
    preset = load(preset_dict([{"op": "custom.kept_shift", "params": {"level": 0.5}}]),
                  one)

    def engine(catalog):
        eng = PreviewEngine("cpu", num_threads=2, cache=PipelineCache(None), catalog=catalog)
        eng.set_arrays(arrays)
        return eng

    first = engine(one)
    made = first.render(preset)
    first.close()
    assert len(KEPT) == 1
    same_catalog = engine(one)
    same(same_catalog.render(preset), made)
    assert (same_catalog.builds, same_catalog.kept_hits) == (0, 1)
    same_catalog.close()
    other = engine(two)
    shifted = other.render(load(preset_dict([{"op": "custom.kept_shift",
                                              "params": {"level": 0.5}}]), two))
    assert (other.builds, other.kept_hits) == (1, 0)
    diff = shifted.images[0].astype(int) - made.images[0].astype(int)
    assert diff.max() == 50  # its own function ran
    other.close()


def test_another_device_or_thread_count_does_not_take_it(arrays):
    preset = load(preset_dict(RANDOM, seed=5))
    eng = cpu_engine(arrays, PipelineCache(None))
    eng.render(preset)
    eng.close()
    other = PreviewEngine("cpu", num_threads=1, cache=PipelineCache(None))
    other.set_arrays(arrays)
    other.render(preset)
    assert (other.builds, other.kept_hits) == (1, 0)
    other.close()


def test_an_engine_of_another_pipeline_cache_does_not_take_it(arrays, tmp_path):
    """A pipeline taken built is not stored in the taker's cache: engines of other caches
    (tests, benches) each fill their own."""
    preset = load(preset_dict(RANDOM, seed=10))
    eng = cpu_engine(arrays, PipelineCache(tmp_path / "a"))
    eng.render(preset)
    eng.close()
    other = cpu_engine(arrays, PipelineCache(tmp_path / "b"))
    other.render(preset)
    assert (other.builds, other.kept_hits, len(other.cache.entries())) == (1, 0, 1)
    other.close()


def test_a_failed_render_is_not_kept_and_a_kept_pipeline_names_its_step():
    """A kept pipeline that DALI fails on other images names the failing step as any does;
    a pipeline whose run failed is dropped, never kept (nobody knows its state)."""
    steps = [{"op": "hue", "params": {"hue": 10.0}},
             {"op": "crop", "params": {"crop_w": 60.0, "crop_h": 60.0,
                                       "out_of_bounds_policy": "error"}}]
    preset = load(preset_dict(steps))
    large = [np.full((100, 90, 3), 120, np.uint8), np.full((80, 80, 3), 60, np.uint8)]
    small = [np.full((100, 90, 3), 120, np.uint8), np.full((40, 40, 3), 60, np.uint8)]
    eng = cpu_engine(large, PipelineCache(None))
    eng.render(preset)
    eng.close()
    other = cpu_engine(small, PipelineCache(None))
    with pytest.raises(StepError) as err:
        other.render(preset)
    assert (err.value.step, err.value.op, other.kept_hits) == (1, "crop", 1)
    other.close()
    assert len(KEPT) == 0


def test_an_engine_that_keeps_nothing_takes_nothing(arrays):
    preset = load(preset_dict(RANDOM, seed=6))
    eng = cpu_engine(arrays, PipelineCache(None))
    eng.render(preset)
    eng.close()
    alone = PreviewEngine("cpu", num_threads=2, cache=PipelineCache(None), keep=False)
    alone.set_arrays(arrays)
    alone.render(preset)
    alone.close()
    assert (alone.builds, alone.kept_hits, len(KEPT)) == (1, 0, 1)


def test_a_chain_without_random_draws_is_not_rebuilt_even_without_checkpoints(arrays):
    """clahe cannot be checkpointed: a chain that draws nothing is run again as built (and
    kept); one that draws is built again for each render (and never kept)."""
    fixed = load(preset_dict(CLAHE))
    eng = cpu_engine(arrays, PipelineCache(None))
    one, two = eng.render(fixed), eng.render(fixed)
    assert eng.builds == 1
    same(one, two)
    same(one, fresh(arrays, fixed, draws=1))
    drawn = load(preset_dict([*CLAHE, {"op": "rotate", "params": {"angle": {"uniform": [-9, 9]}}}]))
    a, b = eng.render(drawn), eng.render(drawn)
    assert eng.builds == 3
    same(a, b)  # the first draw each time
    eng.close()
    assert len(KEPT) == 1  # the fixed one


def test_fused_pipelines_are_kept_too(tmp_path):
    arrays = sample_arrays(2, max_side=128)
    eng = cpu_engine(arrays, PipelineCache(tmp_path))
    presets = [p for p in gallery_columns("cpu") if eng.fusible(p)][:10]
    first = eng.render_fused(presets)
    eng.close()
    again = cpu_engine(arrays, PipelineCache(tmp_path))
    second = again.render_fused(presets)
    assert (again.builds, again.cache_hits, again.kept_hits) == (0, 0, 1)
    for a, b in zip(first, second, strict=True):
        same(a, b)
    again.close()


class _Entry:
    def __init__(self, pixels: int) -> None:
        self.pipe: object | None = object()
        self.checkpoint = b"state"
        self.reset = None
        self.pixels = pixels
        self.busy = False
        self.restorable = True


def test_the_pool_keeps_its_bounds_dropping_the_least_recent():
    pool = KeptPipelines(max_pipelines=2, max_pixels=100)
    try:
        a, b, c = _Entry(10), _Entry(10), _Entry(10)
        for key, e in (("a", a), ("b", b), ("c", c)):
            pool.give(key, e)
        assert len(pool) == 2 and pool.take("a") is None
        pool.clear()
        assert (a.pipe, b.pipe, c.pipe) == (None, None, None)  # shut down
        big, small = _Entry(90), _Entry(20)
        pool.give("big", big)
        pool.give("small", small)  # 110 > 100: the older one goes
        assert pool.take("big") is None and pool.take("small") is small
        huge = _Entry(101)
        pool.give("huge", huge)  # over the bound alone: not kept
        assert len(pool) == 0 and pool.pixels == 0
        assert pool.dropped == 5
    finally:
        pool.close()


def test_what_the_pool_holds_is_counted_from_the_renders_plans(arrays):
    eng = cpu_engine(arrays, PipelineCache(None))
    eng.render(load(preset_dict(RANDOM, seed=8)), draws=2)
    eng.close()
    h, w = arrays[0].shape[:2]
    assert KEPT.pixels >= 2 * len(arrays) * h * w  # in and out of at least one step
    assert KEPT.pixels <= KEPT.max_pixels


def test_a_pipeline_a_render_still_uses_is_dropped_when_its_engine_closes(arrays):
    """The gallery joins its worker for 30 s, then closes the engine: a render that outlived
    the join still runs its pipeline, which must not reach another engine. A pipeline is
    ``busy`` from the moment the engine hands it to a render until that render ends."""
    preset = load(preset_dict(RANDOM, seed=9))
    eng = cpu_engine(arrays, PipelineCache(None))
    eng.render(preset)
    (built,) = eng._own.entries.values()
    assert not built.busy  # the render ended
    again = eng._own.get(next(iter(eng._own.entries)))  # what a new render is handed
    assert again is not None and again[0] is built and built.busy
    eng.close()  # while that render would still run
    assert len(KEPT) == 0 and built.pipe is None


def test_a_render_refused_before_dali_runs_leaves_its_pipeline_free_to_keep(arrays):
    """``advance=True`` after a render that was not a stream is refused before DALI runs: the
    pipeline is as it was, so it is neither marked in use nor counted as run, and it is kept
    when its engine closes (it used to be dropped as if a render still held it)."""
    preset = load(preset_dict(RANDOM, seed=9))
    eng = cpu_engine(arrays, PipelineCache(None))
    first = eng.render(preset)
    (built,) = eng._own.entries.values()
    with pytest.raises(ValueError, match="stream=True"):
        eng.render(preset, advance=True)
    assert not built.busy and built.runs == 1
    eng.close()
    assert len(KEPT) == 1
    other = cpu_engine(arrays, PipelineCache(None))
    try:
        same(other.render(preset), first)
        assert other.kept_hits == 1
    finally:
        other.close()


def test_a_render_makes_room_for_itself_in_the_kernels_budget(arrays):
    """What is kept counts against the kernel's pixel budget: a render whose plan leaves less
    room than the pool holds drops kept pipelines first (and is never refused for them)."""
    from dali_gallery.pipelines.budget import LEDGER, Budget, configure, current

    eng = cpu_engine(arrays, PipelineCache(None))
    eng.render(load(preset_dict(RANDOM, seed=12)), draws=2)
    eng.close()
    kept = KEPT.pixels
    assert kept > 0
    other = cpu_engine(arrays, PipelineCache(None))
    fixed = load(preset_dict([{"op": "hsv", "params": {"saturation": 1.2}}]))
    before = current()
    try:  # room for the images and this render, not for the kept pipeline beside them
        need = LEDGER.held(excluding=other) + 2 * sum(a.shape[0] * a.shape[1] for a in arrays)
        configure(Budget(image_pixels=before.image_pixels, render_pixels=before.render_pixels,
                         kernel_pixels=need + kept // 2, render_work=before.render_work))
        other.render(fixed)
    finally:
        configure(before)
    assert len(KEPT) == 0
    other.close()


def test_a_working_set_takes_nothing_kept_once_closed():
    """A render that outlived its engine's close (the gallery joins its worker for 30 s) finds
    nothing in the pool: what it makes stays its own, never given to another engine."""
    from dali_gallery.pipelines.kept_pipelines import OwnPipelines
    from dali_gallery.pipelines.rng_reset import RngReset

    pool, reset = KeptPipelines(), RngReset()
    try:
        pool.give(("chain", "cpu", 2, None, "k"), _Entry(10))
        own = OwnPipelines(3, "chain", "cpu", 2, reset, pool, None)
        own.close()
        assert own.get("k") is None and len(pool) == 1
        late = _Entry(10)
        own.add("k2", late)
        late.busy = False
        own.close()
        assert len(pool) == 1  # the late one was not given
        reset.settle()
        assert late.pipe is None  # dropped, not kept
    finally:
        reset.close()
        pool.close()
