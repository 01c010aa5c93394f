"""The widget latency benchmark (``dali-gallery bench``'s widget section) runs and is sane."""

from __future__ import annotations

from dali_gallery.widgets.bench import bench_widget


def test_bench_widget_quick():
    r = bench_widget("cpu", quick=True)
    assert r["builds_during_drag"] == 0  # a run-time slider never rebuilds
    assert r["renders"] == 10
    for key in ("slider_to_bytes_ms", "engine_render_ms", "encode_ms"):
        assert r[key] > 0
    # the target is 1.2x; a loose bound here only catches gross regressions on a busy machine
    assert r["ratio_vs_engine_plus_encode"] < 2.0, r
