"""torchvision geometry (flips, crops, resizes, rotations, warps) -> preset steps.

Units: RandomRotation's degrees are counter-clockwise like DALI's (RandomAffine's turn
clockwise: :mod:`.torchvision_warps`); ColorJitter's hue is a fraction
of a turn (x360 for DALI's degrees); fills are grey levels 0-255 on uint8 images (after
ToTensor they are fractions of 1, after Normalize standardised values: converted back).
"""

from __future__ import annotations

from typing import Any

from .reference import tv
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

LIB = "torchvision"
INTERP = {"nearest": "nn", "nearest-exact": "nn", "bilinear": "linear", "bicubic": "cubic"}
REVERSE_INTERP = {"nn": "nearest", "linear": "bilinear", "cubic": "bicubic"}


def _interp(value: Any, allowed: tuple[str, ...] = ("nn", "linear")) -> str:
    code = INTERP.get(str(value).lower()) if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        code = {0: "nn", 2: "linear", 3: "cubic"}.get(value)  # PIL codes
    if code not in allowed:
        raise Refused(f"interpolation {value!r} has no DALI equivalent here",
                      nearest="interpolation='bilinear'")
    return code


def _size(value: Any, what: str = "size") -> tuple[int, int]:
    items = list(sequence(value))
    if len(items) == 1:
        items = items * 2
    if len(items) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise Refused(f"{what} {value!r} must be an int or (height, width)")
    return int(items[0]), int(items[1])


def _p(args: Args) -> float:
    return number(args["p"], "p")


# ---- flips, crops, resizes --------------------------------------------------------------------


def _flip(horizontal: bool) -> Rule:
    name = "RandomHorizontalFlip" if horizontal else "RandomVerticalFlip"
    fn = "horizontal_flip" if horizontal else "vertical_flip"

    def reverse(s: dict[str, Any]) -> str | None:
        if s["op"] != "flip":
            return None
        h, v = s["params"].get("horizontal"), s["params"].get("vertical", False)
        p = s.get("probability", 1.0)
        if isinstance(h, dict) and h.get("choice") in ([True, False], [False, True]):
            h, p = True, p * 0.5
        if (h, v) == (horizontal, not horizontal):
            return f"v2.{name}(p={fmt(p)})"
        return None

    return Rule(LIB, name, ("p",), {"p": 0.5},
                f"flip (horizontal={horizontal}, vertical={not horizontal}), probability p",
                IDENTICAL,
                convert=lambda a, c: Conversion([step("flip", _p(a), horizontal=horizontal,
                                                      vertical=not horizontal)]),
                fixed=lambda a, shape: Fixed([step("flip", horizontal=horizontal,
                                                   vertical=not horizontal)], tv(fn), "flipped"),
                reverse=reverse)


def _resize_convert(a: Args, c: Context) -> Conversion:
    if a["max_size"] is not None:
        raise Refused("max_size has no equivalent (the catalog's resize sets the shorter side)",
                      nearest="resize (resize_shorter)")
    interp = _interp(a["interpolation"], ("nn", "linear", "cubic"))
    antialias = bool(a["antialias"]) if a["antialias"] is not None else True
    size = list(sequence(a["size"]))
    if len(size) == 1:
        s = number(size[0], "size")
        tail = {"resize_shorter": s} if interp == "linear" and antialias else None
        return Conversion([step("resize", resize_shorter=s, antialias=antialias,
                                interp_type=interp)], tail, verdict=resize_verdict(interp,
                                                                                    antialias))
    h, w = _size(size)
    conv = Conversion(
        [step("resize", resize_shorter=float(min(h, w)), antialias=antialias,
              interp_type=interp), step("crop", crop_h=float(h), crop_w=float(w))],
        {"resize_shorter": float(min(h, w)), "crop": [h, w]} if interp == "linear" else None)
    conv.verdict = Verdict("different", reason=f"resizes the shorter side to {min(h, w)} and "
                           f"centre-crops {h}x{w}, keeping the aspect ratio (torchvision "
                           "squashes the image to the exact size)")
    return conv


def resize_verdict(interp: str, antialias: bool) -> Verdict:
    """Measured on the sample images: where the longer side agrees the outputs are within a
    few levels; where DALI's is 1 px longer the whole image is resampled by a slightly other
    factor, which the share covers."""
    share = 0.98 if interp == "linear" and antialias else (0.93 if antialias else 0.9)
    return Verdict("equivalent", 8, share, reason=RESIZE_REASON, size_slack=1)


RESIZE_REASON = ("the longer side may be 1 px longer: DALI rounds it, torchvision truncates; "
                 "antialiasing filters differ")


def _resize_fixed(a: Args, shape: tuple[int, ...]) -> Fixed | None:
    conv = _resize_convert(a, Context(LIB))
    size = list(sequence(a["size"]))
    s = int(min(_size(size))) if len(size) > 1 else int(size[0])
    ref = tv("resize", [s], interpolation=str(a["interpolation"]),
             antialias=conv.steps[0]["params"]["antialias"])
    return Fixed(conv.steps[:1], ref, f"shorter side {s}")


def _resize_reverse(s: dict[str, Any]) -> str | None:
    """None for a fractional size: torchvision's Resize takes whole sizes only."""
    size = lit(s, "resize_shorter") if s["op"] == "resize" else None
    if size is None or not float(size).is_integer():
        return None
    interp = REVERSE_INTERP[s["params"].get("interp_type", "linear")]
    return (f"v2.Resize({fmt(lit(s, 'resize_shorter'))}, interpolation="
            f"v2.InterpolationMode.{interp.upper()}, antialias={s['params'].get('antialias')})")


def _center_crop_convert(a: Args, c: Context) -> Conversion:
    h, w = _size(a["size"])
    return Conversion([step("crop", crop_h=float(h), crop_w=float(w), crop_pos_x=0.5,
                            crop_pos_y=0.5, out_of_bounds_policy="pad")], {"crop": [h, w]})


def _crop_reverse(s: dict[str, Any]) -> str | None:
    if s["op"] != "crop" or lit(s, "crop_h") is None or lit(s, "crop_w") is None:
        return None
    h, w = int(lit(s, "crop_h")), int(lit(s, "crop_w"))
    if lit(s, "crop_pos_x") == 0.5 and lit(s, "crop_pos_y") == 0.5:
        return f"v2.CenterCrop(({h}, {w}))"
    if span_of(s, "crop_pos_x") == (0.0, 1.0) and span_of(s, "crop_pos_y") == (0.0, 1.0):
        return f"v2.RandomCrop(({h}, {w}), pad_if_needed=True)"
    return None


def _random_crop_convert(a: Args, c: Context) -> Conversion:
    if a["padding"] not in (None, 0):
        raise Refused("padding by a number of pixels has no catalog operator (paste pads by "
                      "a ratio of the image size)",
                      nearest="paste (zoom out by a ratio) followed by crop")
    if a["padding_mode"] != "constant":
        raise Refused(f"padding_mode {a['padding_mode']!r}: DALI pads with a constant")
    h, w = _size(a["size"])
    conv = Conversion([step("crop", crop_h=float(h), crop_w=float(w),
                            crop_pos_x={"uniform": [0.0, 1.0]},
                            crop_pos_y={"uniform": [0.0, 1.0]}, out_of_bounds_policy="pad")])
    if a["pad_if_needed"]:
        if (level := fill_level(a["fill"], c)) != 0:
            raise Refused(f"fill={a['fill']!r} pads with grey level {fmt(level)}; DALI's crop "
                          "pads with 0", nearest="fill=0")
        conv.notes.append("pad_if_needed: DALI pads a window larger than the image with 0")
    return conv


def _rrc_convert(a: Args, c: Context) -> Conversion:
    h, w = _size(a["size"])
    if h != w:
        raise Refused(f"size {h}x{w}: the catalog's random_resized_crop makes square crops",
                      nearest=f"random_resized_crop(size={max(h, w)}) followed by crop")
    lo, hi = pair(a["scale"], "scale")
    rlo, rhi = pair(a["ratio"], "ratio")
    conv = Conversion([step("random_resized_crop", size=h, area_min=lo, area_max=hi,
                            aspect_min=rlo, aspect_max=rhi,
                            antialias=a["antialias"] is not False)])
    if (interp := _interp(a["interpolation"], ("nn", "linear", "cubic"))) != "linear":
        conv.verdict = Verdict("different", reason="DALI's random_resized_crop resamples "
                               f"linearly; torchvision uses {REVERSE_INTERP[interp]}")
    return conv


def _rrc_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    """The whole image as the crop (area 1, the image's own aspect ratio): compares the
    resampling, the one part that is not random."""
    h, w = _size(a["size"])
    aspect = shape[1] / shape[0]
    steps = [step("random_resized_crop", size=h, area_min=1.0, area_max=1.0,
                  aspect_min=aspect, aspect_max=aspect, antialias=a["antialias"] is not False)]
    ref = tv("resize", [h, h], interpolation="bilinear", antialias=a["antialias"] is not False)
    return Fixed(steps, ref, "whole image as the crop")


def _rrc_reverse(s: dict[str, Any]) -> str | None:
    if s["op"] != "random_resized_crop":
        return None
    p = s["params"]
    return (f"v2.RandomResizedCrop({p['size']}, scale=({fmt(p['area_min'])}, "
            f"{fmt(p['area_max'])}), ratio=({fmt(p['aspect_min'])}, {fmt(p['aspect_max'])}))")


# ---- rotations and warps ----------------------------------------------------------------------


NEAREST_WARP = Verdict("equivalent", 0, 0.999, reason="nearest neighbour: a few pixels on "
                       "edges pick the neighbouring source pixel")
LINEAR_WARP = Verdict("equivalent", 8, 0.99, reason="edges and corners resample differently")


def _rotation_convert(a: Args, c: Context) -> Conversion:
    if a["center"] is not None:
        raise Refused("center: DALI rotates about the image centre", nearest="center=None")
    lo, hi = symmetric(a["degrees"], "degrees")
    interp = _interp(a["interpolation"])
    return Conversion([step("rotate", angle=drawn(lo, hi), keep_size=not a["expand"],
                            fill_value=fill_level(a["fill"], c), interp_type=interp)],
                      verdict=NEAREST_WARP if interp == "nn" else LINEAR_WARP)


def _rotation_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    lo, hi = symmetric(a["degrees"], "degrees")
    angle = hi if abs(hi) >= abs(lo) else lo
    conv = _rotation_convert(a, Context(LIB))
    s = conv.steps[0]
    s["params"]["angle"] = angle
    ref = tv("rotate", angle, interpolation=str(a["interpolation"]), expand=bool(a["expand"]),
             fill=[s["params"]["fill_value"]] * 3)
    return Fixed([s], ref, f"angle {fmt(angle)} deg")


def _rotate_reverse(s: dict[str, Any]) -> str | None:
    if s["op"] != "rotate" or span_of(s, "angle") is None:
        return None
    lo, hi = span_of(s, "angle")
    p = s["params"]
    return (f"v2.RandomRotation(({fmt(lo)}, {fmt(hi)}), interpolation=v2.InterpolationMode."
            f"{REVERSE_INTERP[p.get('interp_type', 'linear')].upper()}, "
            f"expand={not p.get('keep_size', True)}, fill={fmt(p.get('fill_value', 0))})")


CENTRE_SHIFT = Verdict("different", reason="an odd margin shifts the window by 1 pixel in half "
                       "the cases: DALI rounds the centre half up, torchvision half to even")
_INTERP_DEFAULT = {"interpolation": "bilinear", "antialias": True}

RULES = [
    _flip(True),
    _flip(False),
    Rule(LIB, "Resize", ("size", "interpolation", "max_size", "antialias"),
         {"size": REQUIRED, "max_size": None, **_INTERP_DEFAULT},
         "int size: resize (resize_shorter), or the output tail when it ends the pipeline; "
         "(h, w): shorter side + centre crop",
         Verdict("equivalent", 8, 0.98, reason=RESIZE_REASON, size_slack=1),
         convert=_resize_convert, fixed=_resize_fixed, reverse=_resize_reverse),
    Rule(LIB, "CenterCrop", ("size",), {"size": REQUIRED},
         "crop at (0.5, 0.5), or the output tail's crop when it ends the pipeline",
         CENTRE_SHIFT, convert=_center_crop_convert,
         fixed=lambda a, shape: Fixed(_center_crop_convert(a, Context(LIB)).steps,
                                      tv("center_crop", list(_size(a["size"]))), "centre"),
         reverse=_crop_reverse),
    Rule(LIB, "RandomCrop", ("size", "padding", "pad_if_needed", "fill", "padding_mode"),
         {"size": REQUIRED, "padding": None, "pad_if_needed": False, "fill": 0,
          "padding_mode": "constant"},
         "crop of that size at a uniform random position (crop_pos_x/y uniform [0, 1])",
         Verdict("identical", reason="the same window at the same offset; DALI draws the two "
                 "extreme offsets half as often"), convert=_random_crop_convert,
         fixed=lambda a, shape: Fixed(
             [step("crop", crop_h=float(_size(a["size"])[0]), crop_w=float(_size(a["size"])[1]),
                   crop_pos_x=1.0, crop_pos_y=1.0, out_of_bounds_policy="pad")],
             tv("crop", shape[0] - _size(a["size"])[0], shape[1] - _size(a["size"])[1],
                *_size(a["size"])),
             "bottom-right window"),
         reverse=_crop_reverse, nearest="paste + crop for padding"),
    Rule(LIB, "Pad", ("padding", "fill", "padding_mode"),
         {"padding": REQUIRED, "fill": 0, "padding_mode": "constant"},
         "not imported", Verdict("unsupported", reason="padding by a number of pixels has no "
                                 "catalog operator (paste pads by a ratio of the image size)"),
         nearest="paste (ratio, centred, fill)", kind="unsupported"),
    Rule(LIB, "RandomResizedCrop", ("size", "scale", "ratio", "interpolation", "antialias"),
         {"size": REQUIRED, "scale": (0.08, 1.0), "ratio": (0.75, 4 / 3), **_INTERP_DEFAULT},
         "random_resized_crop (size, area = scale, aspect = ratio); square sizes",
         Verdict("equivalent", 8, 0.98, reason="same crop distribution; resampling "
                 "differs at edges"),
         convert=_rrc_convert, fixed=_rrc_fixed, reverse=_rrc_reverse),
    Rule(LIB, "RandomRotation", ("degrees", "interpolation", "expand", "center", "fill"),
         {"degrees": REQUIRED, "interpolation": "nearest", "expand": False, "center": None,
          "fill": 0},
         "rotate (angle uniform [-d, d] deg, counter-clockwise in both; keep_size = not "
         "expand; fill; nn/linear)",
         NEAREST_WARP,
         convert=_rotation_convert, fixed=_rotation_fixed, reverse=_rotate_reverse),
]
