"""DALI's auto_aug steps take a magnitude bin of 31: the bins that match a threshold, a bit
count or a sharpness factor of torchvision / Albumentations, and whether the match is exact."""

from __future__ import annotations

import math
from typing import Any

from .rules import IDENTICAL, Conversion, Refused, Verdict, fmt, step

BINS = 31


def posterize_bin(bits: int) -> int:
    """The magnitude bin of DALI's auto_aug posterize that keeps ``bits`` bits: its bins
    drop 1 to 4 low bits (measured), so 4 to 7 bits can be kept."""
    return round((8 - bits) * (BINS - 1) / 4)


def solarize_bin(threshold: float) -> tuple[int, float]:
    """The nearest bin of DALI's solarize (thresholds linspace(256, 0, 31)) and its threshold."""
    b = min(BINS - 1, max(0, round((256 - threshold) * (BINS - 1) / 256)))
    return b, 256 - 256 * b / (BINS - 1)


def solarize_verdict(threshold: float, t: float) -> Verdict:
    if math.ceil(threshold) == math.ceil(t):
        return IDENTICAL
    lo, hi = sorted((math.ceil(threshold), math.ceil(t)))
    return Verdict("different", reason=f"threshold {fmt(threshold)} becomes {fmt(t)}, the "
                   f"nearest of DALI's 31 magnitude bins: pixels in [{lo}, {hi}) differ")


def posterize_convert(bits: Any, p: float) -> Conversion:
    if not isinstance(bits, int) or isinstance(bits, bool) or not 0 <= bits <= 8:
        raise Refused(f"bits {bits!r} must be an integer in [0, 8]")
    if bits >= 8:
        return Conversion(notes=["posterize to 8 bits changes nothing"])
    if not 4 <= bits <= 7:
        raise Refused(f"bits={bits}: DALI's posterize keeps 4 to 7 bits (it drops 1 to 4)",
                      nearest="bits=4")
    return Conversion([step("auto_aug.posterize", p, magnitude_bin=posterize_bin(bits))])


def sharpness_convert(factor: float, p: float) -> Conversion:
    if factor == 1:
        return Conversion(notes=["sharpness factor 1 changes nothing"])
    if not 1 < factor <= 1.9:
        raise Refused(f"sharpness factor {factor:g}: DALI's sharpness step sharpens by 1 to "
                      "1.9 (or by a random sign); a fixed factor outside has no step",
                      nearest="filter (kernel sharpen)" if factor > 1 else "gaussian_blur")
    b = round((factor - 1) / 0.9 * (BINS - 1))
    got = 1 + 0.9 * b / (BINS - 1)
    conv = Conversion([step("auto_aug.sharpness", p, magnitude_bin=b, random_sign=False)])
    if abs(got - factor) > 1e-6:
        conv.verdict = Verdict("different", reason=f"factor {fmt(factor)} becomes {got:.3f}, "
                               "the nearest of DALI's 31 magnitude bins")
    return conv


def posterize_bits(magnitude_bin: int) -> int:
    """Bits DALI's posterize keeps at a magnitude bin (the inverse of :func:`posterize_bin`)."""
    return 8 - round(magnitude_bin * 4 / (BINS - 1))


def solarize_threshold(magnitude_bin: int) -> float:
    return 256 - 256 * magnitude_bin / (BINS - 1)
