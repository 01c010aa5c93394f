"""torchvision colour, filter, erasing, auto-augment and conversion transforms -> preset steps.

ColorJitter's hue is a fraction of a turn (x360 for DALI's degrees); the auto_aug steps take
a magnitude bin of 31, so thresholds and bit counts become the nearest bin and the verdict says
when that bin is not exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .bins import (
    BINS,
    posterize_bits,
    posterize_convert,
    sharpness_convert,
    solarize_bin,
    solarize_threshold,
    solarize_verdict,
)
from .reference import tv, tv_chain
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
    jitter,
    lit,
    number,
    pair,
    sequence,
    span_of,
    step,
    symmetric,
)
from .torchvision_geometry import LIB, _p, _size

# ---- colour -----------------------------------------------------------------------------------


def _jitter_parts(a: Args) -> dict[str, tuple[float, float]]:
    parts = {}
    for k in ("brightness", "contrast", "saturation"):
        r = jitter(a[k], k)
        if r is not None:
            parts[k] = r
    if a["hue"] not in (None, 0):
        lo, hi = symmetric(a["hue"], "hue")
        if not -0.5 <= lo <= hi <= 0.5:
            raise Refused(f"hue {a['hue']!r} must lie in [-0.5, 0.5] (a fraction of a turn)")
        parts["hue"] = (lo * 360, hi * 360)
    return parts


def _jitter_verdict(parts: dict[str, Any]) -> Verdict:
    reasons = []
    if "hue" in parts:
        reasons.append("DALI rotates hue in YIQ (torchvision: in HSV)")
    if "contrast" in parts:
        reasons.append("DALI's contrast pivots on mid-grey 128 (torchvision: the image's mean "
                       "grey)")
    if len(parts) > 1:
        reasons.append("one fixed order (torchvision permutes the four per sample)")
    if reasons:
        return Verdict("different", reason="; ".join(reasons))
    if "saturation" in parts:
        return Verdict("equivalent", 2, reason="saturation blends with the same luma")
    return Verdict("equivalent", 1, reason="rounding: torchvision truncates")


def color_jitter_convert(a: Args, c: Context) -> Conversion:
    parts = _jitter_parts(a)
    if not parts:
        return Conversion(notes=["ColorJitter with all factors 0 changes nothing"])
    params = {k: drawn(*parts[k]) for k in parts}
    return Conversion([step("color_twist", a.get("p", 1.0), **params)],
                      verdict=_jitter_verdict(parts))


def color_jitter_fixed(a: Args, shape: tuple[int, ...]) -> Fixed | None:
    parts = _jitter_parts(a)
    if not parts:
        return None
    values = {k: (v[1] if k != "hue" else v[1]) for k, v in parts.items()}
    refs = []
    for k in ("brightness", "contrast", "saturation"):
        if k in values:
            refs.append(tv(f"adjust_{k}", values[k]))
    if "hue" in values:
        refs.append(tv("adjust_hue", values["hue"] / 360))
    label = ", ".join(f"{k} {fmt(v)}" for k, v in values.items())
    return Fixed([step("color_twist", **values)], tv_chain(*refs), label)


def color_twist_reverse(prefix: str, name: str) -> Any:
    def reverse(s: dict[str, Any]) -> str | None:
        if s["op"] != "color_twist":
            return None
        args = []
        for k in ("brightness", "contrast", "saturation", "hue"):
            r = span_of(s, k)
            if r is None:
                return None
            if k == "hue":
                if r != (0.0, 0.0):
                    args.append(f"hue=({fmt(r[0] / 360)}, {fmt(r[1] / 360)})")
            elif r != (1.0, 1.0):
                args.append(f"{k}=({fmt(r[0])}, {fmt(r[1])})")
        if prefix == "A":
            args.append(f"p={fmt(s.get('probability', 1.0))}")
            return f"A.{name}({', '.join(args)})"
        return f"v2.{name}({', '.join(args)})"  # no p: reverse.step_code adds RandomApply

    return reverse


def _gray_rule(name: str, params: tuple[str, ...], defaults: dict[str, Any]) -> Rule:
    def convert(a: Args, c: Context) -> Conversion:
        conv = Conversion([step("saturation", a.get("p", 1.0), saturation=0.0)])
        if a.get("num_output_channels", 3) == 1:
            conv.notes.append("3 channels are kept (grey in each); torchvision returns 1")
        return conv

    def reverse(s: dict[str, Any]) -> str | None:
        if s["op"] != "saturation" or lit(s, "saturation") != 0:
            return None
        return f"v2.RandomGrayscale(p={fmt(s.get('probability', 1.0))})"

    return Rule(LIB, name, params, defaults, "saturation=0 (grey, 3 channels), probability p",
                Verdict("equivalent", 2, reason="rounding: torchvision truncates the luma"),
                convert=convert,
                fixed=lambda a, shape: Fixed([step("saturation", saturation=0.0)],
                                             tv("rgb_to_grayscale", num_output_channels=3),
                                             "grey"),
                reverse=reverse if name == "RandomGrayscale" else None)


def _blur_convert(a: Args, c: Context) -> Conversion:
    lo, hi = (symmetric(a["sigma"], "sigma", center=0) if isinstance(a["sigma"], (list, tuple))
              else (number(a["sigma"], "sigma"),) * 2)
    if lo <= 0:
        raise Refused(f"sigma {a['sigma']!r} must be positive")
    ks = _size(a["kernel_size"], "kernel_size")
    if any(k <= 0 or k % 2 == 0 for k in ks):  # torchvision raises on these
        raise Refused(f"kernel_size {a['kernel_size']!r}: torchvision takes odd, positive sizes",
                      nearest=f"kernel_size={[k + 1 if k % 2 == 0 else k for k in ks]}")
    conv = Conversion([step("gaussian_blur", sigma=drawn(lo, hi))])
    need = 2 * math.ceil(2 * hi) + 1
    if min(ks) < need:
        conv.verdict = Verdict("different", reason=f"torchvision truncates the kernel to "
                               f"{ks[0]}x{ks[1]} (under 2 sigma at sigma {hi:g}); DALI's window "
                               "follows sigma")
    return conv


def _blur_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    conv = _blur_convert(a, Context(LIB))
    lo, hi = (pair(a["sigma"], "sigma") if isinstance(a["sigma"], (list, tuple))
              else (number(a["sigma"], "sigma"),) * 2)
    ks = list(_size(a["kernel_size"], "kernel_size"))
    s = conv.steps[0]
    s["params"]["sigma"] = hi
    return Fixed([s], tv("gaussian_blur", kernel_size=ks[::-1], sigma=[hi, hi]),
                 f"sigma {fmt(hi)}")


def _blur_reverse(s: dict[str, Any]) -> str | None:
    if s["op"] != "gaussian_blur" or span_of(s, "sigma") is None:
        return None
    lo, hi = span_of(s, "sigma")
    k = 2 * math.ceil(3 * hi) + 1
    return f"v2.GaussianBlur({k}, sigma=({fmt(lo)}, {fmt(hi)}))"


# ---- erasing ----------------------------------------------------------------------------------


def erasing_sides(scale: tuple[float, float], ratio: tuple[float, float]) -> tuple[
        tuple[float, float], tuple[float, float]]:
    """Box height and width ranges (fractions of the image) covering torchvision's areas
    ``scale`` at aspect ratios (h/w) ``ratio``."""
    h = (math.sqrt(scale[0] * ratio[0]), min(1.0, math.sqrt(scale[1] * ratio[1])))
    w = (math.sqrt(scale[0] / ratio[1]), min(1.0, math.sqrt(scale[1] / ratio[0])))
    return (min(h), max(h)), (min(w), max(w))


def _pair_text(pair: tuple[float, float]) -> str:
    return f"({fmt(pair[0])}, {fmt(pair[1])})"


def _erasing_convert(a: Args, c: Context) -> Conversion:
    if isinstance(a["value"], str):
        raise Refused(f"value={a['value']!r}: DALI's erase fills with a constant",
                      nearest="value=0")
    scale, ratio = pair(a["scale"], "scale"), pair(a["ratio"], "ratio")
    if scale[0] < 0 or scale[1] > 1:  # torchvision raises on these
        raise Refused(f"scale {_pair_text(scale)} is not allowed; torchvision takes areas "
                      "between 0 and 1", nearest="scale=(0.02, 0.33)")
    if not ratio[0] > 0:  # torchvision draws log(ratio): 0 is -inf, a negative ratio NaN
        raise Refused(f"ratio {_pair_text(ratio)} is not allowed; aspect ratios are above 0",
                      nearest="ratio=(0.3, 3.3)")
    (hlo, hhi), (wlo, whi) = erasing_sides(scale, ratio)
    fill = fill_level(a["value"], c, "value")
    conv = Conversion([step("erase", _p(a), center_x={"uniform": [0.0, 1.0]},
                            center_y={"uniform": [0.0, 1.0]}, box_w=drawn(wlo, whi),
                            box_h=drawn(hlo, hhi), fill_value=fill)])
    if c.mean is not None:
        conv.notes.append(f"erases before normalisation with grey level {fmt(fill)} (value "
                          f"{a['value']!r} after Normalize)")
    return conv


def _erasing_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    scale = pair(a["scale"], "scale")
    side = math.sqrt(scale[1])
    fill = fill_level(a["value"], Context(LIB), "value")
    h, w = round(shape[0] * side), round(shape[1] * side)
    i, j = (shape[0] - h) // 2, (shape[1] - w) // 2

    def ref(img: np.ndarray) -> np.ndarray:
        import torch
        from torchvision.transforms.v2 import functional as F

        from .reference import to_hwc, to_tensor

        v = torch.full((3, h, w), fill, dtype=torch.uint8)
        return to_hwc(F.erase(to_tensor(img), i, j, h, w, v))

    s = step("erase", center_x=0.5, center_y=0.5, box_w=side, box_h=side, fill_value=fill)
    return Fixed([s], ref, f"centred box {h}x{w}")


def erase_reverse(prefix: str) -> Any:
    def reverse(s: dict[str, Any]) -> str | None:
        if s["op"] != "erase" or span_of(s, "box_w") is None or span_of(s, "box_h") is None:
            return None
        (wlo, whi), (hlo, hhi) = span_of(s, "box_w"), span_of(s, "box_h")
        fill = fmt(s["params"].get("fill_value", 0))
        p = fmt(s.get("probability", 1.0))
        if prefix == "A":
            return (f"A.CoarseDropout(num_holes_range=(1, 1), hole_height_range=({fmt(hlo)}, "
                    f"{fmt(hhi)}), hole_width_range=({fmt(wlo)}, {fmt(whi)}), fill={fill}, "
                    f"p={p})")
        return (f"v2.RandomErasing(p={p}, scale=({fmt(hlo * wlo)}, {fmt(hhi * whi)}), "
                f"ratio=({fmt(hlo / whi)}, {fmt(hhi / max(wlo, 1e-6))}), value={fill})")

    return reverse


def _solarize_convert(a: Args, c: Context) -> Conversion:
    t = number(a["threshold"], "threshold") * (255 if c.scaled else 1)
    b, t2 = solarize_bin(t)
    return Conversion([step("auto_aug.solarize", _p(a), magnitude_bin=b)],
                      verdict=solarize_verdict(t, t2))


def _sharpness_fixed(a: Args, shape: tuple[int, ...]) -> Fixed | None:
    conv = sharpness_convert(number(a["sharpness_factor"], "sharpness_factor"), 1.0)
    if not conv.steps:
        return None
    b = conv.steps[0]["params"]["magnitude_bin"]
    return Fixed(conv.steps, tv("adjust_sharpness", 1 + 0.9 * b / (BINS - 1)), f"bin {b}")


def _plain_aug(name: str, op: str, fn: str, verdict: Verdict) -> Rule:
    def reverse(s: dict[str, Any]) -> str | None:
        return f"v2.{name}(p={fmt(s.get('probability', 1.0))})" if s["op"] == op else None

    return Rule(LIB, name, ("p",), {"p": 0.5}, f"{op}, probability p", verdict,
                convert=lambda a, c: Conversion([step(op, _p(a))]),
                fixed=lambda a, shape: Fixed([step(op)], tv(fn), op), reverse=reverse)


def _normalize_convert(a: Args, c: Context) -> Conversion:
    """The tail's mean/std are fractions of 255; after an unscaled ToDtype(float32) the
    values, and so Normalize's mean/std, are grey levels (200 -> (200 - 0.5) / 0.5)."""
    mean = [number(v, "mean") for v in sequence(a["mean"])]
    std = [number(v, "std") for v in sequence(a["std"])]
    conv = Conversion()
    if c.scaled is False:
        mean, std = [m / 255 for m in mean], [s / 255 for s in std]
        conv.notes.append("after an unscaled ToDtype: mean and std are grey levels (0-255)")
    c.mean, c.std = tuple(mean), tuple(std)
    conv.tail = {"mean": mean, "std": std}
    return conv


def _normalize_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    mean = [number(v, "mean") for v in a["mean"]]
    std = [number(v, "std") for v in a["std"]]

    def ref(img: np.ndarray) -> np.ndarray:
        import torch
        from torchvision.transforms.v2 import functional as F

        from .reference import to_tensor

        t = F.to_dtype(to_tensor(img), torch.float32, scale=True)
        return F.normalize(t, mean, std).permute(1, 2, 0).numpy()

    return Fixed([], ref, "normalised", tail={"mean": mean, "std": std})


RULES = [
    Rule(LIB, "ColorJitter", ("brightness", "contrast", "saturation", "hue"),
         {"brightness": None, "contrast": None, "saturation": None, "hue": None},
         "color_twist (factors uniform [max(0, 1 - b), 1 + b]; hue fraction of a turn x 360 "
         "-> degrees)",
         Verdict("different", reason="hue rotates in YIQ (torchvision: HSV); contrast pivots "
                 "on 128 (torchvision: the mean grey); fixed order"),
         convert=color_jitter_convert, fixed=color_jitter_fixed,
         reverse=color_twist_reverse("v2", "ColorJitter")),
    _gray_rule("Grayscale", ("num_output_channels",), {"num_output_channels": 1}),
    _gray_rule("RandomGrayscale", ("p",), {"p": 0.1}),
    Rule(LIB, "GaussianBlur", ("kernel_size", "sigma"), {"kernel_size": REQUIRED,
                                                         "sigma": (0.1, 2.0)},
         "gaussian_blur (sigma uniform; DALI sizes the window from sigma)",
         Verdict("equivalent", 2, reason="kernel weights rounded differently"),
         convert=_blur_convert, fixed=_blur_fixed, reverse=_blur_reverse),
    Rule(LIB, "RandomErasing", ("p", "scale", "ratio", "value", "inplace"),
         {"p": 0.5, "scale": (0.02, 0.33), "ratio": (0.3, 3.3), "value": 0.0,
          "inplace": False},
         "erase (box sides from scale and ratio, centre uniform, fill = value as a grey level "
         "before normalisation), probability p",
         Verdict("different", reason="box height and width are drawn independently and the "
                 "box may overhang the border (torchvision: area and aspect, box inside)"),
         convert=_erasing_convert, fixed=_erasing_fixed, reverse=erase_reverse("v2")),
    Rule(LIB, "RandomPosterize", ("bits", "p"), {"bits": REQUIRED, "p": 0.5},
         "auto_aug.posterize (bits 4-7 -> magnitude bin), probability p", IDENTICAL,
         convert=lambda a, c: posterize_convert(a["bits"], _p(a)),
         fixed=lambda a, shape: Fixed(posterize_convert(a["bits"], 1.0).steps,
                                      tv("posterize", int(a["bits"])), f"{a['bits']} bits")
         if posterize_convert(a["bits"], 1.0).steps else None,
         reverse=lambda s: (f"v2.RandomPosterize(bits={posterize_bits(lit(s, 'magnitude_bin'))}, "
                            f"p={fmt(s.get('probability', 1.0))})")
         if s["op"] == "auto_aug.posterize" and lit(s, "magnitude_bin") is not None else None),
    Rule(LIB, "RandomSolarize", ("threshold", "p"), {"threshold": REQUIRED, "p": 0.5},
         "auto_aug.solarize (threshold -> nearest of 31 bins), probability p",
         Verdict("identical", reason="when the threshold falls on a bin"),
         convert=_solarize_convert,
         fixed=lambda a, shape: Fixed(
             [step("auto_aug.solarize", magnitude_bin=solarize_bin(
                 number(a["threshold"], "threshold"))[0])],
             tv("solarize", number(a["threshold"], "threshold")), f"threshold {a['threshold']}"),
         reverse=lambda s: (f"v2.RandomSolarize(threshold="
                            f"{fmt(solarize_threshold(lit(s, 'magnitude_bin')))}, "
                            f"p={fmt(s.get('probability', 1.0))})")
         if s["op"] == "auto_aug.solarize" and lit(s, "magnitude_bin") is not None else None),
    Rule(LIB, "RandomAdjustSharpness", ("sharpness_factor", "p"),
         {"sharpness_factor": REQUIRED, "p": 0.5},
         "auto_aug.sharpness (factor 1-1.9 -> nearest bin, no random sign), probability p",
         Verdict("equivalent", 1, 0.99, reason="the 1-pixel border differs: torchvision keeps "
                 "it"),
         convert=lambda a, c: sharpness_convert(number(a["sharpness_factor"], "factor"), _p(a)),
         fixed=_sharpness_fixed,
         reverse=lambda s: (f"v2.RandomAdjustSharpness(sharpness_factor="
                            f"{fmt(1 + 0.9 * lit(s, 'magnitude_bin') / (BINS - 1))}, "
                            f"p={fmt(s.get('probability', 1.0))})")
         if s["op"] == "auto_aug.sharpness" and lit(s, "magnitude_bin") is not None
         and s["params"].get("random_sign") is False else None),
    _plain_aug("RandomAutocontrast", "auto_aug.auto_contrast", "autocontrast",
               Verdict("equivalent", 1, reason="rounding of the stretch")),
    _plain_aug("RandomEqualize", "equalize", "equalize",
               Verdict("different", reason="DALI's lookup table follows OpenCV's formula, "
                       "torchvision PIL's (tens of levels apart)")),
    _plain_aug("RandomInvert", "auto_aug.invert", "invert", IDENTICAL),
    Rule(LIB, "Normalize", ("mean", "std", "inplace"),
         {"mean": REQUIRED, "std": REQUIRED, "inplace": False},
         "output tail mean/std (fractions of 255, as after ToTensor; grey levels after an "
         "unscaled ToDtype(float32))",
         Verdict("equivalent", 0.01, reason="float rounding"),
         convert=_normalize_convert, fixed=_normalize_fixed),
]
