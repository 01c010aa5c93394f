"""DALI's auto-augment policies with every random choice drawn in the chain, independently.

``rand_augment.rand_augment`` and its siblings draw which augmentation a sample gets inside
DALI's function, where the preview cannot read it back, and DALI 2.4 gives every random node
they make the same explicit ``seed``: DALI's random operators with one seed draw one stream, so
the operation, the magnitude bin, the sign and AutoAugment's stage coins come out tied
(TrivialAugment applies translate_x only at bins 0-2, RandAugment's sign is fixed by the
operation, AutoAugment's last sub-policies hardly ever run their stages). These helpers are
DALI 2.4's ``apply_rand_augment``, ``apply_trivial_augment`` and ``apply_auto_augment`` (same
suites and policies, same ``select``) split in two: the draws, which the chain makes on lines
of their own, each from a seed slot of its own (:mod:`pipelines.draws`), so they are
independent and recorded, and the application, which draws nothing. The exporter copies them
into the training module like the other graph helpers, so the preview and the training code
run the same functions; ``tests/pipelines/test_policies.py`` checks the independence and
``tests/pipelines/test_oracle.py`` compares each recorded pick, bit for bit, with DALI's own
augmentation applied to the image.
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
    "_random_signs",
    "_rand_augment_ops",
    "_rand_augment",
    "_trivial_augment_ops",
    "_trivial_augment",
    "_auto_augment_policy",
    "_auto_augment_stages",
    "_auto_augment_pick",
    "_auto_augment_runs",
    "_auto_augment",
)
"""The helpers a chain may call, in the order the generated module defines them."""
DEPS = {
    "_auto_augment_stages": ("_auto_augment_policy",),
    "_auto_augment_pick": ("_auto_augment_policy",),
    "_auto_augment_runs": ("_auto_augment_policy", "_auto_augment_stages"),
    "_auto_augment": ("_auto_augment_policy", "_auto_augment_stages"),
}


def _random_signs(n, seed):
    """Whether each of a sample's ``n`` magnitudes is negated (1) or not (0), as DALI's
    ``signed_bin`` draws it, from a seed used for nothing else."""
    return fn.random.uniform(
        values=[0, 1],
        dtype=types.INT32,
        seed=seed,
        shape=() if n == 1 else (n,),
    )


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


def _rand_augment(images, ops, signs, n, m):
    """DALI's ``rand_augment.rand_augment(images, n, m)``, applying the drawn ``ops`` at
    bin ``m`` with the drawn ``signs`` (one of each per level)."""
    suite = rand_augment.get_rand_augment_suite()
    bins = signed_bin(m, random_sign=signs)
    for level in range(n):
        images = select(
            suite,
            ops if n == 1 else ops[level],
            data=images,
            magnitude_bin=bins if n == 1 else bins[level],
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


def _trivial_augment(images, op, magnitude_bin, sign, num_magnitude_bins):
    """DALI's ``trivial_augment.trivial_augment_wide(images, num_magnitude_bins)``,
    applying the drawn ``op`` at the drawn ``magnitude_bin`` with the drawn ``sign``."""
    suite = trivial_augment.get_trivial_augment_wide_suite()
    return select(
        suite,
        op,
        data=images,
        magnitude_bin=signed_bin(magnitude_bin, random_sign=sign),
        num_magnitude_bins=num_magnitude_bins,
        fill_value=128,
        interp_type=None,
    )


def _auto_augment_policy(name):
    """One of DALI's predefined AutoAugment policies, by name."""
    return getattr(auto_augment, f"get_{name}_policy")()


def _auto_augment_stages(name):
    """How many stages the longest sub-policy of the policy has (each sample
    draws a coin and a sign for each; DALI's four policies have two)."""
    return max(len(s) for s in _auto_augment_policy(name).sub_policies)


def _auto_augment_pick(name, seed):
    """The sub-policy AutoAugment applies to each sample, drawn as DALI's
    ``apply_auto_augment`` draws it."""
    count = len(_auto_augment_policy(name).sub_policies)
    return fn.random.uniform(values=list(range(count)), seed=seed, dtype=types.INT32)


def _auto_augment_runs(sub_policy, name, seed):
    """Whether each stage of the drawn ``sub_policy`` runs on the sample (1) or
    not (0): a uniform draw per stage below the stage's probability, as DALI draws
    it, from a seed used for nothing else."""
    subs = _auto_augment_policy(name).sub_policies
    stages = _auto_augment_stages(name)
    probs = np.zeros((len(subs), stages), dtype=np.float32)
    for i, s in enumerate(subs):
        for k, (_, p, _) in enumerate(s):
            probs[i, k] = p
    u = fn.random.uniform(range=[0, 1], shape=(stages,), dtype=types.FLOAT, seed=seed)
    return fn.cast(u < types.Constant(probs)[sub_policy], dtype=types.INT32)


def _auto_augment(images, sub_policy, runs, signs, name):
    """DALI's ``auto_augment.auto_augment(images, policy_name=name)``, applying
    the drawn ``sub_policy``: the stages its drawn ``runs`` say, with the drawn
    ``signs``."""
    policy = _auto_augment_policy(name)
    subs = policy.sub_policies
    stages = _auto_augment_stages(name)
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
        for k, (aug, _, mag) in enumerate(s):
            # DALI's placeholder for a stage without a magnitude: never used
            bins[i, k] = mag if mag is not None else -999
            ids[i, k] = suites[k].index(aug)
    mag_bins = signed_bin(types.Constant(bins)[sub_policy], random_sign=signs)
    aug_ids = types.Constant(ids)[sub_policy]
    for k in range(stages):
        if runs[k] == 1:
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
