"""Summaries of timings for the benches: the median and the 95th percentile, defined once."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any


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


def calls_median_ms(run: Callable[[], Any], n: int = 40) -> float:
    """The median time of ``n`` calls of ``run``, in milliseconds (not rounded)."""
    times = []
    for _ in range(n):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000
