"""Albumentations normalisation, conversions, containers and the transforms not imported, and
every Albumentations rule in one list (:data:`RULES`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import (
    albumentations_filters,
    albumentations_geometry,
    albumentations_pixels,
    albumentations_warps,
)
from .albumentations_geometry import _GEOMETRY_DEFAULTS
from .albumentations_legacy import accepting_legacy
from .reference import alb
from .rules import (
    REQUIRED,
    Args,
    Context,
    Conversion,
    Fixed,
    Refused,
    Rule,
    Verdict,
    container,
    conversion,
    fmt,
    number,
    sequence,
    unsupported,
)

LIB = "albumentations"


def _normalize_values(a: Args) -> tuple[list[float], list[float]]:
    """Albumentations computes (img - mean * max_pixel_value) / (std * max_pixel_value); the
    output tail subtracts mean * 255 and divides by std * 255, so both scale by
    max_pixel_value / 255 (mean and std in pixel units with max_pixel_value=1, mmdet-style)."""
    if a["normalization"] != "standard":
        raise Refused(f"normalization {a['normalization']!r}: the output tail subtracts a fixed "
                      "mean and divides by a fixed std", nearest="normalization='standard'")
    top = number(a["max_pixel_value"], "max_pixel_value")
    if top <= 0:
        raise Refused(f"max_pixel_value {top:g} must be positive (the value of a white pixel, "
                      "255 for uint8 images)", nearest="max_pixel_value=255")
    mean = [float(f"{number(v, 'mean') * top / 255:.12g}") for v in sequence(a["mean"])]
    std = [float(f"{number(v, 'std') * top / 255:.12g}") for v in sequence(a["std"])]
    for key, values in (("mean", mean), ("std", std)):
        if len(values) not in (1, 3):
            raise Refused(f"{key} {a[key]!r} has {len(values)} values; the output tail takes "
                          "1 or 3 (one per RGB channel)")
    if not all(v > 0 for v in std):
        raise Refused(f"std {a['std']!r}: the output tail divides by a positive std")
    if not all(abs(v) < 1e4 for v in mean):
        raise Refused(f"mean {a['mean']!r} with max_pixel_value {top:g} is "
                      f"{[float(f'{v:.6g}') for v in mean]} in fractions of 255; the output "
                      "tail takes means within +-1e4", nearest="mean in [0, 1] with "
                      "max_pixel_value=255, or in pixel levels with max_pixel_value=1")
    return mean, std


def _every_sample(a: Args, name: str) -> None:
    """Refused: a conversion with p < 1. The output tail converts every sample; Albumentations
    would leave the others as they were (a batch of mixed types and layouts)."""
    p = number(a["p"], "p")
    if p != 1:
        raise Refused(f"{name}(p={fmt(p)}): the output tail applies to every sample, "
                      f"Albumentations to {fmt(p * 100)}% of them (the rest stay as they were)",
                      nearest="p=1")


def _to_tensor(a: Args, c: Context) -> Conversion:
    _every_sample(a, "ToTensorV2")
    return Conversion(tail={"layout": "CHW"})


def _after(c: Context, shift: list[float], scale: list[float]) -> tuple[list[float], list[float]]:
    """The tail's (mean, std) once values v, which the context says are already
    (x - m0 * 255) / (s0 * 255) (ToFloat's x / M: m0 0, s0 M / 255; uint8 levels: 0 and 1/255),
    become (v - shift) / scale: mean m0 + shift * s0 and std scale * s0, in fractions of 255."""
    m0, s0 = (c.mean, c.std) if c.mean is not None and c.std is not None else ((0.0,), (1 / 255,))
    n = max(len(shift), len(scale), len(m0), len(s0))
    if any(len(x) not in (1, n) for x in (shift, scale, m0, s0)):
        raise Refused(f"{len(shift)} values after a conversion of {n} channels; expected 1 or "
                      f"one per channel")
    m0, s0, shift, scale = (list(x) * (n // len(x)) for x in (m0, s0, shift, scale))
    return ([float(f"{m + d * s:.12g}") for m, d, s in zip(m0, shift, s0, strict=True)],
            [float(f"{k * s:.12g}") for k, s in zip(scale, s0, strict=True)])


def _normalize_convert(a: Args, c: Context) -> Conversion:
    _every_sample(a, "Normalize")
    mean, std = _normalize_values(a)  # fractions of 255, for uint8 input
    if c.mean is not None:  # after ToFloat (or a Normalize): on the values as they are now
        top = number(a["max_pixel_value"], "max_pixel_value")
        mean, std = _after(c, [number(v, "mean") * top for v in sequence(a["mean"])],
                           [number(v, "std") * top for v in sequence(a["std"])])
    c.mean, c.std, c.scaled = tuple(mean), tuple(std), True
    return Conversion(tail={"mean": mean, "std": std, "dtype": "float32"})


def _normalize_fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
    mean, std = _normalize_values(a)
    ref = alb("Normalize", mean=_given(a["mean"]), std=_given(a["std"]),
              max_pixel_value=a["max_pixel_value"])
    return Fixed([], lambda img: np.asarray(ref(img), dtype=np.float32), "normalised",
                 tail={"mean": mean, "std": std})


def _given(v: Any) -> Any:
    """A bound argument back as the library takes it (a list as a tuple)."""
    return tuple(v) if isinstance(v, list) else v


def _to_float(a: Args, c: Context) -> Conversion:
    _every_sample(a, "ToFloat")
    top = 255.0 if a["max_value"] is None else number(a["max_value"], "max_value")
    if top <= 0:
        raise Refused(f"max_value {top:g} must be positive (None: 255 for uint8 images)")
    if c.scaled:  # Albumentations returns float32 input as it is, whatever max_value
        return Conversion(tail={}, notes=["no change: the values are float32 already (after "
                                          "Normalize or ToFloat), which ToFloat leaves as is"])
    mean, std = _after(c, [0.0], [top])
    c.mean, c.std, c.scaled = tuple(mean), tuple(std), True  # a fill v: level v * top
    return Conversion(tail={"dtype": "float32", "mean": mean, "std": std})


def _container(name: str, params: tuple[str, ...], defaults: dict[str, Any], what: str) -> Rule:
    return container(LIB, name, params, defaults, what)


_RULES = (albumentations_geometry.RULES + albumentations_warps.RULES
          + albumentations_pixels.RULES + albumentations_filters.RULES) + [
    Rule(LIB, "Normalize", ("mean", "std", "max_pixel_value", "normalization", "p"),
         {"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225), "max_pixel_value": 255.0,
          "normalization": "standard", "p": 1.0},
         "output tail mean/std x max_pixel_value / 255 (Albumentations' fractions of "
         "max_pixel_value as fractions of 255), float32",
         Verdict("equivalent", 0.01, reason="float rounding"),
         convert=_normalize_convert, fixed=_normalize_fixed),
    conversion(LIB, "ToTensorV2", ("transpose_mask", "p"), {"transpose_mask": False, "p": 1.0},
               "CHW layout", _to_tensor),
    conversion(LIB, "ToFloat", ("max_value", "p"), {"max_value": None, "p": 1.0},
               "float32 divided by max_value", _to_float),
    unsupported(LIB, "Lambda", ("image", "mask", "keypoints", "bboxes", "name", "p"),
                {"image": None, "mask": None, "keypoints": None, "bboxes": None, "name": None,
                 "p": 1.0},
                "custom Python code is never imported or run",
                "a custom operator (@custom_op) with the same code"),
    _container("Compose", ("transforms", "bbox_params", "keypoint_params", "additional_targets",
                           "p", "is_check_shapes", "strict", "mask_interpolation", "seed",
                           "save_applied_params"),
               {"transforms": REQUIRED, "bbox_params": None, "keypoint_params": None,
                "additional_targets": None, "p": 1.0, "is_check_shapes": True, "strict": False,
                "mask_interpolation": None, "seed": None, "save_applied_params": False},
               "the chain, in order"),
    _container("ReplayCompose", ("transforms", "bbox_params", "keypoint_params",
                                 "additional_targets", "p", "is_check_shapes", "save_key"),
               {"transforms": REQUIRED, "bbox_params": None, "keypoint_params": None,
                "additional_targets": None, "p": 1.0, "is_check_shapes": True,
                "save_key": "replay"},
               "the chain, in order (what it records under save_key, the preview's records "
               "show)"),
    _container("OneOf", ("transforms", "p"), {"transforms": REQUIRED, "p": 0.5},
               "a one_of group fired with p that applies one of them (each transform's p is "
               "its weight; the picked one is applied whatever its p)"),
    _container("SomeOf", ("transforms", "n", "replace", "p"),
               {"transforms": REQUIRED, "n": 1, "replace": False, "p": 1},
               "a one_of group fired with p that picks n of them uniformly (each then applies "
               "with its own p; replace=True is not imported)"),
    _container("Sequential", ("transforms", "p"), {"transforms": REQUIRED, "p": 0.5},
               "a one_of group applying them all, in order, with probability p"),
    unsupported(LIB, "OneOrOther", ("first", "second", "transforms", "p"),
                {"first": None, "second": None, "transforms": None, "p": 0.5},
                "the two-branch form is not read", "OneOf with the two transforms"),
    unsupported(LIB, "RandomOrder", ("transforms", "n", "replace", "p"),
                {"transforms": REQUIRED, "n": 1, "replace": False, "p": 1},
                "a DALI pipeline applies its steps in one fixed order",
                "the transforms in the listed order"),
    unsupported(LIB, "SelectiveChannelTransform", ("transforms", "channels", "p"),
                {"transforms": REQUIRED, "channels": (0, 1, 2), "p": 1.0},
                "the catalog's steps apply to all channels", "the transforms on all channels"),
    unsupported(LIB, "LongestMaxSize", ("max_size", "max_size_hw", "interpolation",
                                        "mask_interpolation", "area_for_downscale", "p"),
                {"max_size": None, "max_size_hw": None, "interpolation": 1,
                 "mask_interpolation": 0, "area_for_downscale": None, "p": 1},
                "the catalog's resize sets the shorter side only", "SmallestMaxSize / resize"),
    unsupported(LIB, "SafeRotate", ("limit", "interpolation", "border_mode", "rotate_method",
                                    "mask_interpolation", "fill", "fill_mask", "p"),
                {"limit": (-90, 90), "rotate_method": "largest_box", "p": 0.5,
                 **_GEOMETRY_DEFAULTS},
                "rotating while scaling to keep every pixel has no catalog step",
                "Rotate (rotate)"),
    unsupported(LIB, "RandomSizedCrop", ("min_max_height", "size", "w2h_ratio",
                                         "interpolation", "mask_interpolation",
                                         "area_for_downscale", "p"),
                {"min_max_height": REQUIRED, "size": REQUIRED, "w2h_ratio": 1.0,
                 "interpolation": 1, "mask_interpolation": 0, "area_for_downscale": None,
                 "p": 1.0},
                "crop heights in pixels have no catalog step", "RandomResizedCrop"),
    unsupported(LIB, "PadIfNeeded", ("min_height", "min_width", "pad_height_divisor",
                                     "pad_width_divisor", "position", "border_mode", "fill",
                                     "fill_mask", "p"),
                {"min_height": 1024, "min_width": 1024, "pad_height_divisor": None,
                 "pad_width_divisor": None, "position": "center", "border_mode": 0, "fill": 0,
                 "fill_mask": 0, "p": 1.0},
                "padding to a minimum size has no catalog step",
                "CenterCrop with pad_if_needed (crop pads)"),
    unsupported(LIB, "Transpose", ("p",), {"p": 0.5}, "no catalog step swaps the axes",
                "RandomRotate90 + flip"),
    unsupported(LIB, "D4", ("p",), {"p": 1}, "the 8 symmetries need a transpose",
                "RandomRotate90 + flip"),
    unsupported(LIB, "ElasticTransform", (
        "alpha", "sigma", "interpolation", "approximate", "same_dxdy", "mask_interpolation",
        "noise_distribution", "keypoint_remapping_method", "border_mode", "fill", "fill_mask",
        "p"),
        {"alpha": 1, "sigma": 50, "interpolation": 1, "approximate": False, "same_dxdy": False,
         "mask_interpolation": 0, "noise_distribution": "gaussian",
         "keypoint_remapping_method": "mask", "border_mode": 0, "fill": 0, "fill_mask": 0,
         "p": 0.5},
        "random elastic displacement fields have no catalog operator",
        "water (sinusoidal displacement)"),
    unsupported(LIB, "RandomGamma", ("gamma_limit", "p"), {"gamma_limit": (80, 120), "p": 0.5},
                "no catalog step applies a gamma curve", "brightness"),
    unsupported(LIB, "ChannelShuffle", ("p",), {"p": 0.5}, "no catalog step permutes channels",
                "color_space_conversion (BGR)"),
    unsupported(LIB, "RGBShift", ("r_shift_limit", "g_shift_limit", "b_shift_limit", "p"),
                {"r_shift_limit": (-20, 20), "g_shift_limit": (-20, 20),
                 "b_shift_limit": (-20, 20), "p": 0.5},
                "no catalog step shifts channels independently", "color_twist"),
    unsupported(LIB, "Downscale", ("scale_range", "interpolation_pair", "p"),
                {"scale_range": (0.25, 0.25),
                 "interpolation_pair": {"upscale": 0, "downscale": 0}, "p": 0.5},
                "down- and up-scaling back in one step has no catalog operator",
                "jpeg_compression_distortion"),
    unsupported(LIB, "ChannelDropout", ("channel_drop_range", "fill", "p"),
                {"channel_drop_range": (1, 1), "fill": 0, "p": 0.5},
                "no catalog step drops a channel", "color_twist (saturation)"),
]
RULES = [accepting_legacy(rule) for rule in _RULES]
"""Every rule reads always_apply as Albumentations 2 does (ignored, with a note)."""
