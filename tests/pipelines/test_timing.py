"""The benches' one definition of the median and the 95th percentile."""

from __future__ import annotations

from dali_gallery.pipelines.timing import calls_median_ms, median_ms, p95, p95_ms


def test_p95_is_the_nearest_rank():
    assert p95(range(1, 101)) == 96  # 95 of the 100 samples lie below it
    assert p95([3.0]) == 3.0
    assert p95([5, 1, 4, 2, 3]) == 5


def test_milliseconds_from_seconds():
    assert median_ms([0.001, 0.003, 0.002]) == 2.0
    assert p95_ms([0.0101] * 19 + [0.5]) == 500.0
    assert median_ms([0.0012345], digits=1) == 1.2


def test_calls_median_ms_times_each_of_n_calls():
    calls = []
    ms = calls_median_ms(lambda: calls.append(1), n=7)
    assert len(calls) == 7 and isinstance(ms, float) and ms >= 0.0
