"""Validation of the output tail (resize, crop, normalisation, layout, dtype).

Besides each field on its own, the checks here catch tails that are valid field by field but
fail later or not as meant: a crop larger than the resize (the tail pads an image smaller than
its crop, as torchvision's ``CenterCrop`` does, so every image would get a black border) and a
normalisation whose values overflow the output dtype (``inf`` tensors in training). Each
message names ``output``, the field, the value and what is allowed.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .preset_document import quote
from .preset_types import Output

OUTPUT_KEYS = {"resize_shorter", "crop", "mean", "std", "layout", "dtype", "mirror_probability"}
LAYOUTS = ("CHW", "HWC")
DTYPES = ("float32", "float16", "uint8")
DTYPE_MAX = {"float32": float(np.finfo(np.float32).max), "float16": float(np.finfo(np.float16).max)}
"""Largest finite value of each float output dtype (uint8 saturates; DALI clamps it)."""
SIZE_RANGE = (8, 4096)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def validate_output(raw: Any, problems: list[str]) -> Output | None:
    """The checked Output (None when absent); problems are appended to ``problems``."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(f"output: expected an object or null, got {quote(raw)}")
        return None
    for key in sorted(set(raw) - OUTPUT_KEYS):
        problems.append(f"output: unknown key {quote(key)} "
                        f"(allowed: {', '.join(sorted(OUTPUT_KEYS))})")
    out = Output()
    n_before = len(problems)
    lo, hi = SIZE_RANGE
    rs = raw.get("resize_shorter")
    if rs is not None:
        if not _is_num(rs) or not lo <= rs <= hi:
            problems.append(f"output: resize_shorter {quote(rs)} is not allowed; expected "
                            f"[{lo}, {hi}] px")
        else:
            out.resize_shorter = float(rs)
    crop = raw.get("crop")
    if crop is not None:
        if (not isinstance(crop, list) or len(crop) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi
                           for v in crop)):
            problems.append(f"output: crop {quote(crop)} is not allowed; expected "
                            f"[height, width], integers in [{lo}, {hi}]")
        else:
            out.crop = (crop[0], crop[1])
    for key in ("mean", "std"):
        v = raw.get(key)
        if v is None:
            continue
        ok = (isinstance(v, list) and len(v) in (1, 3)
              and all(_is_num(x) and math.isfinite(x) for x in v))
        if ok and key == "std" and not all(x > 0 for x in v):
            ok = False
        if ok and key == "mean" and not all(-1e4 < x < 1e4 for x in v):
            ok = False
        if not ok:
            problems.append(f"output: {key} {quote(v)} is not allowed; expected 1 or 3 finite "
                            f"numbers{' > 0' if key == 'std' else ''} (fractions of 255)")
        else:
            setattr(out, key, tuple(float(x) for x in v))
    layout = raw.get("layout", "CHW")
    if layout not in LAYOUTS:
        problems.append(f"output: layout {quote(layout)} is not allowed; expected one of "
                        f"{LAYOUTS}")
    else:
        out.layout = layout
    dtype = raw.get("dtype", "float32")
    if dtype not in DTYPES:
        problems.append(f"output: dtype {quote(dtype)} is not allowed; expected one of {DTYPES}")
    else:
        out.dtype = dtype
    mp = raw.get("mirror_probability", 0.0)
    if not _is_num(mp) or not math.isfinite(mp) or not 0 <= mp <= 1:
        problems.append(f"output: mirror_probability {quote(mp)} is not allowed; "
                        "expected [0, 1]")
    else:
        out.mirror_probability = float(mp)
    if len(problems) == n_before:  # fields fine one by one: check how they combine
        check_combination(out, problems)
    return out


def check_combination(out: Output, problems: list[str]) -> None:
    """Crop within the resize; normalised values within the output dtype."""
    if out.crop is not None and out.resize_shorter is not None:
        fits = math.floor(out.resize_shorter)
        if max(out.crop) > fits:
            problems.append(
                f"output: crop {list(out.crop)} is not allowed with resize_shorter "
                f"{out.resize_shorter:g}; the resized image's shorter side is {fits} px, so "
                f"the crop's height and width must be at most {fits} (or resize to at least "
                f"{max(out.crop)})")
    if out.mean is None and out.std is None:
        return
    # crop_mirror_normalize computes (x - mean*255) / (std*255) for pixels x in [0, 255]
    mean = np.array(out.mean or (0.0,), np.float64) * 255  # 1 or 3 values each: they
    std = np.array(out.std or (1 / 255,), np.float64) * 255  # broadcast or pair up
    if out.dtype == "uint8":
        _check_uint8(out, mean, std, problems)
        return
    limit = DTYPE_MAX[out.dtype]
    with np.errstate(over="ignore", divide="ignore"):
        reach = float(np.max(np.maximum(np.abs(mean), np.abs(255 - mean)) / std))
    if not reach <= limit:
        field = "std" if out.std is not None else "mean"
        value = list(out.std if out.std is not None else out.mean or ())
        problems.append(
            f"output: {field} {quote(value)} is not allowed with mean "
            f"{quote(list(out.mean or (0.0,)))} and dtype {out.dtype!r}; normalised values "
            f"reach {reach:.3g}, beyond the {out.dtype} maximum {limit:.6g}; allowed: "
            f"max(|mean|, |1 - mean|) / std at most {limit:.6g} (use a larger std or a wider "
            "dtype)")


def _check_uint8(out: Output, mean: np.ndarray, std: np.ndarray, problems: list[str]) -> None:
    """A uint8 output keeps whole numbers 0..255 (DALI rounds and saturates the rest), so a
    normalisation is lost in it: ImageNet's mean and std give -2.1..2.6, a black image with a
    few 1s and 2s. Only a mean and std that leave 0..255 as it is (0 and 1/255) pass;
    ``mean`` and ``std`` are DALI's (times 255)."""
    if np.allclose(mean, 0) and np.allclose(std, 1):
        return
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        low = float(np.min((0 - mean) / std))
        high = float(np.max((255 - mean) / std))
    problems.append(
        f"output: mean {quote(list(out.mean or (0.0,)))} and std "
        f"{quote(list(out.std or (1 / 255,)))} are not allowed with dtype 'uint8'; normalised "
        f"values span {low:.3g} to {high:.3g}, and uint8 keeps whole numbers 0 to 255 (DALI "
        "rounds and saturates); allowed: a float32 or float16 dtype, or no mean and std")


def black_fill(out: Output) -> str:
    """The tail's ``fill_values`` as code: a black pixel normalised, per channel.
    ``crop_mirror_normalize`` pads an image smaller than the crop with ``fill_values`` in
    the output's units (default 0: the mean colour); torchvision's ``CenterCrop`` pads
    black before ``Normalize``, and so does the catalog's crop, so the tail pads the
    normalised black: -mean / std (-mean * 255 without a std, as DALI's std is 1)."""
    mean = out.mean or (0.0,)
    n = max(len(mean), len(out.std or ()))
    values = [repr(-mean[i % len(mean)]) + (f" / {out.std[i % len(out.std)]!r}" if out.std
                                              else " * 255") for i in range(n)]
    return "[" + ", ".join(values) + "]"
