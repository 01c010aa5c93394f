"""What the chain draws, counted from the pipeline's own records: a group's picks follow the
ratios of its weights however small they are, an integer ``uniform`` draws every value of
[lo, hi] equally often and never one outside, and the export draws what the preview drew."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest

from dali_gallery.pipelines.distribution import collect
from dali_gallery.pipelines.distribution_stats import pick_probabilities, rates
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import PresetError, load
from tests.support import SAMPLES, first_batch, preset_dict

CHILDREN = [{"op": "brightness", "params": {"brightness": 1.1}},
            {"op": "contrast", "params": {"contrast": 1.1}},
            {"op": "saturation", "params": {"saturation": 1.1}}]
CHI2_999 = {2: 13.82, 30: 59.70}  # chi-square quantile 0.999 by degrees of freedom


@pytest.mark.parametrize(("weights", "expected"), [
    ([1e-4, 1e-4, 1e-4], [2 / 3] * 3),  # keys u ** (1 / w) underflowed: 1.0 / 0.99 / 0.01
    ([0.01, 0.01, 0.01], [2 / 3] * 3),  # 0.725 / 0.725 / 0.55
    ([1, 0.01, 0.01], [1.0, 0.5, 0.5]),  # 1.0 / 0.58 / 0.42
])
def test_pick_two_follows_the_ratios_of_small_weights(photo, weights, expected):
    preset = load(preset_dict([{"one_of": CHILDREN, "pick": 2, "weights": weights}], seed=3))
    chances = pick_probabilities(preset.steps[0])
    assert [chances[j] for j in range(3)] == pytest.approx(expected, abs=1e-3)
    draws = 2000  # the ties of (1, 0.01, 0.01) moved a rate by 0.065
    dist = collect(preset, photo, draws)
    children = [r for r in rates(preset, dist.records) if r.child is not None]
    assert sum(r.fired for r in children) == 2 * draws  # two distinct children every sample
    for r, p in zip(children, expected, strict=True):
        assert r.within, children  # the exact binomial bound around the configured chance
        assert abs(r.observed - p) <= 4 * math.sqrt(p * (1 - p) / draws) + 1e-9, children


def test_pick_one_follows_small_weights(photo):
    preset = load(preset_dict([{"one_of": CHILDREN, "weights": [1e-6, 1e-6, 2e-6]}], seed=3))
    dist = collect(preset, photo, 400)
    children = [r for r in rates(preset, dist.records) if r.child is not None]
    assert [r.configured for r in children] == pytest.approx([0.25, 0.25, 0.5])
    assert all(r.within for r in children), children


def test_an_integer_uniform_draws_each_value_of_lo_to_hi_equally_often(photo):
    """DALI's INT32 uniform rounds a float draw in [lo, hi): quality [1, 3] came 1:2:1."""
    preset = load(preset_dict([
        {"op": "jpeg_compression_distortion", "params": {"quality": {"uniform": [1, 3]}}},
        {"op": "auto_aug.brightness", "params": {"magnitude_bin": {"uniform": [0, 30]}}},
    ], seed=0))
    draws = 1500
    dist = collect(preset, photo, draws)
    for step, param, lo, hi in ((0, "quality", 1, 3), (1, "magnitude_bin", 0, 30)):
        counts = Counter(int(r.values[step][param]) for r in dist.records)
        assert set(counts) == set(range(lo, hi + 1)), counts  # the ends drawn, none beyond
        expected = draws / (hi - lo + 1)
        chi2 = sum((counts[v] - expected) ** 2 / expected for v in range(lo, hi + 1))
        assert chi2 < CHI2_999[hi - lo], (param, chi2, sorted(counts.items()))


def test_an_integer_uniform_of_one_value_says_to_use_the_literal():
    bad = preset_dict([{"op": "jpeg_compression_distortion",
                        "params": {"quality": {"uniform": [4, 4]}}}])
    with pytest.raises(PresetError, match=r"uniform \[4, 4\] holds one integer; .*literal 4"):
        load(bad)


def test_export_draws_the_weighted_group_and_integer_uniform_the_preview_drew(tmp_path):
    """The preview feeds the range and the keys' factors; the export writes them as
    literals: the first batch is the preview's first draw, bit for bit."""
    preset = load(preset_dict([
        {"one_of": [{"op": "jpeg_compression_distortion",
                     "params": {"quality": {"uniform": [1, 40]}}}, *CHILDREN],
         "pick": 2, "weights": [1e-4, 3e-4, 1e-4, 2e-4]},
        {"op": "grid_mask", "params": {"tile": {"uniform": [3, 9]}, "ratio": 0.3}},
    ], seed=13))
    eng = PreviewEngine("cpu", num_threads=2)
    eng.set_images(SAMPLES)
    eng.set_arrays(eng.images[:4], eng.names[:4])
    render = eng.render(preset)
    eng.close()
    ran = {j for rec in render.records for j in range(4) if rec.child_ran(0, j)}
    assert len(ran) >= 3  # the pick varies over the batch
    for preview, exported in zip(render.images, first_batch(preset, SAMPLES, 4, tmp_path),
                                 strict=True):
        np.testing.assert_array_equal(preview, exported)
