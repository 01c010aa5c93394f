"""Fused renders: many one-step presets in one DALI pipeline give, branch for branch, exactly
what the engine renders for each alone (every catalog operator, every gallery column, on the
bundled photos and an odd-sized crop, at two image counts); the RNG state is restored for the
next fused render; a fused pipeline loads from the cache identical; what cannot be fused is
refused by rule; budgets are checked over all branches before DALI runs; a DALI failure is a
``FusedError`` naming the operators."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.gallery.sweep import column_presets, plan_row
from dali_gallery.pipelines.budget import Budget, configure, current
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.fused_render import FusedError
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import Preset, load, new_step
from dali_gallery.pipelines.render_budget import BudgetError
from tests.support import cpu_engine, preset_dict, sample_arrays

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def photos() -> list[np.ndarray]:
    """Two bundled photos and an odd-sized crop of the first (not made for these tests)."""
    a, b = sample_arrays(2, max_side=96)
    return [a, b, np.ascontiguousarray(a[3:70, 5:58])]


def gallery_columns(device: str) -> list[Preset]:
    """Every gallery column of every operator this device can render fused."""
    out = []
    for spec in CATALOG.values():
        plan = plan_row(spec)
        if plan.mode != "draws" and spec.unavailable_on(device) is None:
            out += column_presets(plan, 42)
    return out


def assert_same(alone, fused) -> None:
    assert (alone.n_images, alone.draws) == (fused.n_images, fused.draws)
    for x, y in zip(alone.images, fused.images, strict=True):
        assert x.shape == y.shape and np.array_equal(x, y)
    assert [r.to_dict() for r in alone.records] == [r.to_dict() for r in fused.records]


@pytest.mark.parametrize("picks", [None, (2,)], ids=["three-images", "one-odd-image"])
def test_every_fusible_column_renders_as_it_does_alone(photos, picks):
    eng = cpu_engine(photos, PipelineCache(None))
    presets = [p for p in gallery_columns("cpu") if eng.fusible(p)]
    ops = {p.steps[0].op for p in presets}
    # every operator without conditionals, Python code or an uncheckpointable op is fused
    assert ops == {s.name for s in CATALOG.values()
                   if not (s.conditionals or s.custom or not s.checkpoints
                           or s.unavailable_on("cpu"))}
    fused = eng.render_fused(presets, images=picks)
    assert eng.builds == 1
    for preset, got in zip(presets, fused, strict=True):
        assert_same(eng.render(preset, images=picks), got)
    eng.close()


def test_the_next_fused_render_starts_from_the_first_draw_again(photos, tmp_path):
    presets = [load(preset_dict([{"op": op, "params": {}}], seed=42))
               for op in ("noise.gaussian", "random_resized_crop", "jpeg_compression_distortion",
                          "auto_aug.rotate")]
    eng = cpu_engine(photos, PipelineCache(tmp_path))
    first = eng.render_fused(presets)
    eng.render(presets[0], draws=2)  # a render of its own in between
    again = eng.render_fused(presets)
    assert (eng.builds, eng.cache_hits) == (2, 0) and not again[0].built  # fused, then alone
    for x, y in zip(first, again, strict=True):
        assert_same(x, y)
    loaded = cpu_engine(photos, PipelineCache(tmp_path))
    from_cache = loaded.render_fused(presets)  # deserialized: not traced in this engine
    assert (loaded.builds, loaded.cache_hits) == (1, 1)
    for x, y in zip(first, from_cache, strict=True):
        assert_same(x, y)
    eng.close()
    loaded.close()


def test_what_cannot_be_fused_is_refused_by_rule(photos):
    eng = cpu_engine(photos[:1], PipelineCache(None))
    rotate = Preset([new_step("rotate")], seed=42)
    refused = {
        "conditionals": Preset([new_step("rand_augment")], seed=42),
        "probability": load(preset_dict([{"op": "rotate", "params": {}, "probability": 0.5}],
                                        seed=42)),
        "python": Preset([new_step("custom.vignette")], seed=42),
        "no checkpoint": Preset([new_step("clahe")], seed=42),
        "gpu only": Preset([new_step("experimental.dilate")], seed=42),
    }
    assert eng.fusible(rotate)
    for why, preset in refused.items():
        assert not eng.fusible(preset), why
        with pytest.raises(ValueError, match="cannot be fused"):
            eng.render_fused([rotate, preset])
    with pytest.raises(ValueError, match="share one seed"):
        eng.render_fused([rotate, Preset([new_step("hue")], seed=7)])
    eng.set_labels([None])
    assert not eng.fusible(rotate)  # labelled images: the labels' own graph
    assert eng.builds == 0
    eng.close()


def test_budgets_count_every_branch_before_dali_runs(photos):
    eng = cpu_engine(photos[:1], PipelineCache(None))
    one = eng.render_fused([Preset([new_step("rotate")], seed=42)])[0]
    size = one.images[0].shape[0] * one.images[0].shape[1]
    saved = current()
    try:  # room for a handful of branches, not for 40
        configure(Budget(saved.image_pixels, saved.render_pixels, 12 * size))
        presets = [Preset([new_step("hue", hue=float(k))], seed=42) for k in range(40)]
        with pytest.raises(BudgetError, match="kernel") as refused:
            eng.render_fused(presets)
        assert refused.value.op == "hue"
        assert eng.builds == 1  # the first render's: nothing built for the refused one
    finally:
        configure(saved)
    eng.close()


def test_a_dali_failure_names_the_operators(photos, monkeypatch):
    import dali_gallery.pipelines.fused_render as fused_mod

    def broken(*args, **kw):
        raise RuntimeError("[/tmp/x.py:3] Assert on \"x\" failed: something DALI said")

    monkeypatch.setattr(fused_mod, "build_fused", broken)
    eng = cpu_engine(photos[:1], PipelineCache(None))
    with pytest.raises(FusedError, match="building one pipeline of 2 chains failed") as e:
        eng.render_fused([Preset([new_step("rotate")], seed=42),
                          Preset([new_step("hue")], seed=42)])
    assert e.value.ops == ("rotate", "hue")
    eng.close()
