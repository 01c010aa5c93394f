"""Groups (``one_of``) in the preview engine: which children ran, read from the pipeline's own
outputs and checked against the pixels; pick frequencies that follow the weights; no other
step's draws change; fed weights and probabilities; errors and budgets named after the group."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from dali_gallery.pipelines.budget import Budget
from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.preset import Group, load
from dali_gallery.pipelines.render_budget import BudgetError, check_plan, plan_render
from tests.support import preset_dict, sample_engine

H = {"op": "flip", "params": {"horizontal": True, "vertical": False}}
V = {"op": "flip", "params": {"horizontal": False, "vertical": True}}
HV = {"op": "flip", "params": {"horizontal": True, "vertical": True}}


@pytest.fixture(scope="module")
def engine():
    eng = sample_engine(3)
    yield eng
    eng.close()


@pytest.fixture(scope="module")
def tiny():
    """One small image: many samples per render for the frequency tests."""
    eng = PreviewEngine("cpu", num_threads=2)
    rng = np.random.default_rng(0)
    eng.set_arrays([rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)])
    yield eng
    eng.close()


def group(*children, **keys):
    return {"one_of": list(children), **keys}


def flipped(orig: np.ndarray, step: dict) -> np.ndarray:
    h, v = step["params"]["horizontal"], step["params"]["vertical"]
    return orig[::-1 if v else 1, ::-1 if h else 1]


def test_each_sample_shows_the_child_its_record_says_ran(engine):
    children = [H, V, HV]
    preset = load(preset_dict([group(*children, probability=0.7)], seed=11))
    r = engine.render(preset, draws=8)
    fired_any = skipped = 0
    for j, rec in enumerate(r.records):
        orig = engine.images[rec.image]
        ran = [c for c in range(3) if rec.child_ran(0, c)]
        if not rec.fired[0]:
            skipped += 1
            assert ran == [] and np.array_equal(r.images[j], orig)
            continue
        fired_any += 1
        assert len(ran) == 1, rec.to_dict()
        np.testing.assert_array_equal(r.images[j], flipped(orig, children[ran[0]]))
    assert fired_any and skipped, "p=0.7 over 24 samples both fires and skips"


def test_several_picked_children_run_in_list_order_each_on_its_own_coin(engine):
    rotate = {"op": "rotate", "params": {"angle": {"uniform": [-30, 30]}}}
    coin = {**V, "probability": 0.5}
    preset = load(preset_dict([group(H, rotate, coin, pick=2)], seed=4))
    r = engine.render(preset, draws=10)
    counts = []
    for rec in r.records:
        assert -30 <= rec.child_values[0][1]["angle"] <= 30  # drawn for every sample
        counts.append(sum(rec.child_ran(0, c) for c in range(3)))
    assert set(counts) <= {1, 2} and 2 in counts  # two picked; the coin child may not run
    assert 1 in counts, "child 2 fires on its own coin once picked"


def test_a_group_of_all_children_applies_them_together_on_one_coin(engine):
    preset = load(preset_dict([group(H, V, pick=2, probability=0.5)], seed=9))
    r = engine.render(preset, draws=6)
    for j, rec in enumerate(r.records):
        ran = (rec.child_ran(0, 0), rec.child_ran(0, 1))
        assert ran == (rec.fired[0], rec.fired[0])
        orig = engine.images[rec.image]
        np.testing.assert_array_equal(r.images[j], orig[::-1, ::-1] if rec.fired[0] else orig)


def _frequencies(engine: PreviewEngine, steps: list,
                 n_children: int) -> dict[tuple[int, ...], float]:
    """How often each set of children ran, over 8 seeds x 256 samples."""
    seen: dict[tuple[int, ...], int] = {}
    total = 0
    for seed in range(8):
        r = engine.render(load(preset_dict(steps, seed=seed)), draws=256)
        for rec in r.records:
            ran = tuple(c for c in range(n_children) if rec.child_ran(0, c))
            seen[ran] = seen.get(ran, 0) + 1
            total += 1
    return {k: v / total for k, v in seen.items()}


def _close(observed: float, expected: float, n: int = 2048) -> bool:
    """Within 4.5 binomial standard deviations (fixed seeds: the result never flickers)."""
    return abs(observed - expected) <= 4.5 * np.sqrt(expected * (1 - expected) / n) + 1e-9


def test_one_picked_child_follows_the_weights(tiny):
    weights = [1.0, 2.0, 5.0]
    freq = _frequencies(tiny, [group(H, V, HV, weights=weights)], 3)
    for c, w in enumerate(weights):
        assert _close(freq.get((c,), 0.0), w / sum(weights)), freq
    assert set(freq) == {(0,), (1,), (2,)}


def test_several_picked_children_follow_weighted_draws_without_replacement(tiny):
    weights = [1.0, 2.0, 5.0]
    steps = [group(H, V, HV, weights=weights, pick=2)]
    freq = _frequencies(tiny, steps, 3)
    total = sum(weights)
    for a, b in itertools.combinations(range(3), 2):  # drawn one after the other
        wa, wb = weights[a], weights[b]
        expected = wa / total * wb / (total - wa) + wb / total * wa / (total - wb)
        assert _close(freq.get((a, b), 0.0), expected), (a, b, freq)
    assert set(freq) <= {(0, 1), (0, 2), (1, 2)}


def test_the_group_probability_and_a_childs_own_probability_multiply(tiny):
    steps = [group({**H, "probability": 0.5}, V, probability=0.6)]
    freq = _frequencies(tiny, steps, 2)
    assert _close(freq.get((0,), 0.0), 0.6 * 0.5 * 0.5)
    assert _close(freq.get((1,), 0.0), 0.6 * 0.5)


def test_a_group_changes_no_other_steps_draws(engine):
    rotate = {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-40, 40]}}}
    hue = {"op": "hue", "params": {"hue": {"uniform": [-30, 30]}}}
    blur = {"op": "gaussian_blur", "params": {"sigma": {"uniform": [0.5, 2.0]}}}
    inner = group({**rotate, "probability": 0.3}, {**hue, "probability": 0.7}, blur, pick=2,
                  probability=0.5, weights=[1, 2, 3])
    plain = engine.render(load(preset_dict([rotate, blur, hue], seed=3)), draws=3)
    grouped = engine.render(load(preset_dict([rotate, inner, hue], seed=3)), draws=3)
    for a, b in zip(plain.records, grouped.records, strict=True):
        assert a.fired[0] == b.fired[0]
        assert a.values[0] == b.values[0] and a.values[2] == b.values[2]


def test_weights_probabilities_and_child_values_are_fed_not_rebuilt(engine):
    def preset(k: int):
        return load(preset_dict([group(
            {"op": "rotate", "probability": 0.2 + 0.05 * k, "params": {"angle": 5.0 * k}},
            {"op": "hue", "params": {"hue": 3.0 * k}},
            probability=0.9 - 0.05 * k, weights=[1 + k, 2])]))

    engine.render(preset(0))
    builds = engine.builds
    for k in range(1, 6):
        assert not engine.render(preset(k)).built
    assert engine.builds == builds


def test_the_same_group_draws_the_same_every_render(engine):
    p = load(preset_dict([group(H, V, HV, probability=0.8, weights=[3, 2, 1])], seed=21))
    a, b = engine.render(p, draws=4), engine.render(p, draws=4)
    assert [r.to_dict() for r in a.records] == [r.to_dict() for r in b.records]
    for x, y in zip(a.images, b.images, strict=True):
        np.testing.assert_array_equal(x, y)


def test_a_failing_child_is_named_after_its_group(engine):
    bad = load(preset_dict([
        {"op": "hue", "params": {"hue": 10.0}},
        group(H, {"op": "crop", "params": {"crop_w": 4000.0, "crop_h": 4000.0,
                                           "out_of_bounds_policy": "error"}}, pick=2),
    ]))
    with pytest.raises(StepError) as err:
        engine.render(bad)
    assert (err.value.step, err.value.op) == (1, "one_of")
    assert str(err.value).startswith("step 1 (one_of): child 1 (crop): ")
    assert len(engine.render(load(preset_dict([H]))).images) == 3  # the engine goes on


def test_a_child_this_device_cannot_run_is_named_before_any_build(engine):
    p = load(preset_dict([group(H, {"op": "experimental.median_blur"})]))
    builds = engine.builds
    with pytest.raises(StepError, match="disable it") as err:
        engine.render(p)
    assert err.value.step == 0 and engine.builds == builds
    p.steps[0].children[1].enabled = False  # a disabled child is never picked nor built
    assert len(engine.render(p).images) == 3


def test_a_child_that_enlarges_the_images_counts_in_the_budget():
    preset = load(preset_dict([group(H, {"op": "paste", "params": {"ratio": 3.0}}), H]))
    plan = plan_render(preset, [(1000, 1000)], 1)
    assert plan.outputs == [(3000, 3000)]  # the larger of what the children may give
    with pytest.raises(BudgetError) as err:
        check_plan(plan, Budget(image_pixels=4_000_000))
    assert (err.value.step, err.value.op, err.value.param) == (0, "one_of", "ratio")
    assert str(err.value).startswith("step 0 (one_of): child 1 (paste): ratio 3 ")


def test_group_types_round_trip_through_the_document():
    p = load(preset_dict([group(H, V, weights=[1, 3], pick=1, probability=0.25)]))
    g = p.steps[0]
    assert isinstance(g, Group) and g.normalised_weights() == [0.25, 0.75]
    assert load(p.to_dict()).to_dict() == p.to_dict()
