"""DALI's auto_aug augmentations as single steps, and whole policies as steps.

Single augmentations are driven by a magnitude bin exactly as in RandAugment: the parameter is
``mag_to_param(linspace(*mag_range, 31)[bin])``, negated at random for signed ones. Bin 0 is the
weakest (the identity) and the effect grows with the bin. ``mag_range`` is DALI's default except
where ``_MAG_RANGE`` says otherwise: DALI's default posterize range (0, 4) counts kept bits, so
its bin 0 keeps 1 bit (the strongest) and higher bins get weaker; RandAugment's (8, 4) is used.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from ..draws import Draw
from ..labels import KEEP, Refuse
from ..opspec import OpSpec
from ..params import Param, magnitude_bin
from ..work import Taps, passes

_SIGNED = ("shear_x", "shear_y", "translate_x", "translate_y", "rotate", "brightness",
           "contrast", "color", "sharpness")
_UNSIGNED = ("posterize", "solarize", "solarize_add")
_PLAIN = ("invert", "equalize", "auto_contrast")

_DOCS = {
    "shear_x": "Shear along x (mag 0-0.3), fill 128.",
    "shear_y": "Shear along y (mag 0-0.3), fill 128.",
    "translate_x": "Translate along x by up to the image width, fill 128.",
    "translate_y": "Translate along y by up to the image height, fill 128.",
    "rotate": "Rotate by up to 30 degrees, fill 128.",
    "brightness": "PIL-style brightness enhance, factor 1 +- 0.9.",
    "contrast": "PIL-style contrast enhance, factor 1 +- 0.9.",
    "color": "PIL-style colour (saturation) enhance, factor 1 +- 0.9.",
    "sharpness": "PIL-style sharpness enhance, factor 1 +- 0.9.",
    "posterize": "Keep the top bits of each channel: all 8 at bin 0 down to 4 at bin 30 "
                 "(the RandAugment range).",
    "solarize": "Invert pixels above a threshold that falls from 256 to 0.",
    "solarize_add": "Add up to 110 to pixels below 128.",
    "invert": "Invert all pixels (255 - x).",
    "equalize": "Histogram equalisation (auto_aug variant).",
    "auto_contrast": "Stretch each channel to the full range.",
}

_ALIASES = {
    "shear_x": ("ShearX",), "shear_y": ("ShearY",), "translate_x": ("TranslateX",),
    "translate_y": ("TranslateY",), "sharpness": ("RandomAdjustSharpness",),
    "posterize": ("RandomPosterize", "Posterize"), "solarize": ("RandomSolarize", "Solarize"),
    "invert": ("RandomInvert", "InvertImg"), "equalize": ("RandomEqualize",),
    "auto_contrast": ("RandomAutocontrast", "AutoContrast"),
}
"""torchvision / albumentations names of the single augmentations (the picker searches them)."""

_GEOMETRIC = ("shear_x", "shear_y", "translate_x", "translate_y", "rotate")
_UNAWARE = Refuse("DALI's auto_aug warps the image without exposing the matrix, so labels "
                  "cannot follow; use rotate, warp_affine or crop instead")
_POLICY_UNAWARE = Refuse("the policy may apply shear, translate or rotate, whose matrices DALI's "
                         "auto_aug does not expose; build the chain from label-aware steps")

_MAG_RANGE = {"posterize": (8, 4)}
"""Magnitude ranges that replace DALI's default (as ``augmentation(mag_range=...)``)."""

_NEGATE = Param("random_sign", "bool", True, "Negate the magnitude at random (half the samples)")
_SHAPE = {"translate_x": ", shape={x}.shape()", "translate_y": ", shape={x}.shape()"}


def _suite_names(policy: str) -> tuple[str, ...]:
    """Names of the augmentations of DALI's RandAugment or TrivialAugment Wide suite, in the
    order its drawn index counts them."""
    from nvidia.dali.auto_aug import rand_augment, trivial_augment

    suite = (rand_augment.get_rand_augment_suite() if policy == "rand_augment"
             else trivial_augment.get_trivial_augment_wide_suite())
    return tuple(aug.name for aug in suite)


def _sub_policy_names(params: Mapping[str, Any]) -> tuple[str, ...]:
    """Each sub-policy of DALI's AutoAugment policy: its stages, with the probability each
    runs with and its magnitude bin."""
    from nvidia.dali.auto_aug import auto_augment

    policy = getattr(auto_augment, f"get_{params['policy_name']}_policy")()
    return tuple(" + ".join(f"{aug.name} p={p:g}" + ("" if mag is None else f" bin {mag}")
                            for aug, p, mag in sub) for sub in policy.sub_policies)


_OP_DOC = "the augmentation applied (index into DALI's suite)"


def _single(name: str) -> OpSpec:
    if name in _PLAIN:
        return OpSpec(f"auto_aug.{name}", "auto-augment", _DOCS[name],
                      f"augmentations.{name}({{x}})", aliases=_ALIASES.get(name, ()),
                      labels=KEEP)
    signed = name in _SIGNED
    sign = "{random_sign}, {seed}" if signed else "False, 0"
    params = (magnitude_bin(), _NEGATE) if signed else (magnitude_bin(),)
    aug = f"augmentations.{name}"
    if name in _MAG_RANGE:
        aug += f".augmentation(mag_range={_MAG_RANGE[name]})"
    return OpSpec(
        f"auto_aug.{name}",
        "auto-augment",
        _DOCS[name],
        f"{aug}({{x}}, magnitude_bin=_bin({{magnitude_bin}}, {sign}), "
        f"num_magnitude_bins=31{_SHAPE.get(name, '')})",
        params,
        magnitude="magnitude_bin",
        aliases=_ALIASES.get(name, ()),
        labels=_UNAWARE if name in _GEOMETRIC else KEEP,
    )


_POLICIES = ("image_net", "reduced_image_net", "svhn", "reduced_cifar10")

_SIGN_DOC = ("1 where the magnitude was negated, 0 where not (drawn for every augmentation; "
             "those without a sign ignore it)")


def _stages(params: Mapping[str, Any]) -> int:
    """Stages of the longest sub-policy of the chosen AutoAugment policy (a coin and a sign
    are drawn for each)."""
    from .auto_aug_graph import _auto_augment_stages

    return _auto_augment_stages(params["policy_name"])


@functools.cache
def _most_stages() -> float:
    """AutoAugment applies up to one operation per stage of the sub-policy drawn: as many
    passes as the longest sub-policy of any of its policies has stages (two in DALI's). Read
    once: every render's plan asks, and making DALI's four policies took 0.34 ms."""
    return passes(max(_stages({"policy_name": name}) for name in _POLICIES))


OPS = [_single(n) for n in _SIGNED + _UNSIGNED + _PLAIN] + [
    OpSpec(
        "rand_augment",
        "auto-augment",
        "RandAugment: n random augmentations per sample at magnitude m.",
        "_rand_augment({x}, {op}, {negated}, n={n}, m={m})",
        (
            Param("n", "int", 2, "Augmentations per sample", bounds=(1, 6), slider=(1, 4),
                  step=1),
            Param("m", "int", 9, "Magnitude bin (of 31)", bounds=(0, 30), slider=(0, 30),
                  step=1),
        ),
        magnitude="m",
        policy=True,
        work=Taps(("n",), passes),  # n operations, each a pass over the pixels
        labels=_POLICY_UNAWARE,
        conditionals=True,
        aliases=("RandAugment",),
        draws=(Draw("op", "_rand_augment_ops({n}, {seed})", _OP_DOC + ", one per level",
                    lambda _: _suite_names("rand_augment"), levels="n"),
               Draw("negated", "_random_signs({n}, {seed})", _SIGN_DOC + ", one per level",
                    levels="n")),
    ),
    OpSpec(
        "trivial_augment",
        "auto-augment",
        "TrivialAugment Wide: one random augmentation at a random magnitude.",
        "_trivial_augment({x}, {op}, {magnitude_bin}, {negated}, "
        "num_magnitude_bins={num_magnitude_bins})",
        (Param("num_magnitude_bins", "int", 31, "Number of magnitude bins", bounds=(2, 101),
               slider=(2, 64), step=1),),
        policy=True,
        labels=_POLICY_UNAWARE,
        conditionals=True,
        aliases=("TrivialAugmentWide", "TrivialAugment"),
        draws=(Draw("magnitude_bin",
                    "fn.random.uniform(values=list(range({num_magnitude_bins})), "
                    "dtype=types.INT32, seed={seed})",
                    "the magnitude bin drawn"),
               Draw("negated", "_random_signs(1, {seed})", _SIGN_DOC),
               Draw("op", "_trivial_augment_ops({seed})", _OP_DOC,
                    lambda _: _suite_names("trivial_augment"))),
    ),
    OpSpec(
        "auto_augment",
        "auto-augment",
        "AutoAugment: a learned policy of 25 sub-policies (ImageNet, SVHN or CIFAR-10).",
        "_auto_augment({x}, {sub_policy}, {stage_ran}, {negated}, {policy_name})",
        (Param("policy_name", "enum", "image_net", "Policy", choices=_POLICIES),),
        policy=True,
        work=Taps((), _most_stages),  # a pass per stage of the sub-policy
        labels=_POLICY_UNAWARE,
        conditionals=True,
        aliases=("AutoAugment",),
        draws=(Draw("sub_policy", "_auto_augment_pick({policy_name}, {seed})",
                    "the sub-policy applied", _sub_policy_names),
               Draw("stage_ran", "_auto_augment_runs({sub_policy}, {policy_name}, {seed})",
                    "1 where the stage of the sub-policy ran (a coin with the stage's p), one "
                    "per stage", levels=_stages),
               Draw("negated", "_random_signs(_auto_augment_stages({policy_name}), {seed})",
                    _SIGN_DOC + ", one per stage", levels=_stages)),
    ),
]
