"""The gallery and the app on the GPU (run on the lent H100/H200 with ``pytest -m gpu``; skipped
elsewhere): every operator gets a rendered row, the GPU-only ones included, and the app says
which device renders."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

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


def test_gallery_strips_on_the_gpu_are_the_same_pictures_encoded_by_nvimagecodec(monkeypatch):
    """A GPU gallery encodes its strips as one nvImageCodec batch a card; decoded, they are
    the pictures Pillow encodes (JPEG's tolerance), letterboxed the same way."""
    from dali_gallery.gallery import row as row_mod
    from dali_gallery.gallery.sweep import RowResult, plan_row

    calls: list[int] = []
    real = row_mod.encode_jpegs_gpu

    def counted(arrays, quality):
        calls.append(len(arrays))
        return real(arrays, quality)

    monkeypatch.setattr(row_mod, "encode_jpegs_gpu", counted)
    ramp = np.linspace(0, 255, 200, dtype=np.float32)
    wide = np.stack([np.tile(ramp, (100, 1))] * 3, axis=2).astype(np.uint8)
    tall = np.ascontiguousarray(np.transpose(wide, (1, 0, 2)))
    result = RowResult(plan_row(CATALOG["brightness"]), [[wide, tall]] * 3)
    px = row_mod.tile_px(256)
    gpu = row_mod.row_strips(result, [wide, tall], px, gpu=True)
    cpu = row_mod.row_strips(result, [wide.copy(), tall.copy()], px)  # other originals
    assert calls == [4] and len(gpu.jpegs) == len(cpu.jpegs) == 4
    assert gpu.jpegs != cpu.jpegs  # another encoder made them
    for a, b in zip(gpu.jpegs, cpu.jpegs, strict=True):
        da, db = (np.asarray(Image.open(io.BytesIO(x)).convert("RGB"), np.int16) for x in (a, b))
        assert da.shape == db.shape == (2 * 200 + row_mod.GAP_PX, 200, 3)
        assert np.abs(da - db).mean() < 2 and np.abs(da - db).max() < 40
