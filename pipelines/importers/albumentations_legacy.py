"""Arguments of Albumentations 1.x that Albumentations 2 still accepts, and ignores.

Albumentations 2 builds a transform given an argument it no longer has (``always_apply``, or a
1.x name such as CoarseDropout's ``max_holes``) with the warning "Argument(s) '...' are not
valid for transform ..." and runs it without that argument: the 2.x argument that took over
its meaning keeps its own value. The import does the same, so a pipeline written for 1.x
imports as Albumentations 2 runs it instead of being refused, and a note says what the argument
meant in 1.x and which 2.x argument to write for that. Only ``always_apply`` and the names a
rule declares in ``ignored`` are read so: any other unknown argument (a typo) is still refused.
Inside ``Compose(strict=True)`` Albumentations 2 raises ValueError on these arguments (even
``always_apply=False``) instead, so there the transform that has one is refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .rules import Args, Context, Conversion, Refused, Rule, plain
from .source import Call

Legacy = Mapping[str, tuple[str, str]]
"""A 1.x argument -> (the 2.x argument that carries its meaning now, what it set in 1.x)."""

ALWAYS_APPLY: Legacy = {"always_apply": ("p", "p=1, applied always")}
"""Every 1.x transform's: Albumentations 2 keeps p (its default or the one given)."""

FILL: Legacy = {"value": ("fill", "the border fill"),
                "mask_value": ("fill_mask", "the mask's border fill")}
"""The 1.x names of the warps' fill (Rotate, ShiftScaleRotate)."""

REMOVED: Mapping[str, str] = {
    "Cutout": "CoarseDropout", "JpegCompression": "ImageCompression",
    "RandomBrightness": "RandomBrightnessContrast(brightness_limit=..., contrast_limit=0)",
    "RandomContrast": "RandomBrightnessContrast(brightness_limit=0, contrast_limit=...)",
    "Flip": "HorizontalFlip / VerticalFlip", "IAAAdditiveGaussianNoise": "GaussNoise",
    "IAASharpen": "Sharpen", "IAAEmboss": "Emboss", "IAAPerspective": "Perspective",
    "IAAAffine": "Affine", "IAAPiecewiseAffine": "PiecewiseAffine",
    "IAASuperpixels": "Superpixels"}
"""Albumentations 1.x transforms that Albumentations 2 no longer has, and what replaces them
(a pipeline that uses one does not run on 2.x)."""

_NOTES = "_ignored"
"""The bound arguments' key for the notes on what was ignored (no library argument starts
with an underscore)."""
_STRICT = "_strict_refusal"
"""The bound arguments' key for the refusal under ``Compose(strict=True)``: (reason,
nearest)."""


@dataclass(frozen=True)
class AlbumentationsRule(Rule):
    """An Albumentations rule that also reads ``always_apply`` and the 1.x arguments it
    declares in ``ignored``, as Albumentations 2 does: left out, with a note (inside
    ``Compose(strict=True)``, where Albumentations 2 raises on them, refused)."""

    ignored: Legacy = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.convert is not None and not isinstance(self.convert, _Noting):
            object.__setattr__(self, "convert", _Noting(self.convert))

    def bind(self, call: Call) -> Args:
        legacy = {**ALWAYS_APPLY, **self.ignored}
        old = {k: plain(v) for k, v in call.kwargs.items() if k in legacy}
        args = super().bind(replace(call, kwargs={k: v for k, v in call.kwargs.items()
                                                  if k not in old}))
        notes = [_note(name, value, *legacy[name], args) for name, value in old.items()
                 if value is not None and value is not False]  # 1.x's "not set"
        if notes:
            args[_NOTES] = notes
        if old:
            args[_STRICT] = _strict_refusal(call.name, {k: legacy[k] for k in old})
        return args


@dataclass(frozen=True)
class _Noting:
    """A rule's conversion with the notes on the ignored arguments put first, or the refusal
    when the context is an Albumentations ``Compose(strict=True)``."""

    convert: Callable[[Args, Context], Conversion]

    def __call__(self, a: Args, c: Context) -> Conversion:
        notes = a.pop(_NOTES, [])
        refusal = a.pop(_STRICT, None)
        if refusal is not None and c.strict:
            raise Refused(*refusal)
        conv = self.convert(a, c)
        conv.notes[:0] = notes
        return conv


def _note(name: str, value: Any, now: str, meant: str, args: Args) -> str:
    return (f"{name}={value!r} ignored, as Albumentations 2 does (it warns that the argument "
            f"is not valid) keeping {now}={args.get(now)!r}; in 1.x it meant {meant} (2.x: "
            f"{now})")


def _strict_refusal(name: str, old: Legacy) -> tuple[str, str]:
    """Why a transform with 1.x arguments is refused inside Compose(strict=True), and what to
    write instead."""
    names = ", ".join(old)
    reason = (f"{names} inside Compose(strict=True): Albumentations 2 raises ValueError "
              f"(\"Argument(s) '{names}' are not valid for transform {name}\") instead of "
              "ignoring it as it does without strict")
    nearest = "; ".join(f"{k}: write {now} ({meant} in 1.x)" for k, (now, meant) in old.items())
    return reason, f"{nearest}, or Compose(strict=False)"


def accepting_legacy(rule: Rule) -> Rule:
    """The rule as an :class:`AlbumentationsRule`; containers stay as they are (Albumentations
    2's OneOf / SomeOf / Compose raise on always_apply: a TypeError)."""
    if rule.kind == "container" or isinstance(rule, AlbumentationsRule):
        return rule
    return AlbumentationsRule(**{f.name: getattr(rule, f.name) for f in fields(rule)})
