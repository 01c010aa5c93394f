"""Summaries of timings for the benches: the median and the 95th percentile, defined once."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def p95(values: Sequence[float]) -> float:
    """The 95th percentile (nearest rank: the value 95 % of the samples do not exceed)."""
    s = sorted(values)
    return s[min(len(s) - 1, int(0.95 * len(s)))]


def median_ms(seconds: Sequence[float], digits: int = 2) -> float:
    """The median of durations in seconds, in milliseconds."""
    return round(statistics.median(seconds) * 1000, digits)


def p95_ms(seconds: Sequence[float], digits: int = 2) -> float:
    """The 95th percentile of durations in seconds, in milliseconds."""
    return round(p95(seconds) * 1000, digits)
