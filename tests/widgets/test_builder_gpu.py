"""The builder on the GPU (run on the lent H100/H200 with ``pytest -m gpu``; skipped elsewhere):
GPU-only operators become available, run-time sliders never rebuild, and the preview's draw 0
is the exported GPU pipeline's first batch."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.pipelines.device import gpu_count
from dali_gallery.widgets.bench import bench_widget
from tests.support import SAMPLES, first_batch, preset_dict
from tests.widgets.conftest import make_builder, settle

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(gpu_count() == 0, reason="needs a GPU that DALI can see")]


def test_builder_on_the_gpu(tmp_path):
    b = make_builder(device="gpu", size=0, max_images=6, draws=2, preset=preset_dict([
        {"op": "rotate", "params": {"angle": {"uniform": [-20, 20]}}},
        {"op": "hsv", "probability": 0.5, "params": {"hue": 30.0}}], seed=11))
    try:
        settle(b)
        assert b.device == "gpu" and b.last_error is None
        assert b.picker.items["experimental.median_blur"].available
        b.picker.items["experimental.median_blur"].add.click()
        settle(b)
        assert b.last_error is None
        builds = b.engine.builds
        tiles = [(i, d) for i in range(b.preview.shape[0]) for d in range(2)]
        before = [b.tile_bytes(i, d) for i, d in tiles]
        b.cards[1].controls["hue"].fixed.value = 90.0
        settle(b)
        assert b.engine.builds == builds
        assert [b.tile_bytes(i, d) for i, d in tiles] != before
        n = b.preview.shape[0]
        batch = first_batch(b.preset, SAMPLES, n, tmp_path, device_id=0)
        for i in range(n):
            np.testing.assert_array_equal(batch[i], b.last_result.render.tile(i, 0))
    finally:
        b.close()


def test_widget_latency_on_the_gpu():
    r = bench_widget("gpu", quick=False)
    print("widget bench (gpu):", r)
    assert r["builds_during_drag"] == 0
    assert r["ratio_vs_engine_plus_encode"] < 2.0
