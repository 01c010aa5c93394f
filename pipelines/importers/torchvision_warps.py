"""torchvision affine and perspective warps -> rotate / warp_affine / warp_perspective steps.

torchvision's affine turns clockwise for a positive angle (F.affine; RandomRotation turns
counter-clockwise, as DALI's rotate does): DALI's angle is its negative. Its shear of s degrees
maps x -> x - tan(s) y (y down): DALI's shear factor is -tan(s). One affine of torchvision
becomes a rotation and a warp here (two resamplings).
"""

from __future__ import annotations

import math
from typing import Any

from .reference import tv_seeded
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
    fill_level,
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
    NEAREST_WARP,
    REVERSE_INTERP,
    _interp,
    _p,
)

NEAREST_ZOOM = Verdict("different", reason="nearest neighbour with a zoom: where samples fall "
                      "halfway between two source pixels (whole rows and columns: every 11th "
                      "at scale 1.1) the libraries take different neighbours, a 1-pixel shift")
"""Measured: 93.5% of pixels bit-identical at scale 1.1 on the sample images (rotations and
shears, whose samples rarely fall halfway, stay within NEAREST_WARP)."""


def _shears(value: Any) -> list[tuple[float, float]]:
    """The (min, max) shear in degrees along x, and along y when four values are given."""
    sh = list(sequence(value))
    spans = [symmetric(sh[0], "shear") if len(sh) == 1 else pair(sh[:2], "shear")]
    if len(sh) == 4:
        spans.append(pair(sh[2:], "shear"))
    return spans


def _affine_convert(a: Args, c: Context) -> Conversion:
    if a["center"] is not None:
        raise Refused("center: DALI warps about the image centre", nearest="center=None")
    fill = fill_level(a["fill"], c)
    interp = _interp(a["interpolation"])
    conv = Conversion()
    lo, hi = symmetric(a["degrees"], "degrees")
    parts = []
    warp: dict[str, Any] = {}
    if a["scale"] is not None:
        warp["scale"] = drawn(*pair(a["scale"], "scale"))
    if a["shear"] is not None:
        # torchvision's shear by s degrees maps x -> x - tan(s) y (y down): DALI's factor
        for key, (slo, shi) in zip(("shear_x", "shear_y"), _shears(a["shear"]), strict=False):
            warp[key] = drawn(-math.tan(math.radians(shi)), -math.tan(math.radians(slo)))
    if (lo, hi) != (0, 0):  # clockwise in torchvision's affine: DALI's angle is the negative
        conv.steps.append(step("rotate", angle=drawn(-hi, -lo), keep_size=True,
                               fill_value=fill, interp_type=interp))
        parts.append("rotation")
    if warp:
        # torchvision's matrix R(angle) S Sh shears a point first, then turns it: a shear goes
        # before the rotation. A zoom alone commutes with the rotation and stays after it
        # (a zoom-in first would cut the corners the rotation brings into view)
        where = 0 if any(k.startswith("shear") for k in warp) else len(conv.steps)
        conv.steps.insert(where, step("warp_affine", fill_value=fill, interp_type=interp,
                                      **warp))
        parts.append("scale/shear")
    reasons = []
    if a["translate"] is not None and any(v != 0 for v in sequence(a["translate"])):
        if not conv.steps:  # nothing of it would be imported
            raise Refused("its one change is the random translation, which no catalog step "
                          "makes (auto_aug translates by magnitude bins, fill 128)",
                          nearest="auto_aug.translate_x / translate_y")
        reasons.append("the random translation is not imported (the catalog translates only "
                       "by auto_aug magnitude bins, fill 128)")
        conv.notes.append("translate dropped; nearest: auto_aug.translate_x / translate_y")
    if len(parts) > 1:
        reasons.append("rotation and scale/shear are two resampling passes (torchvision: one)")
    if "shear_y" in warp:
        reasons.append("shearing both axes: torchvision's matrix has an extra x*y term")
    if reasons:
        conv.verdict = Verdict("different", reason="; ".join(reasons))
    elif conv.steps and interp == "nn":
        zoom = a["scale"] is not None and pair(a["scale"], "scale") != (1.0, 1.0)
        conv.verdict = NEAREST_ZOOM if zoom else NEAREST_WARP
    elif conv.steps:
        conv.verdict = LINEAR_WARP
    if not conv.steps and not reasons:
        conv.notes.append("RandomAffine with no rotation, scale or shear changes nothing")
    return conv


def _extreme(lo: float, hi: float, centre: float = 0.0) -> float:
    """The end of a range farthest from ``centre`` (the strongest case of a draw)."""
    return hi if abs(hi - centre) >= abs(lo - centre) else lo


def _affine_fixed(a: Args, shape: tuple[int, ...]) -> Fixed | None:
    """The strongest angle, scale and shear of the ranges, fixed in the user's own arguments:
    converted as any RandomAffine is, and run by torchvision's RandomAffine itself."""
    fixed: Args = {**a, "translate": None}
    angle = _extreme(*symmetric(a["degrees"], "degrees"))
    fixed["degrees"] = [angle, angle]
    scale = 1.0
    if a["scale"] is not None:
        scale = _extreme(*pair(a["scale"], "scale"), centre=1.0)
        fixed["scale"] = [scale, scale]
    shear = [0.0, 0.0]
    if a["shear"] is not None:
        picks = [_extreme(*span) for span in _shears(a["shear"])]
        fixed["shear"] = [v for s in picks for v in (s, s)]
        shear[:len(picks)] = picks
    conv = _affine_convert(fixed, Context(LIB))
    if not conv.steps:
        return None
    ref = tv_seeded("RandomAffine", **{k: fixed[k] for k in ("degrees", "scale", "shear",
                                                              "interpolation", "fill")})
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
                            tilt_y=drawn(-d, d), fill_value=fill_level(a["fill"], c),
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
         "rotate (angle = -degrees: torchvision's affine turns clockwise) + warp_affine "
         "(scale; shear degrees -> factor -tan); nn/linear (nn with a zoom: different, 1-pixel "
         "shifts where samples fall halfway); translate is not imported",
         NEAREST_WARP,
         convert=_affine_convert, fixed=_affine_fixed,
         reverse=_affine_reverse),
    Rule(LIB, "RandomPerspective", ("distortion_scale", "p", "interpolation", "fill"),
         {"distortion_scale": 0.5, "p": 0.5, "interpolation": "bilinear", "fill": 0},
         "experimental.warp_perspective (tilt_x/y uniform [-d, d]), probability p",
         Verdict("different", reason="DALI's step tilts about the centre (2 parameters); "
                 "torchvision moves each corner at random (8)"),
         convert=_perspective_convert, fixed=_perspective_fixed),
]
