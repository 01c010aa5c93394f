"""torchvision affine and perspective warps -> rotate / warp_affine / warp_perspective steps.

torchvision's shear of s degrees maps x -> x - tan(s) y (y down): DALI's shear factor is
-tan(s). One affine of torchvision becomes a rotation and a warp here (two resamplings).
"""

from __future__ import annotations

import math
from typing import Any

from .reference import tv, tv_seeded
from .rules import (
    REQUIRED,
    Args,
    Context,
    Conversion,
    Fixed,
    Refused,
    Rule,
    Verdict,
    drawn,
    fmt,
    number,
    pair,
    sequence,
    span_of,
    step,
    symmetric,
)
from .torchvision_geometry import (
    LIB,
    LINEAR_WARP,
    REVERSE_INTERP,
    _fill_level,
    _interp,
    _p,
)


def _affine_steps(a: Args, c: Context, fixed: bool) -> Conversion:
    if a["center"] is not None:
        raise Refused("center: DALI warps about the image centre", nearest="center=None")
    fill = _fill_level(a["fill"], c)
    interp = _interp(a["interpolation"])
    conv = Conversion()
    lo, hi = symmetric(a["degrees"], "degrees")
    pick = (lambda lo_, hi_: hi_ if abs(hi_) >= abs(lo_) else lo_) if fixed else drawn
    parts = []
    if (lo, hi) != (0, 0):
        conv.steps.append(step("rotate", angle=pick(lo, hi), keep_size=True, fill_value=fill,
                               interp_type=interp))
        parts.append("rotation")
    warp: dict[str, Any] = {}
    if a["scale"] is not None:
        slo, shi = pair(a["scale"], "scale")
        warp["scale"] = pick(slo, shi)
    if a["shear"] is not None:
        sh = list(sequence(a["shear"]))
        xs = symmetric(sh[0], "shear") if len(sh) == 1 else pair(sh[:2], "shear")
        # torchvision's x-shear by s degrees maps x -> x - tan(s) y (y down): DALI's factor
        warp["shear_x"] = pick(*sorted((-math.tan(math.radians(xs[1])),
                                        -math.tan(math.radians(xs[0])))))
        if len(sh) == 4:
            ys = pair(sh[2:], "shear")
            warp["shear_y"] = pick(*sorted((-math.tan(math.radians(ys[1])),
                                            -math.tan(math.radians(ys[0])))))
    if warp:
        conv.steps.append(step("warp_affine", fill_value=fill, interp_type=interp, **warp))
        parts.append("scale/shear")
    reasons = []
    if a["translate"] is not None:
        reasons.append("the random translation is not imported (the catalog translates only "
                       "by auto_aug magnitude bins, fill 128)")
        conv.notes.append("translate dropped; nearest: auto_aug.translate_x / translate_y")
    if len(parts) > 1:
        reasons.append("rotation and scale/shear are two resampling passes (torchvision: one)")
    if "shear_y" in warp:
        reasons.append("shearing both axes: torchvision's matrix has an extra x*y term")
    if reasons:
        conv.verdict = Verdict("different", reason="; ".join(reasons))
    elif conv.steps:
        conv.verdict = LINEAR_WARP
    if not conv.steps and not reasons:
        conv.notes.append("RandomAffine with no rotation, scale or shear changes nothing")
    return conv


def _affine_fixed(a: Args, shape: tuple[int, ...]) -> Fixed | None:
    conv = _affine_steps(a, Context(LIB), fixed=True)
    if not conv.steps:
        return None
    lo, hi = symmetric(a["degrees"], "degrees")
    angle = hi if abs(hi) >= abs(lo) else lo
    scale, shear = 1.0, [0.0, 0.0]
    for s in conv.steps:
        if s["op"] == "warp_affine":
            scale = float(s["params"].get("scale", 1.0))
            shear = [-math.degrees(math.atan(float(s["params"].get(k, 0.0))))
                     for k in ("shear_x", "shear_y")]
    ref = tv("affine", angle=angle, translate=[0, 0], scale=scale, shear=shear,
             interpolation=str(a["interpolation"]),
             fill=[conv.steps[0]["params"]["fill_value"]] * 3)
    return Fixed(conv.steps, ref, f"angle {fmt(angle)}, scale {fmt(scale)}, shear "
                 f"{fmt(shear[0])}/{fmt(shear[1])} deg")


def _affine_reverse(s: dict[str, Any]) -> str | None:
    """A warp_affine step alone as RandomAffine(degrees=0, scale, shear)."""
    if s["op"] != "warp_affine":
        return None
    scale, sx, sy = (span_of(s, k) for k in ("scale", "shear_x", "shear_y"))
    if scale is None or sx is None or sy is None:
        return None
    p = s["params"]
    args = ["degrees=0"]
    if scale != (1.0, 1.0):
        args.append(f"scale=({fmt(scale[0])}, {fmt(scale[1])})")
    if (sx, sy) != ((0.0, 0.0), (0.0, 0.0)):
        deg = [fmt(-math.degrees(math.atan(v))) for v in (sx[1], sx[0], sy[1], sy[0])]
        args.append(f"shear=({', '.join(deg)})" if sy != (0.0, 0.0) else
                    f"shear=({deg[0]}, {deg[1]})")
    args += [f"interpolation=v2.InterpolationMode.{REVERSE_INTERP[p['interp_type']].upper()}",
             f"fill={fmt(p['fill_value'])}"]
    return f"v2.RandomAffine({', '.join(args)})"


def _perspective_convert(a: Args, c: Context) -> Conversion:
    d = number(a["distortion_scale"], "distortion_scale")
    if not 0 <= d <= 1:
        raise Refused(f"distortion_scale {d:g} must lie in [0, 1]")
    return Conversion([step("experimental.warp_perspective", _p(a), tilt_x=drawn(-d, d),
                            tilt_y=drawn(-d, d), fill_value=_fill_level(a["fill"], c),
                            interp_type=_interp(a["interpolation"]))])


def _perspective_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    conv = _perspective_convert(a, Context(LIB))
    s = conv.steps[0]
    d = number(a["distortion_scale"], "distortion_scale")
    s["params"].update(tilt_x=d, tilt_y=0.0)
    s["probability"] = 1.0
    ref = tv_seeded("RandomPerspective", distortion_scale=d, p=1.0,
                    interpolation=str(a["interpolation"]), fill=s["params"]["fill_value"])
    return Fixed([s], ref, f"tilt {fmt(d)} (torchvision: its own corners, seed 0)")


RULES = [
    Rule(LIB, "RandomAffine", ("degrees", "translate", "scale", "shear", "interpolation",
                               "fill", "center"),
         {"degrees": REQUIRED, "translate": None, "scale": None, "shear": None,
          "interpolation": "nearest", "fill": 0, "center": None},
         "rotate (degrees) + warp_affine (scale; shear degrees -> factor -tan); translate is "
         "not imported",
         LINEAR_WARP,
         convert=lambda a, c: _affine_steps(a, c, fixed=False), fixed=_affine_fixed,
         reverse=_affine_reverse),
    Rule(LIB, "RandomPerspective", ("distortion_scale", "p", "interpolation", "fill"),
         {"distortion_scale": 0.5, "p": 0.5, "interpolation": "bilinear", "fill": 0},
         "experimental.warp_perspective (tilt_x/y uniform [-d, d]), probability p",
         Verdict("different", reason="DALI's step tilts about the centre (2 parameters); "
                 "torchvision moves each corner at random (8)"),
         convert=_perspective_convert, fixed=_perspective_fixed),
]
