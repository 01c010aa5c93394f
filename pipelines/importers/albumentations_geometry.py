"""Albumentations geometry (flips, crops, resizes, rotations, affine warps) -> preset steps.

Albumentations passes OpenCV codes: interpolation 0 nearest, 1 linear, 2 cubic, 3 area;
border_mode 0 is a constant fill (the only border DALI's warps have). Its resizes use OpenCV
without antialiasing, so the imported steps turn DALI's antialiasing off.
"""

from __future__ import annotations

from typing import Any

from .albumentations_legacy import FILL, AlbumentationsRule
from .reference import alb
from .rules import (
    IDENTICAL,
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
    lit,
    number,
    pair,
    sequence,
    span_of,
    step,
    symmetric,
)
from .torchvision_geometry import NEAREST_WARP

LIB = "albumentations"
LINEAR_WARP = Verdict("equivalent", 1, reason="OpenCV's and DALI's bilinear warps round alike "
                      "but for 1 level")
INTERP = {0: "nn", 1: "linear", 2: "cubic", 3: "linear", 6: "nn", 5: "linear"}


def _p(a: Args) -> float:
    return number(a["p"], "p")


def _interp(code: Any, allowed: tuple[str, ...] = ("nn", "linear")) -> str:
    out = INTERP.get(code) if isinstance(code, int) and not isinstance(code, bool) else None
    if out not in allowed:
        raise Refused(f"interpolation {code!r} has no DALI equivalent here",
                      nearest="interpolation=cv2.INTER_LINEAR")
    return out


def _border(a: Args) -> None:
    if a.get("border_mode", 0) not in (0, None):
        raise Refused(f"border_mode {a['border_mode']!r}: DALI's warps fill with a constant",
                      nearest="border_mode=cv2.BORDER_CONSTANT")


def _flip(horizontal: bool) -> Rule:
    name = "HorizontalFlip" if horizontal else "VerticalFlip"

    def reverse(s: dict[str, Any]) -> str | None:
        if s["op"] != "flip":
            return None
        h, v = s["params"].get("horizontal"), s["params"].get("vertical", False)
        p = s.get("probability", 1.0)
        if isinstance(h, dict) and h.get("choice") in ([True, False], [False, True]):
            h, p = True, p * 0.5
        return f"A.{name}(p={fmt(p)})" if (h, v) == (horizontal, not horizontal) else None

    return Rule(LIB, name, ("p",), {"p": 0.5},
                f"flip (horizontal={horizontal}, vertical={not horizontal}), probability p",
                IDENTICAL,
                convert=lambda a, c: Conversion([step("flip", _p(a), horizontal=horizontal,
                                                      vertical=not horizontal)]),
                fixed=lambda a, shape: Fixed([step("flip", horizontal=horizontal,
                                                   vertical=not horizontal)], alb(name),
                                             "flipped"),
                reverse=reverse)


def _rotate_convert(a: Args, c: Context) -> Conversion:
    _border(a)
    if a.get("crop_border"):
        raise Refused("crop_border: DALI's rotate keeps the size without cropping",
                      nearest="crop_border=False")
    lo, hi = symmetric(a["limit"], "limit")
    interp = _interp(a["interpolation"])
    return Conversion([step("rotate", _p(a), angle=drawn(lo, hi), keep_size=True,
                            fill_value=fill_level(a["fill"], c), interp_type=interp)],
                      verdict=NEAREST_WARP if interp == "nn" else LINEAR_WARP)


def _rotate_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    conv = _rotate_convert(a, Context(LIB))
    lo, hi = symmetric(a["limit"], "limit")
    angle = hi if abs(hi) >= abs(lo) else lo
    s = conv.steps[0]
    s["params"]["angle"], s["probability"] = angle, 1.0
    return Fixed([s], alb("Rotate", limit=(angle, angle), interpolation=a["interpolation"],
                          fill=s["params"]["fill_value"]), f"angle {fmt(angle)} deg")


def _rotate_reverse(s: dict[str, Any]) -> str | None:
    if s["op"] != "rotate" or span_of(s, "angle") is None or not s["params"].get("keep_size"):
        return None
    lo, hi = span_of(s, "angle")
    interp = {"nn": 0, "linear": 1}.get(s["params"].get("interp_type", "linear"), 1)
    return (f"A.Rotate(limit=({fmt(lo)}, {fmt(hi)}), interpolation={interp}, border_mode=0, "
            f"fill={fmt(s['params'].get('fill_value', 0))}, p={fmt(s.get('probability', 1))})")


def _crop_convert(a: Args, c: Context, centre: bool) -> Conversion:
    h, w = int(number(a["height"], "height")), int(number(a["width"], "width"))
    pos: Any = 0.5 if centre else {"uniform": [0.0, 1.0]}
    conv = Conversion([step("crop", _p(a), crop_h=float(h), crop_w=float(w), crop_pos_x=pos,
                            crop_pos_y=pos, out_of_bounds_policy="pad")],
                      {"crop": [h, w]} if centre and _p(a) == 1 else None)
    if not a.get("pad_if_needed"):
        conv.notes.append("an image smaller than the crop: Albumentations raises an error "
                          "(pad_if_needed=False), DALI pads it with 0")
        return conv
    _border(a)  # Albumentations pads with border_mode and fill; DALI's crop pads with 0
    if (level := fill_level(a["fill"], c)) != 0:
        raise Refused(f"fill={a['fill']!r} pads with grey level {fmt(level)}; DALI's crop pads "
                      "with 0", nearest="fill=0")
    if not centre:
        conv.notes.append(f"pad_if_needed: Albumentations pads an image smaller than the crop "
                          f"at pad_position={a['pad_position']!r}; DALI's window falls anywhere "
                          "over it")
    return conv


def _crop_reverse(s: dict[str, Any]) -> str | None:
    if s["op"] != "crop" or lit(s, "crop_h") is None or lit(s, "crop_w") is None:
        return None
    h, w = int(lit(s, "crop_h")), int(lit(s, "crop_w"))
    if lit(s, "crop_pos_x") == 0.5 and lit(s, "crop_pos_y") == 0.5:
        return f"A.CenterCrop({h}, {w}, pad_if_needed=True)"
    if span_of(s, "crop_pos_x") == (0.0, 1.0) and span_of(s, "crop_pos_y") == (0.0, 1.0):
        return f"A.RandomCrop({h}, {w}, pad_if_needed=True)"
    return None


SMALLEST_VERDICT = Verdict("equivalent", 8, 0.99, reason="OpenCV vs DALI resampling; the "
                           "longer side may differ by 1 px", size_slack=1)


def _random_crop_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    h, w = int(number(a["height"], "height")), int(number(a["width"], "width"))
    ref = alb("Crop", x_min=0, y_min=0, x_max=w, y_max=h, pad_if_needed=True,
              pad_position="top_left")
    return Fixed([step("crop", crop_h=float(h), crop_w=float(w), crop_pos_x=0.0,
                       crop_pos_y=0.0, out_of_bounds_policy="pad")], ref, "top-left window")


def _smallest_convert(a: Args, c: Context) -> Conversion:
    if a.get("max_size_hw") is not None:
        raise Refused("max_size_hw sets both sides; the catalog's resize sets the shorter side",
                      nearest="max_size")
    sizes = [number(v, "max_size") for v in sequence(a["max_size"])]
    interp = _interp(a["interpolation"], ("nn", "linear", "cubic"))
    antialias = a["interpolation"] == 3  # INTER_AREA filters; the others do not
    value: Any = sizes[0] if len(sizes) == 1 else {"choice": sizes}
    tail = {"resize_shorter": sizes[0]} if len(sizes) == 1 and interp == "linear" and \
        antialias and _p(a) == 1 else None  # the tail resizes every sample
    return Conversion([step("resize", _p(a), resize_shorter=value, antialias=antialias,
                            interp_type=interp)], tail,
                      verdict=SMALLEST_VERDICT)


def _smallest_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    conv = _smallest_convert(a, Context(LIB))
    s = conv.steps[0]
    size = max(number(v, "max_size") for v in sequence(a["max_size"]))
    s["params"]["resize_shorter"], s["probability"] = size, 1.0
    return Fixed([s], alb("SmallestMaxSize", max_size=int(size),
                          interpolation=a["interpolation"]), f"shorter side {fmt(size)}")


def _size(a: Args) -> tuple[int, int]:
    """RandomResizedCrop's size: Albumentations 2 takes (height, width) and rejects a single
    number when the transform is built."""
    size = a["size"]
    if not isinstance(size, list) or len(size) != 2 or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in size):
        raise Refused(f"size={size!r}: Albumentations takes size=(height, width), two positive "
                      "integers (a single number is rejected when the transform is built)",
                      nearest=f"size=({size}, {size})" if isinstance(size, int) and
                      not isinstance(size, bool) else "size=(224, 224)")
    return size[0], size[1]


def _rrc_convert(a: Args, c: Context) -> Conversion:
    h, w = _size(a)
    if h != w:
        raise Refused(f"size {h}x{w}: the catalog's random_resized_crop makes square crops",
                      nearest=f"random_resized_crop(size={max(h, w)}) followed by crop")
    lo, hi = pair(a["scale"], "scale")
    rlo, rhi = pair(a["ratio"], "ratio")
    _interp(a["interpolation"], ("nn", "linear", "cubic"))
    return Conversion([step("random_resized_crop", _p(a), size=h, area_min=lo, area_max=hi,
                            aspect_min=rlo, aspect_max=rhi, antialias=False)])


def _rrc_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    h = _size(a)[0]
    aspect = shape[1] / shape[0]
    steps = [step("random_resized_crop", size=h, area_min=1.0, area_max=1.0,
                  aspect_min=aspect, aspect_max=aspect, antialias=False)]
    return Fixed(steps, alb("Resize", height=h, width=h, interpolation=a["interpolation"]),
                 "whole image as the crop")


def _rrc_reverse(s: dict[str, Any]) -> str | None:
    if s["op"] != "random_resized_crop" or s["params"].get("antialias"):
        return None
    p = s["params"]
    return (f"A.RandomResizedCrop(size=({p['size']}, {p['size']}), scale=({fmt(p['area_min'])}, "
            f"{fmt(p['area_max'])}), ratio=({fmt(p['aspect_min'])}, {fmt(p['aspect_max'])}), "
            f"p={fmt(s.get('probability', 1.0))})")


def _smallest_reverse(s: dict[str, Any]) -> str | None:
    """None for a fractional size: SmallestMaxSize takes whole sizes only."""
    size = lit(s, "resize_shorter") if s["op"] == "resize" else None
    if size is None or not float(size).is_integer():
        return None
    p = s["params"]
    codes = {("linear", False): 1, ("nn", False): 0, ("cubic", False): 2, ("linear", True): 3}
    code = codes.get((p.get("interp_type", "linear"), bool(p.get("antialias"))))
    if code is None:
        return None
    return (f"A.SmallestMaxSize(max_size={int(lit(s, 'resize_shorter'))}, interpolation={code}, "
            f"p={fmt(s.get('probability', 1.0))})")


def _resize_convert(a: Args, c: Context) -> Conversion:
    h, w = int(number(a["height"], "height")), int(number(a["width"], "width"))
    interp = _interp(a["interpolation"], ("nn", "linear", "cubic"))
    conv = Conversion([step("resize", _p(a), resize_shorter=float(min(h, w)),
                            antialias=a["interpolation"] == 3, interp_type=interp),
                       step("crop", _p(a), crop_h=float(h), crop_w=float(w))])
    conv.verdict = Verdict("different", reason=f"resizes the shorter side to {min(h, w)} and "
                           f"centre-crops {h}x{w}, keeping the aspect ratio (Albumentations "
                           "squashes the image to the exact size)")
    return conv


_GEOMETRY_DEFAULTS = {"interpolation": 1, "mask_interpolation": 0, "border_mode": 0, "fill": 0,
                      "fill_mask": 0}
_CROP = ("height", "width", "pad_if_needed", "pad_position", "border_mode", "fill", "fill_mask",
         "p")
_CROP_DEFAULTS = {"height": REQUIRED, "width": REQUIRED, "pad_if_needed": False,
                  "pad_position": "center", "border_mode": 0, "fill": 0.0, "fill_mask": 0.0}
RULES = [
    _flip(True),
    _flip(False),
    Rule(LIB, "RandomRotate90", ("p",), {"p": 1},
         "rotate (angle choice 0/90/180/270, canvas turned, nearest), probability p", IDENTICAL,
         convert=lambda a, c: Conversion([step("rotate", _p(a), angle={"choice": [0, 90, 180,
                                                                                  270]},
                                               keep_size=False, interp_type="nn")]),
         fixed=lambda a, shape: Fixed([step("rotate", angle=90.0, keep_size=False,
                                            interp_type="nn")],
                                      lambda img: __import__("numpy").rot90(img, 1).copy(),
                                      "90 deg")),
    AlbumentationsRule(
        LIB, "Rotate", ("limit", "interpolation", "border_mode", "rotate_method", "crop_border",
                        "mask_interpolation", "fill", "fill_mask", "p"),
        {"limit": (-90, 90), "rotate_method": "largest_box", "crop_border": False, "p": 0.5,
         **_GEOMETRY_DEFAULTS},
        "rotate (angle uniform in limit, counter-clockwise in both; fill), probability p",
        LINEAR_WARP, convert=_rotate_convert, fixed=_rotate_fixed, reverse=_rotate_reverse,
        ignored=FILL),
    Rule(LIB, "CenterCrop", _CROP, {**_CROP_DEFAULTS, "p": 1.0},
         "crop at (0.5, 0.5), or the output tail's crop when it ends the pipeline",
         Verdict("different", reason="an odd margin shifts the window by 1 pixel: DALI rounds "
                 "the centre half up, Albumentations down"),
         convert=lambda a, c: _crop_convert(a, c, True),
         fixed=lambda a, shape: Fixed(_crop_convert({**a, "p": 1.0}, Context(LIB), True).steps,
                                      alb("CenterCrop", height=a["height"], width=a["width"],
                                          pad_if_needed=True), "centre"),
         reverse=_crop_reverse),
    Rule(LIB, "RandomCrop", _CROP, {**_CROP_DEFAULTS, "p": 1.0},
         "crop of that size at a uniform random position (crop_pos_x/y uniform [0, 1])",
         Verdict("identical", reason="the same window at the same offset; DALI draws the two "
                 "extreme offsets half as often"),
         convert=lambda a, c: _crop_convert(a, c, False), fixed=_random_crop_fixed,
         reverse=_crop_reverse),
    Rule(LIB, "RandomResizedCrop", ("size", "scale", "ratio", "interpolation",
                                    "mask_interpolation", "area_for_downscale", "p"),
         {"size": REQUIRED, "scale": (0.08, 1.0), "ratio": (0.75, 4 / 3), "interpolation": 1,
          "mask_interpolation": 0, "area_for_downscale": None, "p": 1.0},
         "random_resized_crop (size, area = scale, aspect = ratio, no antialias); square sizes",
         Verdict("equivalent", 8, 0.98, reason="same crop distribution; OpenCV and DALI "
                 "resample edges differently"),
         convert=_rrc_convert, fixed=_rrc_fixed, reverse=_rrc_reverse),
    Rule(LIB, "SmallestMaxSize", ("max_size", "max_size_hw", "interpolation",
                                  "mask_interpolation", "area_for_downscale", "p"),
         {"max_size": None, "max_size_hw": None, "interpolation": 1, "mask_interpolation": 0,
          "area_for_downscale": None, "p": 1},
         "resize (resize_shorter = max_size; a list is a per-sample choice)",
         SMALLEST_VERDICT, convert=_smallest_convert, fixed=_smallest_fixed,
         reverse=_smallest_reverse),
    Rule(LIB, "Resize", ("height", "width", "interpolation", "mask_interpolation",
                         "area_for_downscale", "p"),
         {"height": REQUIRED, "width": REQUIRED, "interpolation": 1, "mask_interpolation": 0,
          "area_for_downscale": None, "p": 1},
         "shorter side + centre crop (the catalog's resize keeps the aspect ratio)",
         Verdict("different", reason="keeps the aspect ratio and centre-crops (Albumentations "
                 "squashes)"), convert=_resize_convert),
]
