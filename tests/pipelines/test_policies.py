"""The auto-augment policies draw their random choices independently of each other.

DALI 2.4's policy functions (``rand_augment.rand_augment``, ``trivial_augment_wide``,
``auto_augment``) give the same explicit ``seed`` to every random node they make, and DALI's
random operators with one seed read one stream: the operation, the magnitude bin, the sign and
AutoAugment's stage coins come out tied (TrivialAugment applied translate_x only at bins 0-2;
RandAugment's sign was set by the operation). The project draws each choice from a seed slot
of its own (:mod:`dali_gallery.pipelines.draws`). These tests read what the real pipeline drew
(its own records, collected by :mod:`dali_gallery.pipelines.distribution` over many draws) and
check that every pairing occurs; each of them fails on the tied draws.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from nvidia.dali import fn, pipeline_def, types
from nvidia.dali.auto_aug import auto_augment, rand_augment, trivial_augment

from dali_gallery.pipelines.codegen import chain_source
from dali_gallery.pipelines.distribution import collect
from dali_gallery.pipelines.preset import load
from tests.support import preset_dict

DRAWS = 2000


@pytest.fixture(scope="module")
def policies(photo):
    """2000 draws of a chain of the three policies: what each sample drew, per step."""
    preset = load(preset_dict([
        {"op": "trivial_augment", "params": {"num_magnitude_bins": 31}},
        {"op": "rand_augment", "params": {"n": 2, "m": 9}},
        {"op": "auto_augment", "params": {"policy_name": "image_net"}},
    ], seed=5))
    dist = collect(preset, photo, DRAWS)
    assert dist.draws == DRAWS
    return [{k: [r.values[step][k] for r in dist.records] for k in dist.records[0].values[step]}
            for step in range(3)]


def test_dali_s_own_policy_seeding_ties_the_draws():
    """The bug, in plain DALI: three random nodes of one seed, as ``apply_trivial_augment``
    makes them (operation, magnitude bin, sign), draw one stream, so each operation gets
    only a few neighbouring bins and one sign. This is why the project does not call DALI's
    policy functions with a seed."""

    @pipeline_def(batch_size=500, num_threads=1, device_id=None, seed=1)
    def tied():
        seed = 1234
        bin_ = fn.random.uniform(values=list(range(31)), dtype=types.INT32, seed=seed)
        sign = fn.random.uniform(values=[0, 1], dtype=types.INT32, seed=seed)
        op = fn.random.uniform(values=list(range(14)), dtype=types.INT32, seed=seed)
        # apply_rand_augment: the n operations and their signs, shape (n,), one seed
        ops = fn.random.uniform(values=list(range(14)), dtype=types.INT32, seed=seed,
                                shape=(2,))
        signs = fn.random.uniform(values=[0, 1], dtype=types.INT32, seed=seed, shape=(2,))
        return op, bin_, sign, ops, signs

    pipe = tied()
    pipe.build()
    op, bin_, sign, ops, signs = (np.array(out.as_tensor()).ravel() for out in pipe.run())
    del pipe
    for k in range(14):
        assert len(set(bin_[op == k])) <= 4 and len(set(sign[op == k])) == 1
        assert len(set(signs[ops == k])) == 1


def test_trivial_augment_draws_every_bin_for_every_operation(policies):
    ta = policies[0]
    names = [a.name for a in trivial_augment.get_trivial_augment_wide_suite()]
    bins: dict[int, set[int]] = defaultdict(set)
    for op, b in zip(ta["op"], ta["magnitude_bin"], strict=True):
        bins[op].add(b)
    assert set(bins) == set(range(len(names)))
    # ~143 draws per operation over 31 equally likely bins: all but a few show up (the tied
    # draws gave each operation 3 or 4 neighbouring bins)
    thin = {names[k]: sorted(b) for k, b in bins.items() if len(b) < 25}
    assert not thin, f"operations drawn at only a few bins: {thin}"
    cells = sum(len(b) for b in bins.values())
    assert cells >= 0.95 * len(names) * 31


def test_trivial_augment_sign_is_independent_of_the_operation(policies):
    ta = policies[0]
    _both_signs_for_every_signed_op(ta["op"], ta["negated"],
                                    trivial_augment.get_trivial_augment_wide_suite())


def test_rand_augment_sign_is_independent_of_the_operation(policies):
    ra = policies[1]
    suite = rand_augment.get_rand_augment_suite()
    for level in (1, 2):
        _both_signs_for_every_signed_op(ra[f"op_{level}"], ra[f"negated_{level}"], suite)
    # and the two levels are drawn independently of each other
    pairs = set(zip(ra["op_1"], ra["op_2"], strict=True))
    assert len(pairs) >= 0.9 * len(suite) ** 2


def _both_signs_for_every_signed_op(ops: list[int], signs: list[int], suite: list) -> None:
    for k, aug in enumerate(suite):
        if not aug.randomly_negate:
            continue
        drawn = np.array([s for o, s in zip(ops, signs, strict=True) if o == k])
        assert drawn.size > 50, aug.name
        # ~0.5 with about 140-290 draws per operation: 0.3-0.7 is beyond 5 sigma
        assert 0.3 < drawn.mean() < 0.7, (aug.name, drawn.mean(), drawn.size)


def test_auto_augment_stages_run_with_their_probability_whatever_the_sub_policy(policies):
    aa = policies[2]
    policy = auto_augment.get_image_net_policy()
    sub = np.array(aa["sub_policy"])
    for i, stages in enumerate(policy.sub_policies):
        here = sub == i
        assert here.sum() > 40, i
        for k, (aug, p, _) in enumerate(stages):
            ran = np.array(aa[f"stage_ran_{k + 1}"])[here]
            # ~80 samples per sub-policy: |rate - p| within 0.25 is beyond 4 sigma
            assert abs(ran.mean() - p) <= 0.25, (i, k, aug.name, p, ran.mean())
            signs = np.array(aa[f"negated_{k + 1}"])[here]
            assert 0.2 < signs.mean() < 0.8, (i, k, signs.mean())
        for k in range(len(stages), 2):  # a missing stage never runs
            assert not np.array(aa[f"stage_ran_{k + 1}"])[here].any()


def test_each_choice_has_its_own_seed_slot():
    """Every random node of a policy step gets a seed of its own, set by the chain seed and the
    step's position only; the policy's application draws nothing."""
    for op, params, draws in (("rand_augment", {"n": 2, "m": 9}, 2),  # ops, signs
                              ("trivial_augment", {}, 3),  # bin, sign, op
                              ("auto_augment", {"policy_name": "svhn"}, 3)):  # pick, coins, signs
        preset = load(preset_dict([{"op": "flip"}, {"op": op, "params": params}]))
        body = chain_source(preset, "export").body
        start = next(k for k, line in enumerate(body) if line.startswith("# step 1"))
        seeds = [line.split("_op_seed(seed, ")[1].split(")")[0] for line in body[start:]
                 if "_op_seed(seed, " in line]
        assert len(seeds) == len(set(seeds)) == draws, (op, body[start:])
        call = next(line for line in body[start:] if line.startswith("images ="))
        assert "seed" not in call, call
