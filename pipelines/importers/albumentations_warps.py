"""Albumentations affine and perspective warps -> rotate / warp_affine / warp_perspective steps.

Albumentations' per-axis arguments (a number, a range or {"x": ..., "y": ...}) are read per
axis; its shear in degrees becomes DALI's factor -tan(s); translations are not imported. DALI's
warp_affine has one zoom factor for both axes, so Albumentations' independent x and y scale
(keep_ratio=False, the default; always in ShiftScaleRotate) is reported as a difference.
"""

from __future__ import annotations

import math
from typing import Any

from .albumentations_geometry import (
    _GEOMETRY_DEFAULTS,
    LIB,
    LINEAR_WARP,
    _border,
    _interp,
    _p,
)
from .albumentations_legacy import FILL, AlbumentationsRule
from .reference import alb
from .rules import (
    Args,
    Context,
    Conversion,
    Fixed,
    Refused,
    Verdict,
    drawn,
    fill_level,
    fmt,
    number,
    pair,
    single_fill,
    step,
    symmetric,
)
from .torchvision_geometry import NEAREST_WARP


def _xy(value: Any, what: str, center: float = 0.0) -> tuple[tuple[float, float],
                                                             tuple[float, float]]:
    """Albumentations' per-axis forms: a number, a range or {"x": ..., "y": ...}."""
    if isinstance(value, dict):
        x = value.get("x", center)
        y = value.get("y", center)
        return _range(x, what, center), _range(y, what, center)
    r = _range(value, what, center)
    return r, r


def _range(v: Any, what: str, center: float) -> tuple[float, float]:
    """A range as written; a single number is that value (scale 1.2 means 1.2)."""
    if isinstance(v, (list, tuple)):
        return pair(v, what)
    x = number(v, what)
    return x, x


def _affine_convert(a: Args, c: Context, fixed: bool = False) -> Conversion:
    _border(a)
    if a["fit_output"]:
        raise Refused("fit_output: DALI's warps keep the image size", nearest="fit_output=False")
    interp = _interp(a["interpolation"])
    fill = fill_level(a["fill"], c)
    pick = (lambda lo, hi: hi if abs(hi) >= abs(lo) else lo) if fixed else drawn
    conv = Conversion()
    reasons = []
    rlo, rhi = symmetric(a["rotate"], "rotate") if not isinstance(a["rotate"], (int, float)) \
        else (float(a["rotate"]), float(a["rotate"]))
    if (rlo, rhi) != (0, 0):
        conv.steps.append(step("rotate", 1.0, angle=pick(rlo, rhi), keep_size=True,
                               fill_value=fill, interp_type=interp))
    sx, sy = _xy(a["scale"], "scale", 1.0)
    if a["keep_ratio"] and sx != sy:
        raise Refused(f"scale x {list(sx)} and y {list(sy)} differ with keep_ratio=True, which "
                      "Albumentations rejects when the transform is built",
                      nearest="one scale range for both axes")
    warp: dict[str, Any] = {}
    if sx != (1.0, 1.0):
        warp["scale"] = pick(*sx)
    reasons += _scale_differences(sx, sy, a, conv)
    (hxlo, hxhi), (hylo, hyhi) = _xy(a["shear"], "shear")
    if (hxlo, hxhi) != (0, 0):
        warp["shear_x"] = pick(*sorted((-math.tan(math.radians(hxhi)),
                                        -math.tan(math.radians(hxlo)))))
    if (hylo, hyhi) != (0, 0):
        warp["shear_y"] = pick(*sorted((-math.tan(math.radians(hyhi)),
                                        -math.tan(math.radians(hylo)))))
    if warp:
        conv.steps.append(step("warp_affine", 1.0, fill_value=fill, interp_type=interp, **warp))
    if _translates(a):
        if not conv.steps and not fixed:  # nothing of it would be imported
            raise Refused("its one change is the random translation, which no catalog step "
                          "makes (auto_aug translates by magnitude bins, fill 128)",
                          nearest="auto_aug.translate_x / translate_y")
        reasons.append("the random translation is not imported (the catalog translates only "
                       "by auto_aug magnitude bins)")
        conv.notes.append("translation dropped; nearest: auto_aug.translate_x / translate_y")
    if len(conv.steps) > 1:
        reasons.append("rotation and scale/shear are two resampling passes (Albumentations: "
                       "one)")
    for s in conv.steps:
        s["probability"] = 1.0 if fixed else _p(a)
    conv.verdict = Verdict("different", reason="; ".join(reasons)) if reasons else (
        NEAREST_WARP if interp == "nn" else LINEAR_WARP)
    return conv


def _scale_differences(sx: tuple[float, float], sy: tuple[float, float], a: Args,
                       conv: Conversion) -> list[str]:
    """How Albumentations' scale draw differs from DALI's one zoom factor for both axes: none
    when y follows x (keep_ratio=True, one range for both) or both have one and the same
    value."""
    reasons = []
    lo, hi = sx
    if not a["keep_ratio"] and (sx != sy or lo != hi):
        reasons.append("Albumentations draws the x and y scale independently "
                       "(keep_ratio=False), stretching the aspect ratio; DALI's warp_affine "
                       f"zooms both axes by one factor drawn from [{fmt(lo)}, {fmt(hi)}] "
                       "(the x range)")
        conv.notes.append("x and y scale merged into one zoom factor (the x range); nearest: "
                          "keep_ratio=True")
    if a.get("balanced_scale") and lo < 1 < hi and not math.isclose(1 - lo, hi - 1):
        reasons.append("balanced_scale: Albumentations shrinks or enlarges with equal chance; "
                       "DALI draws the zoom uniformly over the range")
    return reasons


def _translates(a: Args) -> bool:
    """Whether Affine moves the image: A.save writes translate_px={"x": [0, 0], "y": [0, 0]}
    when there is no translation, and zero ranges move nothing."""
    return any(a.get(key) is not None and _xy(a[key], key) != ((0.0, 0.0), (0.0, 0.0))
               for key in ("translate_percent", "translate_px"))


def _affine_fixed(a: Args, shape: tuple[int, ...]) -> Fixed | None:
    conv = _affine_convert(a, Context(LIB), fixed=True)
    if not conv.steps:
        return None
    kw: dict[str, Any] = {"interpolation": a["interpolation"], "fill": single_fill(a["fill"])}
    for s in conv.steps:
        if s["op"] == "rotate":
            kw["rotate"] = (s["params"]["angle"],) * 2
        else:
            if "scale" in s["params"]:
                kw["scale"] = (s["params"]["scale"],) * 2
            shear = [-math.degrees(math.atan(s["params"].get(k, 0.0)))
                     for k in ("shear_x", "shear_y")]
            kw["shear"] = {"x": (shear[0],) * 2, "y": (shear[1],) * 2}
    return Fixed(conv.steps, alb("Affine", **kw), ", ".join(f"{k} {v}" for k, v in kw.items()
                                                           if k in ("rotate", "scale")))


def _perspective_convert(a: Args, c: Context) -> Conversion:
    _border(a)
    scale = a["scale"]
    lo, hi = pair(scale, "scale") if isinstance(scale, list) else (0.0, number(scale, "scale"))
    return Conversion([step("experimental.warp_perspective", _p(a), tilt_x=drawn(-2 * hi, 2 * hi),
                            tilt_y=drawn(-2 * hi, 2 * hi), fill_value=fill_level(a["fill"], c),
                            interp_type=_interp(a["interpolation"]))])


def _ssr_convert(a: Args, c: Context) -> Conversion:
    """ShiftScaleRotate is Affine with keep_ratio=False, no shear and translate_percent per
    axis: shift_limit_x / shift_limit_y where given, else shift_limit."""
    shift = {}
    for axis in "xy":
        key = f"shift_limit_{axis}" if a[f"shift_limit_{axis}"] is not None else "shift_limit"
        shift[axis] = list(symmetric(a[key], key))
    lo, hi = symmetric(a["scale_limit"], "scale_limit")
    args = {"rotate": list(symmetric(a["rotate_limit"], "rotate_limit")),
            "scale": [1 + lo, 1 + hi], "shear": 0.0, "interpolation": a["interpolation"],
            "fill": a["fill"], "border_mode": a["border_mode"], "fit_output": False,
            "keep_ratio": False, "balanced_scale": False, "p": a["p"],
            "translate_percent": shift, "translate_px": None}
    return _affine_convert(args, c)


_AFFINE = ("scale", "translate_percent", "translate_px", "rotate", "shear", "interpolation",
           "mask_interpolation", "fit_output", "keep_ratio", "rotate_method", "balanced_scale",
           "border_mode", "fill", "fill_mask", "p")

RULES = [
    AlbumentationsRule(
        LIB, "Affine", _AFFINE,
        {"scale": (1.0, 1.0), "translate_percent": None, "translate_px": None, "rotate": 0.0,
         "shear": (0.0, 0.0), "fit_output": False, "keep_ratio": False,
         "rotate_method": "largest_box", "balanced_scale": False, "p": 0.5,
         **_GEOMETRY_DEFAULTS},
        "rotate + warp_affine (one zoom factor from the x scale; shear degrees -> factor -tan); "
        "translation is not imported",
        Verdict("different", reason="with keep_ratio=False (the default) Albumentations draws "
                "the x and y scale independently, DALI zooms both axes by one factor; with "
                "keep_ratio=True or one scale value, equivalent within 1 level"),
        convert=_affine_convert, fixed=_affine_fixed,
        ignored={"cval": ("fill", "the border fill"),
                 "cval_mask": ("fill_mask", "the mask's border fill"),
                 "mode": ("border_mode", "the border mode")}),
    AlbumentationsRule(
        LIB, "ShiftScaleRotate", ("shift_limit", "scale_limit", "rotate_limit", "interpolation",
                                  "border_mode", "shift_limit_x", "shift_limit_y",
                                  "rotate_method", "mask_interpolation", "fill", "fill_mask",
                                  "p"),
        {"shift_limit": (-0.0625, 0.0625), "scale_limit": (-0.1, 0.1),
         "rotate_limit": (-45, 45), "shift_limit_x": None, "shift_limit_y": None,
         "rotate_method": "largest_box", "p": 0.5, **_GEOMETRY_DEFAULTS},
        "as Affine: rotate (rotate_limit) + warp_affine (one zoom factor 1 + scale_limit); the "
        "shift (shift_limit_x / _y, else shift_limit) is not imported",
        Verdict("different", reason="the shift is not imported; x and y scale are drawn "
                "independently (DALI: one factor); rotation and scale are two resampling "
                "passes"), convert=_ssr_convert, ignored=FILL),
    AlbumentationsRule(
        LIB, "Perspective", ("scale", "keep_size", "fit_output", "interpolation",
                             "mask_interpolation", "border_mode", "fill", "fill_mask", "p"),
        {"scale": (0.05, 0.1), "keep_size": True, "fit_output": False, "p": 0.5,
         **_GEOMETRY_DEFAULTS},
        "experimental.warp_perspective (tilt_x/y uniform [-2 s, 2 s]), probability p",
        Verdict("different", reason="DALI's step tilts about the centre (2 parameters); "
                "Albumentations moves each corner at random (8)"),
        convert=_perspective_convert,
        ignored={"pad_val": ("fill", "the border fill"),
                 "mask_pad_val": ("fill_mask", "the mask's border fill"),
                 "pad_mode": ("border_mode", "the border mode")}),
]
