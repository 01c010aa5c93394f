"""Albumentations colour and tone transforms -> preset steps.

Units: HueSaturationValue shifts hue in OpenCV's 0-180 scale (x2 for degrees) and adds to
saturation and value (DALI multiplies: nearest factor 1 + shift / 128); GaussNoise's std is a
fraction of 255; dropout sizes are fractions of the image.
"""

from __future__ import annotations

from typing import Any

from .albumentations_legacy import AlbumentationsRule
from .bins import (
    posterize_bin,
    posterize_bits,
    posterize_convert,
    solarize_bin,
    solarize_threshold,
    solarize_verdict,
)
from .reference import alb
from .rules import (
    IDENTICAL,
    Args,
    Context,
    Conversion,
    Fixed,
    Refused,
    Rule,
    Verdict,
    drawn,
    fmt,
    jitter,
    lit,
    number,
    pair,
    sequence,
    span_of,
    step,
    symmetric,
)
from .torchvision_pixels import color_twist_reverse

LIB = "albumentations"


def _p(a: Args) -> float:
    return number(a["p"], "p")


def _span(v: Any, what: str) -> tuple[float, float]:
    return pair(v, what) if isinstance(v, list) else (number(v, what),) * 2


def _jitter_convert(a: Args, c: Context) -> Conversion:
    parts: dict[str, tuple[float, float]] = {}
    for k in ("brightness", "contrast", "saturation"):
        r = jitter(a[k], k)
        if r is not None and r != (1.0, 1.0):
            parts[k] = r
    hue = symmetric(a["hue"], "hue")
    if hue != (0.0, 0.0):
        if not -0.5 <= hue[0] <= hue[1] <= 0.5:
            raise Refused(f"hue {a['hue']!r} must lie in [-0.5, 0.5] (a fraction of a turn)")
        parts["hue"] = (hue[0] * 360, hue[1] * 360)
    reasons = []
    if "hue" in parts:
        reasons.append("DALI rotates hue in YIQ (Albumentations: in HSV)")
    if "contrast" in parts:
        reasons.append("DALI's contrast pivots on mid-grey 128 (Albumentations: the mean grey)")
    if len(parts) > 1:
        reasons.append("one fixed order (Albumentations shuffles the four per sample)")
    verdict = Verdict("different", reason="; ".join(reasons)) if reasons else Verdict(
        "equivalent", 1, reason="rounding")
    return Conversion([step("color_twist", _p(a), **{k: drawn(*v) for k, v in parts.items()})],
                      verdict=verdict)


def _jitter_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    conv = _jitter_convert(a, Context(LIB))
    params = {k: (v["uniform"][1] if isinstance(v, dict) else v)
              for k, v in conv.steps[0]["params"].items()}
    kw = {"brightness": (1, 1), "contrast": (1, 1), "saturation": (1, 1), "hue": (0, 0)}
    for k, v in params.items():
        kw[k] = (v / 360,) * 2 if k == "hue" else (v, v)
    return Fixed([step("color_twist", **params)], alb("ColorJitter", **kw),
                 ", ".join(f"{k} {fmt(v)}" for k, v in params.items()))


def _hsv_convert(a: Args, c: Context) -> Conversion:
    h = symmetric(a["hue_shift_limit"], "hue_shift_limit")
    s = symmetric(a["sat_shift_limit"], "sat_shift_limit")
    v = symmetric(a["val_shift_limit"], "val_shift_limit")
    params = {"hue": drawn(2 * h[0], 2 * h[1]),
              "saturation": drawn(max(0.0, 1 + s[0] / 128), 1 + s[1] / 128),
              "value": drawn(max(0.0, 1 + v[0] / 128), 1 + v[1] / 128)}
    return Conversion([step("hsv", _p(a), **params)])


def _hsv_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    h = symmetric(a["hue_shift_limit"], "hue_shift_limit")[1]
    s = symmetric(a["sat_shift_limit"], "sat_shift_limit")[1]
    v = symmetric(a["val_shift_limit"], "val_shift_limit")[1]
    return Fixed([step("hsv", hue=2 * h, saturation=1 + s / 128, value=1 + v / 128)],
                 alb("HueSaturationValue", hue_shift_limit=(h, h), sat_shift_limit=(s, s),
                     val_shift_limit=(v, v)), f"hue {fmt(h)}, sat {fmt(s)}, val {fmt(v)}")


def _bc_convert(a: Args, c: Context) -> Conversion:
    if not a["brightness_by_max"]:
        raise Refused("brightness_by_max=False scales the shift by each image's mean; DALI "
                      "shifts by a fraction of 255", nearest="brightness_by_max=True")
    b = symmetric(a["brightness_limit"], "brightness_limit")
    k = symmetric(a["contrast_limit"], "contrast_limit")
    return Conversion([step("brightness", _p(a), brightness=drawn(1 + k[0], 1 + k[1]),
                            brightness_shift=drawn(*b))])


def _bc_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    b = symmetric(a["brightness_limit"], "brightness_limit")[1]
    k = symmetric(a["contrast_limit"], "contrast_limit")[1]
    return Fixed([step("brightness", brightness=1 + k, brightness_shift=b)],
                 alb("RandomBrightnessContrast", brightness_limit=(b, b),
                     contrast_limit=(k, k)), f"brightness {fmt(b)}, contrast {fmt(k)}")


def _bc_reverse(s: dict[str, Any]) -> str | None:
    if s["op"] != "brightness":
        return None
    k, b = span_of(s, "brightness"), span_of(s, "brightness_shift")
    if k is None or b is None:
        return None
    return (f"A.RandomBrightnessContrast(brightness_limit=({fmt(b[0])}, {fmt(b[1])}), "
            f"contrast_limit=({fmt(k[0] - 1)}, {fmt(k[1] - 1)}), "
            f"p={fmt(s.get('probability', 1.0))})")


def _clahe_convert(a: Args, c: Context) -> Conversion:
    clip = a["clip_limit"]
    lo, hi = pair(clip, "clip_limit") if isinstance(clip, list) else (1.0, number(clip, "clip"))
    tiles = _tiles(a)
    conv = Conversion([step("clahe", _p(a), tiles_x=tiles[-1], tiles_y=tiles[0],
                            clip_limit=round((lo + hi) / 2, 3), luma_only=True)])
    if lo != hi:
        conv.notes.append(f"clip_limit drawn in [{fmt(lo)}, {fmt(hi)}] becomes its middle, "
                          f"{fmt((lo + hi) / 2)}: DALI fixes it when the pipeline is built")
        conv.verdict = Verdict("different", reason="clip_limit is fixed at build time (the "
                               "middle of the range); at one clip limit the outputs are "
                               "identical")
    return conv


def _tiles(a: Args) -> tuple[int, int]:
    """CLAHE's tile_grid_size: (rows, columns), two positive integers."""
    g = a["tile_grid_size"]
    if not isinstance(g, list) or len(g) != 2 or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in g):
        raise Refused(f"tile_grid_size={g!r}: CLAHE takes (rows, columns), two positive "
                      "integers", nearest="tile_grid_size=(8, 8)")
    return g[0], g[1]


def _solarize_convert(a: Args, c: Context) -> Conversion:
    lo, hi = pair(a["threshold_range"], "threshold_range")
    blo, t_lo = solarize_bin(lo * 255)
    bhi, t_hi = solarize_bin(hi * 255)
    conv = Conversion([step("auto_aug.solarize", _p(a), magnitude_bin=drawn(
        min(blo, bhi), max(blo, bhi), integer=True))])
    if lo == hi:
        conv.verdict = solarize_verdict(lo * 255, t_lo)
    else:
        conv.verdict = Verdict("different", reason="the threshold is drawn among DALI's 31 "
                               "magnitude bins instead of continuously")
    return conv


def _posterize_convert(a: Args, c: Context) -> Conversion:
    bits = a["num_bits"]
    if isinstance(bits, list):
        lo, hi = (int(v) for v in pair(bits, "num_bits"))
        if not 4 <= lo <= hi <= 7:
            raise Refused(f"num_bits {bits}: DALI's posterize keeps 4 to 7 bits",
                          nearest="(4, 7)")
        bins = [posterize_bin(b) for b in range(lo, hi + 1)]
        return Conversion([step("auto_aug.posterize", _p(a), magnitude_bin={"choice": bins})])
    return posterize_convert(bits, _p(a))


def _reverse(op: str, make: Any) -> Any:
    """A reverse for ``op`` whose code ``make(step)`` writes (None: no equivalent)."""

    def reverse(s: dict[str, Any]) -> str | None:
        if s["op"] != op:
            return None
        code = make(s)
        return None if code is None else code[:-1] + f", p={fmt(s.get('probability', 1.0))})"

    return reverse


def _range_text(s: dict[str, Any], name: str, scale: float = 1.0) -> str | None:
    r = span_of(s, name)
    return None if r is None else f"({fmt(r[0] * scale)}, {fmt(r[1] * scale)})"


def _plain(name: str, op: str, verdict: Verdict, fixed_kw: dict[str, Any] | None = None,
           params: tuple[str, ...] = ("p",), defaults: dict[str, Any] | None = None,
           check: Any = None) -> Rule:
    def convert(a: Args, c: Context) -> Conversion:
        if check is not None:
            check(a)
        return Conversion([step(op, _p(a))])

    def reverse(s: dict[str, Any]) -> str | None:
        return f"A.{name}(p={fmt(s.get('probability', 1.0))})" if s["op"] == op else None

    return Rule(LIB, name, params, defaults or {"p": 0.5}, f"{op}, probability p", verdict,
                convert=convert,
                fixed=lambda a, shape: Fixed([step(op)], alb(name, **(fixed_kw or {})), op),
                reverse=reverse)


def _equalize_check(a: Args) -> None:
    if a["mask"] is not None or not a["by_channels"]:
        raise Refused("masks and luminance-only equalisation have no catalog step",
                      nearest="by_channels=True, no mask")


RULES = [
    Rule(LIB, "ColorJitter", ("brightness", "contrast", "saturation", "hue", "p"),
         {"brightness": (0.8, 1.2), "contrast": (0.8, 1.2), "saturation": (0.8, 1.2),
          "hue": (-0.5, 0.5), "p": 0.5},
         "color_twist (factor ranges as written; hue fraction of a turn x 360 -> degrees)",
         Verdict("different", reason="hue rotates in YIQ (Albumentations: HSV); contrast "
                 "pivots on 128 (Albumentations: the mean grey); fixed order"),
         convert=_jitter_convert, fixed=_jitter_fixed,
         reverse=color_twist_reverse("A", "ColorJitter")),
    Rule(LIB, "HueSaturationValue", ("hue_shift_limit", "sat_shift_limit", "val_shift_limit",
                                     "p"),
         {"hue_shift_limit": (-20, 20), "sat_shift_limit": (-30, 30),
          "val_shift_limit": (-20, 20), "p": 0.5},
         "hsv (hue x2 -> degrees; saturation and value shifts -> factors 1 + shift / 128)",
         Verdict("different", reason="Albumentations adds to S and V in OpenCV's HSV; DALI "
                 "multiplies them (nearest factor 1 + shift / 128) and rotates hue in YIQ"),
         convert=_hsv_convert, fixed=_hsv_fixed),
    Rule(LIB, "RandomBrightnessContrast", ("brightness_limit", "contrast_limit",
                                           "brightness_by_max", "ensure_safe_range", "p"),
         {"brightness_limit": (-0.2, 0.2), "contrast_limit": (-0.2, 0.2),
          "brightness_by_max": True, "ensure_safe_range": False, "p": 0.5},
         "brightness (brightness = 1 + contrast, brightness_shift = brightness): both compute "
         "x * alpha + beta * 255",
         Verdict("equivalent", 1, reason="rounding"), convert=_bc_convert, fixed=_bc_fixed,
         reverse=_bc_reverse),
    Rule(LIB, "CLAHE", ("clip_limit", "tile_grid_size", "p"),
         {"clip_limit": 4.0, "tile_grid_size": (8, 8), "p": 0.5},
         "clahe (tiles, clip_limit = the middle of its range, luma only), probability p",
         IDENTICAL,
         convert=_clahe_convert,
         reverse=_reverse("clahe", lambda s: None if not s["params"].get("luma_only", True)
                          else f"A.CLAHE(clip_limit=({fmt(s['params']['clip_limit'])}, "
                          f"{fmt(s['params']['clip_limit'])}), tile_grid_size=("
                          f"{s['params']['tiles_y']}, {s['params']['tiles_x']}))"),
         fixed=lambda a, shape: Fixed(_clahe_convert({**a, "p": 1.0}, Context(LIB)).steps,
                                      alb("CLAHE", clip_limit=(_clip(a),) * 2,
                                          tile_grid_size=_tiles(a)),
                                      f"clip {fmt(_clip(a))}")),
    Rule(LIB, "ToGray", ("num_output_channels", "method", "p"),
         {"num_output_channels": 3, "method": "weighted_average", "p": 0.5},
         "saturation=0 (grey, 3 channels), probability p",
         Verdict("equivalent", 2, reason="rounding"),
         convert=lambda a, c: Conversion([step("saturation", _p(a), saturation=0.0)],
                                         notes=[] if a["num_output_channels"] == 3 else [
                                             "3 channels are kept (grey in each); "
                                             "Albumentations returns "
                                             f"{a['num_output_channels']}"],
                                         verdict=None if a["method"] == "weighted_average" else
                                         Verdict("different", reason=f"method {a['method']!r}: "
                                                 "DALI uses the weighted average")),
         fixed=lambda a, shape: Fixed([step("saturation", saturation=0.0)], alb("ToGray"),
                                      "grey"),
         reverse=lambda s: (f"A.ToGray(p={fmt(s.get('probability', 1.0))})"
                            if s["op"] == "saturation" and lit(s, "saturation") == 0 else None)),
    _plain("Equalize", "equalize", IDENTICAL, params=("mode", "by_channels", "mask",
                                                      "mask_params", "p"),
           defaults={"mode": "cv", "by_channels": True, "mask": None, "mask_params": (),
                     "p": 0.5}, check=_equalize_check),
    _plain("InvertImg", "auto_aug.invert", IDENTICAL),
    _plain("AutoContrast", "auto_aug.auto_contrast", Verdict("equivalent", 1, reason="rounding"),
           params=("cutoff", "ignore", "method", "p"),
           defaults={"cutoff": 0, "ignore": None, "method": "cdf", "p": 0.5},
           fixed_kw={"method": "pil"}),
    Rule(LIB, "Posterize", ("num_bits", "p"), {"num_bits": 4, "p": 0.5},
         "auto_aug.posterize (bits 4-7 -> magnitude bin; a range is a choice of bins)",
         IDENTICAL, convert=_posterize_convert,
         reverse=_reverse("auto_aug.posterize", lambda s: None if lit(s, "magnitude_bin") is None
                          else f"A.Posterize(num_bits={posterize_bits(lit(s, 'magnitude_bin'))})"),
         fixed=lambda a, shape: Fixed(
             [step("auto_aug.posterize", magnitude_bin=posterize_bin(max(sequence(
                 a["num_bits"]))))], alb("Posterize", num_bits=max(sequence(a["num_bits"]))),
             f"{max(sequence(a['num_bits']))} bits")),
    AlbumentationsRule(
        LIB, "Solarize", ("threshold_range", "p"), {"threshold_range": (0.5, 0.5), "p": 0.5},
        "auto_aug.solarize (threshold x 255 -> nearest of 31 bins)",
        Verdict("identical", reason="when the threshold falls on a bin"),
        convert=_solarize_convert,
        reverse=_reverse("auto_aug.solarize", lambda s: None if lit(s, "magnitude_bin") is None
                         else "A.Solarize(threshold_range=(" + ", ".join(
                             [fmt(solarize_threshold(lit(s, "magnitude_bin")) / 255)] * 2)
                         + "))"),
        fixed=lambda a, shape: Fixed(
            [step("auto_aug.solarize", magnitude_bin=solarize_bin(
                pair(a["threshold_range"], "t")[1] * 255)[0])],
            alb("Solarize", threshold_range=(pair(a["threshold_range"], "t")[1],) * 2),
            "threshold"),
        ignored={"threshold": ("threshold_range", "the threshold in pixel levels "
                               "(threshold_range = threshold / 255)")}),
]


def _clip(a: Args) -> float:
    clip = a["clip_limit"]
    lo, hi = pair(clip, "clip_limit") if isinstance(clip, list) else (1.0, number(clip, "clip"))
    return round((lo + hi) / 2, 3)

