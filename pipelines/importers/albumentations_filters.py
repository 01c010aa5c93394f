"""Albumentations noise, blur, sharpening, dropout and compression transforms -> preset steps.

GaussNoise's std is a fraction of 255; dropout sizes are fractions of the image; a blur_limit
n means kernel sizes 3 to n.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .albumentations_legacy import AlbumentationsRule
from .albumentations_pixels import LIB, _p, _range_text, _reverse, _span
from .reference import alb, alb_function
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
    fill_level,
    fmt,
    number,
    pair,
    single_fill,
    span_of,
    step,
)
from .torchvision_pixels import erase_reverse


def _noise_convert(a: Args, c: Context) -> Conversion:
    lo, hi = pair(a["std_range"], "std_range")
    mean = pair(a["mean_range"], "mean_range")
    if mean != (0.0, 0.0):
        raise Refused("mean_range: DALI's Gaussian noise has zero mean", nearest="(0, 0)")
    conv = Conversion([step("noise.gaussian", _p(a), stddev=drawn(lo * 255, hi * 255))])
    if not a["per_channel"]:
        conv.notes.append("per_channel=False: DALI draws the noise per channel")
    return conv


def _coarse_convert(a: Args, c: Context) -> Conversion:
    if isinstance(a["fill"], str):
        raise Refused(f"fill={a['fill']!r}: DALI's erase fills with a constant",
                      nearest="fill=0")
    n_lo, n_hi = (int(v) for v in pair(a["num_holes_range"], "num_holes_range"))
    hh, ww = _span(a["hole_height_range"], "h"), _span(a["hole_width_range"], "w")
    if max(hh + ww) > 1:
        raise Refused("hole sizes in pixels: the catalog's erase takes fractions of the image",
                      nearest="hole_height_range=(0.1, 0.2)")
    if not 1 <= n_hi <= 8:
        raise Refused(f"{n_hi} holes: at most 8 erase steps are imported", nearest="(1, 8)")
    fill = fill_level(a["fill"], c)
    box = {"center_x": {"uniform": [0.0, 1.0]}, "center_y": {"uniform": [0.0, 1.0]},
           "box_h": drawn(*hh), "box_w": drawn(*ww), "fill_value": fill}
    steps = [step("erase", _p(a) if k < n_lo else round(_p(a) * 0.5, 6), **box)
             for k in range(n_hi)]
    reasons = ["holes may overhang the border (DALI clips them)"]
    if n_hi > n_lo:
        reasons.append(f"{n_lo} to {n_hi} holes: the extra holes each fire with p/2 "
                       "(a binomial count, Albumentations: uniform)")
    return Conversion(steps, verdict=Verdict("different", reason="; ".join(reasons)))


def _coarse_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    hh, ww = _span(a["hole_height_range"], "h"), _span(a["hole_width_range"], "w")
    fill = single_fill(a["fill"])
    h, w = round(shape[0] * hh[1]), round(shape[1] * ww[1])
    y, x = (shape[0] - h) // 2, (shape[1] - w) // 2
    holes = np.array([[x, y, x + w, y + h]])
    return Fixed([step("erase", center_x=0.5, center_y=0.5, box_h=hh[1], box_w=ww[1],
                       fill_value=fill)],
                 alb_function("augmentations.dropout.functional", "cutout", holes, fill,
                              np.random.default_rng(0)),
                 f"centred hole {h}x{w}")


def _grid_convert(a: Args, c: Context) -> Conversion:
    if a["unit_size_range"] is None:
        raise Refused("the grid unit is derived from holes_number_xy or the image size; DALI's "
                      "grid_mask takes a tile in pixels", nearest="unit_size_range=(32, 32)")
    lo, hi = (int(v) for v in pair(a["unit_size_range"], "unit_size_range"))
    ratio = number(a["ratio"], "ratio")
    black = [0.0] if c.mean is None or c.std is None else [  # level 0 in this point's units
        round(-m / s, 6) for m, s in zip(c.mean, c.std, strict=False)]
    try:
        level = fill_level(a["fill"], c)
    except Refused as r:  # a colour per channel: name the black the grid masks with instead
        raise Refused(r.reason, nearest=f"fill={black if len(black) > 1 else black[0]} "
                      "(black: DALI's grid_mask masks with black)") from r
    if level != 0:
        raise Refused(f"fill={a['fill']!r} is grey level {fmt(level)} here; DALI's grid_mask "
                      "masks with black (level 0)",
                      nearest=f"fill={black if len(black) > 1 else black[0]}")
    params: dict[str, Any] = {"tile": drawn(lo, hi, integer=True), "ratio": ratio}
    if a["random_offset"]:
        params.update(shift_x=drawn(0, hi), shift_y=drawn(0, hi))
    return Conversion([step("grid_mask", _p(a), angle=0.0, **params)])


def _blur_convert(a: Args, c: Context) -> Conversion:
    lo, hi = _span(a["sigma_limit"], "sigma_limit")
    if lo <= 0:
        raise Refused(f"sigma_limit {a['sigma_limit']!r} must be positive")
    conv = Conversion([step("gaussian_blur", _p(a), sigma=drawn(lo, hi))])
    if a["blur_limit"] not in (0, [0, 0]):
        conv.verdict = Verdict("different", reason="Albumentations draws the kernel size from "
                               "blur_limit; DALI sizes the window from sigma")
    return conv


def _motion_convert(a: Args, c: Context) -> Conversion:
    lo, hi = _kernel_span(a["blur_limit"])  # the reason names the lengths actually drawn
    return Conversion([step("filter", _p(a), kernel="motion_blur", border="reflect_101")],
                      notes=_kernel_note(a["blur_limit"]),
                      verdict=Verdict("different", reason="a fixed 7-pixel horizontal kernel "
                                      f"(Albumentations: a random line of {fmt(lo)}-{fmt(hi)} "
                                      "px at a random angle)"))


def _kernel_span(v: Any) -> tuple[int, int]:
    """Albumentations' blur_limit as Albumentations 2 reads it (process_blur_limit): n means
    kernel sizes 3 to n, each bound at least 3 and odd (an even one goes up by 1)."""
    lo, hi = pair(v, "blur_limit") if isinstance(v, list) else (3.0, number(v, "blur_limit"))
    lo, hi = (max(3, int(x)) for x in (lo, hi))
    return lo + 1 - lo % 2, hi + 1 - hi % 2


def _kernel_note(v: Any) -> list[str]:
    """Says so when Albumentations reads blur_limit otherwise than as written."""
    lo, hi = _kernel_span(v)
    written = [float(x) for x in (v if isinstance(v, list) else [3, v])]
    return [] if written == [lo, hi] else [
        f"blur_limit={v!r} is ({lo}, {hi}) in Albumentations 2 (kernel sizes at least 3 and "
        "odd: an even one goes up by 1)"]


def _box_convert(a: Args, c: Context) -> Conversion:
    lo, hi = _kernel_span(a["blur_limit"])
    conv = Conversion([step("filter", _p(a), kernel="box_blur", border="reflect_101")],
                      notes=_kernel_note(a["blur_limit"]))
    if (lo, hi) != (3, 3):
        conv.verdict = Verdict("different", reason=f"a fixed 3x3 box (Albumentations draws "
                               f"{fmt(lo)} to {fmt(hi)} px)")
    return conv


def _median_convert(a: Args, c: Context) -> Conversion:
    lo, hi = _kernel_span(a["blur_limit"])
    if hi > 31:  # checked before listing the sizes: blur_limit may be as large as 1e9
        raise Refused(f"blur_limit {a['blur_limit']!r}: DALI's median window is at most 31 px",
                      nearest="blur_limit=(3, 31)")
    sizes = [k for k in range(max(3, lo), hi + 1) if k % 2 == 1]
    if not sizes:
        raise Refused(f"blur_limit {a['blur_limit']!r} holds no odd size of 3 or more")
    value: Any = sizes[0] if len(sizes) == 1 else {"choice": sizes}
    return Conversion([step("experimental.median_blur", _p(a), window_size=value)],
                      notes=_kernel_note(a["blur_limit"]))


def _jpeg_convert(a: Args, c: Context) -> Conversion:
    if a.get("compression_type", "jpeg") != "jpeg":
        raise Refused(f"compression_type {a['compression_type']!r}: DALI distorts with JPEG",
                      nearest="compression_type='jpeg'")
    lo, hi = (int(v) for v in pair(a["quality_range"], "quality_range"))
    return Conversion([step("jpeg_compression_distortion", _p(a),
                            quality=drawn(lo, hi, integer=True))])



_HOLES = "fill", "fill_mask", "p"
_FILL_1X = {"fill_value": ("fill", "the hole fill"),
            "mask_fill_value": ("fill_mask", "the mask's hole fill")}
_HOLES_1X = {"max_holes": ("num_holes_range", "the most holes"),
             "min_holes": ("num_holes_range", "the fewest holes"),
             "max_height": ("hole_height_range", "the largest hole height"),
             "min_height": ("hole_height_range", "the smallest hole height"),
             "max_width": ("hole_width_range", "the largest hole width"),
             "min_width": ("hole_width_range", "the smallest hole width"), **_FILL_1X}
"""CoarseDropout's 1.x arguments, which Albumentations 2 ignores."""
RULES = [
    AlbumentationsRule(
        LIB, "GaussNoise", ("std_range", "mean_range", "per_channel", "noise_scale_factor", "p"),
        {"std_range": (0.2, 0.44), "mean_range": (0.0, 0.0), "per_channel": True,
         "noise_scale_factor": 1, "p": 0.5},
        "noise.gaussian (stddev = std_range x 255 levels), probability p",
        Verdict("equivalent", 2, reason="random numbers differ; clipping at 0 and 255 alike",
                measure="noise_std"),
        convert=_noise_convert,
        reverse=_reverse("noise.gaussian", lambda s: None if _range_text(
            s, "stddev", 1 / 255) is None else
            f"A.GaussNoise(std_range={_range_text(s, 'stddev', 1 / 255)})"),
        fixed=lambda a, shape: Fixed(
            [step("noise.gaussian", stddev=pair(a["std_range"], "std_range")[1] * 255)],
            alb("GaussNoise", std_range=(pair(a["std_range"], "s")[1],) * 2),
            f"std {fmt(pair(a['std_range'], 's')[1] * 255)} levels"),
        ignored={"var_limit": ("std_range", "the noise variance in squared pixel levels "
                               "(std_range = sqrt(var) / 255)"),
                 "mean": ("mean_range", "the noise mean in pixel levels (mean_range = "
                          "mean / 255)")}),
    Rule(LIB, "ISONoise", ("color_shift", "intensity", "p"),
         {"color_shift": (0.01, 0.05), "intensity": (0.1, 0.5), "p": 0.5},
         "nearest: noise.gaussian (stddev = intensity x 45 levels)",
         Verdict("different", reason="ISO noise shifts hue and adds Poisson luminance noise in "
                 "HLS; the nearest catalog step adds Gaussian noise of a similar strength"),
         convert=lambda a, c: Conversion([step("noise.gaussian", _p(a), stddev=drawn(
             *(45 * v for v in pair(a["intensity"], "intensity"))))]),
         fixed=lambda a, shape: Fixed(
             [step("noise.gaussian", stddev=45 * pair(a["intensity"], "intensity")[1])],
             alb("ISONoise", color_shift=(pair(a["color_shift"], "c")[1],) * 2,
                 intensity=(pair(a["intensity"], "i")[1],) * 2), "strongest")),
    Rule(LIB, "MotionBlur", ("blur_limit", "allow_shifted", "angle_range", "direction_range",
                             "p"),
         {"blur_limit": (3, 7), "allow_shifted": True, "angle_range": (0, 360),
          "direction_range": (-1.0, 1.0), "p": 0.5},
         "nearest: filter (the catalog's 7-pixel horizontal motion_blur kernel)",
         Verdict("different", reason="a fixed 7-pixel horizontal kernel (Albumentations: a "
                 "random line of 3-7 px at a random angle)"),
         convert=_motion_convert),
    Rule(LIB, "MedianBlur", ("blur_limit", "p"), {"blur_limit": (3, 7), "p": 0.5},
         "experimental.median_blur (window size a choice of the odd sizes; GPU only)",
         Verdict("identical", reason="compared on the GPU: DALI's median filter runs only "
                 "there"),
         convert=_median_convert,
         fixed=lambda a, shape: Fixed([step("experimental.median_blur", window_size=(
             _kernel_span(a["blur_limit"])[1]))], alb("MedianBlur", blur_limit=(
                 _kernel_span(a["blur_limit"])[1],) * 2), "largest window")),
    Rule(LIB, "GaussianBlur", ("blur_limit", "sigma_limit", "p"),
         {"blur_limit": 0, "sigma_limit": (0.5, 3.0), "p": 0.5},
         "gaussian_blur (sigma uniform in sigma_limit)",
         Verdict("equivalent", 2, reason="both size the kernel from sigma"),
         convert=_blur_convert,
         reverse=_reverse("gaussian_blur", lambda s: None if _range_text(s, "sigma") is None
                          else f"A.GaussianBlur(blur_limit=0, sigma_limit="
                          f"{_range_text(s, 'sigma')})"),
         fixed=lambda a, shape: Fixed([step("gaussian_blur", sigma=_span(
             a["sigma_limit"], "s")[1])], alb("GaussianBlur", blur_limit=a["blur_limit"],
                                              sigma_limit=(_span(a["sigma_limit"], "s")[1],) * 2),
             f"sigma {fmt(_span(a['sigma_limit'], 's')[1])}")),
    Rule(LIB, "Blur", ("blur_limit", "p"), {"blur_limit": (3, 7), "p": 0.5},
         "filter (box_blur 3x3)", IDENTICAL,
         convert=_box_convert,
         fixed=lambda a, shape: Fixed([step("filter", kernel="box_blur",
                                            border="reflect_101")],
                                      alb("Blur", blur_limit=(3, 3)), "3x3")),
    AlbumentationsRule(
        LIB, "CoarseDropout", ("num_holes_range", "hole_height_range", "hole_width_range",
                               *_HOLES),
        {"num_holes_range": (1, 2), "hole_height_range": (0.1, 0.2),
         "hole_width_range": (0.1, 0.2), "fill": 0, "fill_mask": None, "p": 0.5},
        "one erase step per hole (sizes as fractions, centre uniform, fill)",
        Verdict("different", reason="holes may overhang the border (DALI clips them)"),
        convert=_coarse_convert, fixed=_coarse_fixed, reverse=erase_reverse("A"),
        ignored=_HOLES_1X),
    AlbumentationsRule(
        LIB, "GridDropout", ("ratio", "random_offset", "unit_size_range", "holes_number_xy",
                             "shift_xy", *_HOLES),
        {"ratio": 0.5, "random_offset": True, "unit_size_range": None,
         "holes_number_xy": None, "shift_xy": (0, 0), "fill": 0, "fill_mask": None, "p": 0.5},
        "grid_mask (tile = unit size, ratio, random shift)",
        Verdict("different", reason="DALI's grid covers the whole image from its own origin; "
                "Albumentations places whole holes"), convert=_grid_convert,
        ignored={"unit_size_min": ("unit_size_range", "the smallest grid unit"),
                 "unit_size_max": ("unit_size_range", "the largest grid unit"),
                 "holes_number_x": ("holes_number_xy", "the holes across"),
                 "holes_number_y": ("holes_number_xy", "the holes down"),
                 "shift_x": ("shift_xy", "the grid's x offset"),
                 "shift_y": ("shift_xy", "the grid's y offset"), **_FILL_1X}),
    AlbumentationsRule(
        LIB, "ImageCompression", ("compression_type", "quality_range", "p"),
        {"compression_type": "jpeg", "quality_range": (99, 100), "p": 0.5},
        "jpeg_compression_distortion (quality uniform in quality_range)",
        Verdict("equivalent", 16, 0.99, reason="different JPEG encoders"),
        convert=_jpeg_convert,
        reverse=_reverse("jpeg_compression_distortion", lambda s: None if span_of(
            s, "quality") is None else "A.ImageCompression(quality_range=("
            f"{int(span_of(s, 'quality')[0])}, {int(span_of(s, 'quality')[1])}))"),
        fixed=lambda a, shape: Fixed(
            [step("jpeg_compression_distortion", quality=int(pair(a["quality_range"], "q")[1]))],
            alb("ImageCompression", quality_range=(int(pair(a["quality_range"], "q")[1]),) * 2),
            "quality"),
        ignored={"quality_lower": ("quality_range", "the lowest quality"),
                 "quality_upper": ("quality_range", "the highest quality")}),
    Rule(LIB, "Sharpen", ("alpha", "lightness", "method", "kernel_size", "sigma", "p"),
         {"alpha": (0.2, 0.5), "lightness": (0.5, 1.0), "method": "kernel", "kernel_size": 5,
          "sigma": 1.0, "p": 0.5},
         "nearest: filter (the catalog's sharpen kernel)",
         Verdict("different", reason="a fixed 3x3 sharpen kernel (Albumentations blends a "
                 "random amount)"),
         convert=lambda a, c: Conversion([step("filter", _p(a), kernel="sharpen",
                                               border="reflect_101")])),
    Rule(LIB, "Emboss", ("alpha", "strength", "p"),
         {"alpha": (0.2, 0.5), "strength": (0.2, 0.7), "p": 0.5},
         "nearest: filter (the catalog's emboss kernel)",
         Verdict("different", reason="a fixed emboss kernel, not blended"),
         convert=lambda a, c: Conversion([step("filter", _p(a), kernel="emboss",
                                               border="reflect_101")])),
]
