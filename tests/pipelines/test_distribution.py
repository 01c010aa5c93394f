"""The chain over many draws: counts of the pipeline's own records, checked against the binomial
law, against the engine's own renders of the same seed and against the pixels the policies
produced; progress, cancel, budgets and refused counts."""

from __future__ import annotations

import math
import threading
from fractions import Fraction

import numpy as np
import pytest

from dali_gallery.pipelines.budget import Budget
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.distribution import (
    MAX_DRAWS,
    batch_size,
    check_draws,
    collect,
    thumbnail,
)
from dali_gallery.pipelines.distribution_stats import (
    ALPHA,
    binomial_range,
    pick_probabilities,
    picks,
    rates,
    sampled,
)
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import load
from dali_gallery.pipelines.render_budget import BudgetError
from tests.support import preset_dict

ROTATE = {"op": "rotate", "probability": 0.3, "params": {"angle": {"uniform": [-30, 30]}}}


@pytest.fixture(scope="module")
def engine():
    eng = PreviewEngine("cpu", num_threads=2)
    yield eng
    eng.close()


def test_a_step_at_p_0_3_fires_within_the_binomial_bound_over_400_draws(photo):
    preset = load(preset_dict([ROTATE, {"op": "hue", "params": {"hue": 10.0}}], seed=11))
    dist = collect(preset, photo, 400)
    assert dist.draws == 400 and not dist.cancelled
    row = next(r for r in rates(preset, dist.records) if r.step == 0)
    assert row.configured == 0.3 and row.fired is not None
    assert row.within, f"{row.fired} of 400 outside [{row.lo}, {row.hi}]"
    assert abs(row.observed - 0.3) < 4 * math.sqrt(0.3 * 0.7 / 400)
    hue = next(r for r in rates(preset, dist.records) if r.step == 1)
    assert hue.fired is None  # p = 1: no coin in the pipeline, nothing to count


def test_uniform_values_span_the_range_and_are_the_engine_s_own_records(photo, engine):
    preset = load(preset_dict([ROTATE], seed=5))
    dist = collect(preset, photo, 300, batch=100)
    (angle,) = sampled(preset, dist.records)
    assert angle.param == "angle" and angle.bounds == (-30.0, 30.0)
    assert angle.values.min() >= -30 and angle.values.max() <= 30
    counts, _ = np.histogram(angle.values, bins=6, range=(-30, 30))
    assert counts.min() > 0, counts  # every sixth of the range is drawn
    assert angle.values.min() < -27 and angle.values.max() > 27
    # the same seed, rendered by the engine itself: batch 0 restarts the pipeline, the later
    # batches go on from where it stopped
    engine.set_arrays([thumbnail(photo)])
    own = []
    for k in range(3):
        own += engine.render(preset, draws=100, advance=k > 0, stream=True).records
    assert [(r.fired, r.values) for r in dist.records] == [(r.fired, r.values) for r in own]
    first = engine.render(preset, draws=100).records  # what the preview shows for the seed
    assert [r.values for r in dist.records[:100]] == [r.values for r in first]
    assert len({round(v, 5) for v in angle.values}) > 290  # the batches did not repeat


def test_progress_reaches_the_total_after_every_batch(photo):
    seen: list[tuple[int, int]] = []
    dist = collect(load(preset_dict([ROTATE])), photo, 120, batch=50,
                   on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(0, 120), (50, 120), (100, 120), (120, 120)]
    assert dist.draws == 120 and dist.batches == 3


def test_cancel_stops_between_batches_and_keeps_what_was_collected(photo):
    cancel = threading.Event()
    seen: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        if done >= 40:
            cancel.set()

    dist = collect(load(preset_dict([ROTATE])), photo, 400, batch=40, on_progress=progress,
                   cancel=cancel)
    assert dist.cancelled and dist.draws == 40 and dist.batches == 1
    assert seen == [0, 40]
    assert rates(dist.preset, dist.records)[0].draws == 40


@pytest.mark.parametrize("bad", [0, -1, MAX_DRAWS + 1, 2.5, True, "400"])
def test_a_count_outside_the_budget_is_refused_by_name(photo, bad):
    with pytest.raises(ValueError, match=r"draws .* is not allowed; expected a whole number"):
        collect(load(preset_dict([ROTATE])), photo, bad)
    assert check_draws(MAX_DRAWS) == MAX_DRAWS


def test_batches_follow_the_pixel_budget_and_one_draw_too_many_names_the_step():
    preset = load(preset_dict([{"op": "hue", "params": {"hue": 5.0}}]))
    px = 64 * 48
    budget = Budget(render_pixels=2 * px * 10)  # one same-size step: in + out per draw
    assert batch_size(preset, (48, 64), 400, budget=budget) == 10
    assert batch_size(preset, (48, 64), 400) == 50  # 400 / 8 batches within the defaults
    with pytest.raises(BudgetError, match="per step of a render") as err:
        batch_size(preset, (48, 64), 400, budget=Budget(render_pixels=px))
    assert err.value.step == 0 and err.value.op == "hue"


def test_binomial_range_is_the_exact_law():
    for n, p in ((400, 0.3), (57, 0.05), (1000, 0.5)):
        lo, hi = binomial_range(n, p)
        pmf = [Fraction(math.comb(n, k)) * Fraction(p) ** k * (1 - Fraction(p)) ** (n - k)
               for k in range(n + 1)]
        below, above = sum(pmf[:lo]), sum(pmf[hi + 1:])
        assert below <= ALPHA / 2 and above <= ALPHA / 2
        assert below + pmf[lo] > ALPHA / 2 and above + pmf[hi] > ALPHA / 2  # the tightest
    assert binomial_range(10, 0.0) == (0, 0) and binomial_range(10, 1.0) == (10, 10)


def test_weighted_groups_children_run_as_often_as_their_inclusion_chance(photo):
    group = {"one_of": [{"op": "hue", "params": {}}, {"op": "flip", "params": {}},
                        {"op": "brightness_contrast", "params": {}}],
             "pick": 2, "weights": [1, 2, 3]}
    preset = load(preset_dict([group], seed=3))
    chances = pick_probabilities(preset.steps[0])
    assert math.isclose(sum(chances.values()), 2.0, rel_tol=1e-4)
    assert chances[0] < chances[1] < chances[2]
    dist = collect(preset, photo, 400)
    children = [r for r in rates(preset, dist.records) if r.child is not None]
    assert [r.configured for r in children] == [chances[j] for j in range(3)]
    assert all(r.within for r in children), children
    assert sum(r.fired for r in children) == 2 * 400  # two of three on every sample


def test_rand_augment_records_the_operation_that_changed_the_pixels(photo, engine):
    """The recorded pick is what ran: at the strongest magnitude, the samples recorded as
    "identity" come out unchanged and every other pick changes the photo."""
    preset = load(preset_dict([{"op": "rand_augment", "params": {"n": 1, "m": 30}}], seed=3))
    small = thumbnail(photo)
    engine.set_arrays([small])
    render = engine.render(preset, draws=150)
    (pick,) = picks(preset, render.records)
    assert pick.labels == tuple(a.name for a in _rand_augment_suite())
    identity = pick.labels.index("identity")
    for d in range(150):
        unchanged = np.array_equal(render.tile(0, d), small)
        assert unchanged == (pick.picked[0][d] == identity), (d, pick.labels[pick.picked[0][d]])
    assert 0 < (pick.picked[0] == identity).sum() < 150


def test_policies_record_each_level_and_sub_policy(photo):
    preset = load(preset_dict([
        {"op": "rand_augment", "params": {"n": 2, "m": 9}},
        {"op": "trivial_augment", "probability": 0.5, "params": {"num_magnitude_bins": 11}},
        {"op": "auto_augment", "params": {"policy_name": "reduced_cifar10"}},
    ], seed=8))
    dist = collect(preset, photo, 200)
    ra, ta, aa = picks(preset, dist.records)
    assert ra.counts.shape == (2, 14) and ra.counts.sum() == 400  # two levels per sample
    assert ta.applied.sum() == ta.counts.sum() < 200  # counted where the step ran
    assert set(ta.numeric) == {"magnitude_bin", "negated"}
    assert set(np.unique(ta.numeric["magnitude_bin"])) <= set(range(11))
    assert aa.counts.shape == (1, 25) and aa.counts.sum() == 200
    assert "+" in aa.labels[0] and "p=" in aa.labels[0]
    lo, hi = aa.expected_range()
    assert lo < 8 < hi  # 200 uniform picks of 25
    bins = next(s for s in sampled(preset, dist.records) if s.param == "magnitude_bin")
    assert bins.op == "trivial_augment"


def test_every_draw_an_operator_declares_is_in_its_call():
    for spec in CATALOG.values():
        for d in spec.draws:
            assert "{" + d.name + "}" in spec.call, (spec.name, d.name)


def _rand_augment_suite():
    from nvidia.dali.auto_aug import rand_augment

    return rand_augment.get_rand_augment_suite()
