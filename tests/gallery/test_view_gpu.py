"""The gallery and the app on the GPU (run on the lent H100/H200 with ``pytest -m gpu``; skipped
elsewhere): every operator gets a rendered row, the GPU-only ones included, and the app says
which device renders."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.gallery.app import App
from dali_gallery.gallery.bench import bench_images
from dali_gallery.gallery.view import GalleryView
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.device import gpu_count
from tests.support import GPU_ONLY_OPS, SAMPLES

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(300),
              pytest.mark.skipif(gpu_count() == 0, reason="needs a GPU that DALI can see")]


def test_every_operator_renders_on_the_gpu():
    view = GalleryView(device="gpu", size=256, max_images=4)
    try:
        view.set_arrays(bench_images(256, 4))
        assert view.wait_idle(240), view.status.value
        assert set(view.results) == set(CATALOG)
        failed = {op: r.error or r.unavailable for op, r in view.results.items() if not r.ok}
        assert failed == {}
        assert GPU_ONLY_OPS, "the catalog should have GPU-only operators"
        for op in GPU_ONLY_OPS:
            result = view.results[op]
            columns = [c[0] for c in result.tiles]
            assert len(columns) == len(result.plan.columns)
            if result.plan.mode == "sweep":
                assert not np.array_equal(columns[0], columns[-1]), f"{op}: sweep has no effect"
        assert view.row("jitter") is not None and len(view.row("jitter").images) > 1
        print(f"\ngpu gallery: {len(view.results)} operators, first row "
              f"{view.stats.get('first_row_s')} s, all {view.stats.get('total_s')} s")
    finally:
        view.close()


def test_app_says_it_renders_on_the_gpu():
    app = App(images=SAMPLES, device="auto")
    try:
        assert app.device == "gpu"
        assert "GPU" in app.widget.children[0].value
        assert app.wait_idle(240)
        assert app.gallery.results["experimental.median_blur"].ok
    finally:
        app.close()
