"""DALI's auto-augment policies with the augmentation each sample gets drawn in the chain.

``rand_augment.rand_augment`` and its siblings draw which augmentation a sample gets inside
DALI's function, where the preview cannot read it back. These helpers are DALI 2.4's own
``apply_rand_augment``, ``apply_trivial_augment`` and ``apply_auto_augment`` (same suites and
policies, same random nodes with the same seeds, so the same output for the same seed) split
in two: the draw of the pick, which the chain makes on a line of its own so the preview
records it (:mod:`pipelines.draws`), and the application with DALI's ``select``. The exporter
copies them into the training module like the other graph helpers, so the preview and the
training code run the same functions; ``tests/pipelines/test_oracle.py`` compares them, bit
for bit, with DALI's functions.
"""

from __future__ import annotations

import numpy as np
from nvidia.dali import fn, types
from nvidia.dali.auto_aug import (
    augmentations,
    auto_augment,
    rand_augment,
    trivial_augment,
)
from nvidia.dali.auto_aug.core import select, signed_bin

HELPERS = (
    "_rand_augment_ops",
    "_rand_augment",
    "_trivial_augment_ops",
    "_trivial_augment",
    "_auto_augment_policy",
    "_auto_augment_pick",
    "_auto_augment",
)
"""The helpers a chain may call, in the order the generated module defines them."""
DEPS = {
    "_auto_augment_pick": ("_auto_augment_policy",),
    "_auto_augment": ("_auto_augment_policy",),
}


def _rand_augment_ops(n, seed):
    """The operations RandAugment applies to each sample (n of them, one after the
    other), drawn as DALI's ``apply_rand_augment`` draws them."""
    count = len(rand_augment.get_rand_augment_suite())
    return fn.random.uniform(
        values=list(range(count)),
        seed=seed,
        shape=() if n == 1 else (n,),
        dtype=types.INT32,
    )


def _rand_augment(images, ops, n, m, seed):
    """DALI's ``rand_augment.rand_augment(images, n, m, seed=seed)``, applying the drawn
    ``ops``."""
    suite = rand_augment.get_rand_augment_suite()
    shape = () if n == 1 else (n,)
    signed = any(aug.randomly_negate for aug in suite)
    bins = signed_bin(m, seed=seed, shape=shape) if signed else m
    for level in range(n):
        images = select(
            suite,
            ops if n == 1 else ops[level],
            data=images,
            magnitude_bin=bins if not signed or n == 1 else bins[level],
            num_magnitude_bins=31,
            fill_value=128,
            interp_type=None,
        )
    return images


def _trivial_augment_ops(seed):
    """The operation TrivialAugment Wide applies to each sample, drawn as DALI's
    ``apply_trivial_augment`` draws it."""
    count = len(trivial_augment.get_trivial_augment_wide_suite())
    return fn.random.uniform(values=list(range(count)), seed=seed, dtype=types.INT32)


def _trivial_augment(images, op, magnitude_bin, num_magnitude_bins, seed):
    """DALI's ``trivial_augment.trivial_augment_wide(images, num_magnitude_bins,
    seed=seed)``, applying the drawn ``op`` at the drawn ``magnitude_bin``."""
    suite = trivial_augment.get_trivial_augment_wide_suite()
    if any(aug.randomly_negate for aug in suite):
        magnitude_bin = signed_bin(magnitude_bin, seed=seed)
    return select(
        suite,
        op,
        data=images,
        magnitude_bin=magnitude_bin,
        num_magnitude_bins=num_magnitude_bins,
        fill_value=128,
        interp_type=None,
    )


def _auto_augment_policy(name):
    """One of DALI's predefined AutoAugment policies, by name."""
    return getattr(auto_augment, f"get_{name}_policy")()


def _auto_augment_pick(name, seed):
    """The sub-policy AutoAugment applies to each sample, drawn as DALI's
    ``apply_auto_augment`` draws it."""
    count = len(_auto_augment_policy(name).sub_policies)
    return fn.random.uniform(values=list(range(count)), seed=seed, dtype=types.INT32)


def _auto_augment(images, sub_policy, name, seed):
    """DALI's ``auto_augment.auto_augment(images, policy_name=name, seed=seed)``,
    applying the drawn ``sub_policy``: each of its stages runs with its own
    probability."""
    policy = _auto_augment_policy(name)
    subs = policy.sub_policies
    stages = max(len(s) for s in subs)
    should_run = fn.random.uniform(
        range=[0, 1],
        shape=(stages,),
        dtype=types.FLOAT,
        seed=seed,
    )
    probs = np.zeros((len(subs), stages), dtype=np.float32)
    bins = np.zeros((len(subs), stages), dtype=np.int32)
    suites = []  # per stage: its augmentations in order of first use, then the identity
    for k in range(stages):
        used = []
        for s in subs:
            if k < len(s) and s[k][0] not in used:
                used.append(s[k][0])
        suites.append(used + [augmentations.identity])
    ids = np.array([[len(suite) - 1 for suite in suites] for _ in subs], dtype=np.int32)
    for i, s in enumerate(subs):
        for k, (aug, p, mag) in enumerate(s):
            probs[i, k] = p
            # DALI's placeholder for a stage without a magnitude: never used
            bins[i, k] = mag if mag is not None else -999
            ids[i, k] = suites[k].index(aug)
    run_p = types.Constant(probs)[sub_policy]
    mag_bins = types.Constant(bins)[sub_policy]
    aug_ids = types.Constant(ids)[sub_policy]
    if any(aug.randomly_negate for aug in policy.augmentations.values()):
        mag_bins = signed_bin(mag_bins, seed=seed, shape=(stages,))
    for k in range(stages):
        if should_run[k] < run_p[k]:
            images = select(
                suites[k],
                aug_ids[k],
                data=images,
                magnitude_bin=mag_bins[k],
                num_magnitude_bins=policy.num_magnitude_bins,
                fill_value=128,
                interp_type=None,
            )
    return images
