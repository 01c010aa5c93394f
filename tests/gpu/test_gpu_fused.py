"""Fused renders on the GPU (the lent H100/H200, ``pytest -m gpu``; skipped elsewhere): every
gallery column that can be fused, GPU-only operators included, is bit for bit what the engine
renders alone, from a traced and from a cached fused pipeline; the GPU gallery fused is the
gallery rendered row by row."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.gallery.bench import bench_images
from dali_gallery.gallery.view import GalleryView
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.device import gpu_count
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from tests.gallery.test_fused_rows import assert_rows_equal
from tests.pipelines.test_fused_render import assert_same, gallery_columns
from tests.support import GPU_ONLY_OPS, sample_arrays

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(600),
              pytest.mark.skipif(gpu_count() == 0, reason="needs a GPU that DALI can see")]


def test_every_fusible_column_renders_on_the_gpu_as_it_does_alone(tmp_path):
    a, b = sample_arrays(2, max_side=160)
    photos = [a, b, np.ascontiguousarray(a[3:101, 7:88])]
    eng = PreviewEngine("gpu", cache=PipelineCache(tmp_path))
    eng.set_arrays(photos)
    presets = [p for p in gallery_columns("gpu") if eng.fusible(p)]
    assert set(GPU_ONLY_OPS) <= {p.steps[0].op for p in presets}
    fused = eng.render_fused(presets)
    for preset, got in zip(presets, fused, strict=True):
        assert_same(eng.render(preset), got)
    loaded = PreviewEngine("gpu", cache=PipelineCache(tmp_path))
    loaded.set_arrays(photos)
    from_cache = loaded.render_fused(presets)
    assert loaded.cache_hits == 1
    for x, y in zip(fused, from_cache, strict=True):
        assert_same(x, y)
    eng.close()
    loaded.close()


def test_the_gpu_gallery_fused_is_the_gallery_rendered_row_by_row(tmp_path):
    images = bench_images(256, 4)
    images[2] = np.ascontiguousarray(images[2][:201, :147])
    views = {}
    for fuse in (False, True):
        view = GalleryView(device="gpu", size=256, max_images=4,
                           engine=PreviewEngine("gpu", cache=PipelineCache(tmp_path / str(fuse))))
        view.fuse_rows = fuse
        view.set_arrays(images)
        assert view.wait_idle(300), view.status.value
        views[fuse] = view
        print(f"\ngpu gallery fuse={fuse}: {view.stats.get('total_s')} s, "
              f"chunks {view.stats.get('fused_chunks')}, builds {view.engine.builds}")
    assert set(views[True].results) == set(CATALOG)
    assert_rows_equal(views[False].results, views[True].results)
    assert views[True].stats["fused_chunks"][1] == 0
    for view in views.values():
        view.close()
