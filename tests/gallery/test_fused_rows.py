"""The gallery renders its rows a chunk (one DALI pipeline) at a time: every row is bit for bit
what rendering it alone gives, errors and explanations included; a category filter renders
from the chunks the full gallery cached; chunks stay within their pixel bound; a chunk whose
fused render fails is rendered row by row (and says so in the log); labelled images are never
fused."""

from __future__ import annotations

import logging
import threading
import time

import numpy as np
import pytest

from dali_gallery.gallery import fused_rows
from dali_gallery.gallery.bench import bench_images
from dali_gallery.gallery.view import GalleryView
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.fused_render import FusedError
from dali_gallery.pipelines.kept_pipelines import KEPT
from dali_gallery.pipelines.label_render import SampleLabels
from dali_gallery.pipelines.pipeline_cache import PipelineCache

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def images() -> list[np.ndarray]:
    """A square and an odd-sized image (the gallery's letterboxing and odd sizes)."""
    a, b = bench_images(96, 2)
    return [a, np.ascontiguousarray(b[:77, :59])]


def gallery(images, *, fuse: bool, cache: PipelineCache, category: str = "") -> GalleryView:
    view = GalleryView(device="cpu", size=128, max_images=2,
                       engine=PreviewEngine("cpu", num_threads=2, cache=cache))
    view.fuse_rows = fuse
    view.category.value = category
    view.set_arrays(images, ["a", "b"])
    assert view.wait_idle(300), view.status.value
    return view


def assert_rows_equal(alone: dict, fused: dict) -> None:
    assert set(alone) == set(fused)
    for op, r in alone.items():
        f = fused[op]
        assert (r.error, r.unavailable, r.refused) == (f.error, f.unavailable, f.refused), op
        assert len(r.tiles) == len(f.tiles), op
        for col_a, col_f in zip(r.tiles, f.tiles, strict=True):
            for a, b in zip(col_a, col_f, strict=True):
                assert a.shape == b.shape and np.array_equal(a, b), op


def test_fused_rows_are_the_rows_rendered_alone(images, tmp_path):
    alone = gallery(images, fuse=False, cache=PipelineCache(None))
    fused = gallery(images, fuse=True, cache=PipelineCache(tmp_path))
    assert_rows_equal(alone.results, fused.results)
    chunks, failed = fused.stats["fused_chunks"]
    categories = {s.category for s in CATALOG.values()}
    assert failed == 0 and 1 <= chunks <= len(categories) + 2
    # one pipeline a chunk: far fewer than one per row, or per column
    assert fused.engine.builds < alone.engine.builds / 2
    assert fused.shown() == fused.visible and "operators in" in fused.status.value
    alone.close()
    fused.close()
    # a category filter in the same kernel takes the chunks the full gallery let go, built
    color = gallery(images, fuse=True, cache=PipelineCache(tmp_path), category="color")
    assert color.engine.builds == 0 and color.engine.kept_hits >= 1
    assert color.stats["fused_chunks"] == (1, 0)
    color.close()
    # and a new kernel (nothing kept) loads them from the cache the full gallery filled
    KEPT.clear()
    color = gallery(images, fuse=True, cache=PipelineCache(tmp_path), category="color")
    assert color.engine.builds == color.engine.cache_hits >= 1
    assert color.stats["fused_chunks"] == (1, 0)
    color.close()


def test_a_chunk_stays_within_its_pixel_bound(images, monkeypatch):
    per_column = sum(a.shape[0] * a.shape[1] for a in images)
    monkeypatch.setattr(fused_rows, "MAX_PIXELS", 5 * per_column)  # five columns a chunk
    sizes: list[int] = []
    real = PreviewEngine.render_fused

    def counted(engine, presets, **kw):
        sizes.append(len(presets))
        return real(engine, presets, **kw)

    monkeypatch.setattr(PreviewEngine, "render_fused", counted)
    view = gallery(images, fuse=True, cache=PipelineCache(None), category="geometry")
    assert sizes and max(sizes) <= 5 and sum(sizes) >= 20
    assert all(r.ok for op, r in view.results.items() if CATALOG[op].unavailable_on("cpu")
               is None)
    view.close()


def test_a_failed_chunk_is_rendered_row_by_row(images, monkeypatch, caplog):
    def broken(engine, presets, **kw):
        raise FusedError("running one pipeline of 9 chains failed: out of memory", ["x"])

    monkeypatch.setattr(PreviewEngine, "render_fused", broken)
    alone = gallery(images, fuse=False, cache=PipelineCache(None), category="blur/filter")
    with caplog.at_level(logging.WARNING, logger="dali_gallery.gallery.fused_rows"):
        fused = gallery(images, fuse=True, cache=PipelineCache(None), category="blur/filter")
    assert_rows_equal(alone.results, fused.results)
    chunks, failed = fused.stats["fused_chunks"]
    assert chunks == 0 and failed >= 1
    assert "rendering them one by one" in caplog.text and "out of memory" in caplog.text
    alone.close()
    fused.close()


def test_labelled_images_are_never_fused(images):
    eng = PreviewEngine("cpu", num_threads=2, cache=PipelineCache(None))
    eng.set_arrays(images)
    box = SampleLabels(np.array([[0.2, 0.2, 0.6, 0.7]]), np.array([1]))
    eng.set_labels([box, box])
    rows = fused_rows.RowRenderer(eng, CATALOG, ["rotate", "hue"], ["rotate", "hue"],
                                  steps=4, seed=42)
    result = rows.render(CATALOG["rotate"])
    assert result.ok and rows.fused_chunks == 0 and result.labels is not None
    eng.close()


class _Tracing:
    """The engine's side of tracing ahead, as the gallery sees it on a GPU host: every policy
    row goes to a worker, custom rows get CuPy warmed; ``busy`` holds the operators whose
    workers have not answered yet."""

    device = "cpu"

    def __init__(self) -> None:
        self.busy: set[str] = set()

    def trace_ahead(self, renders) -> int:
        return len(renders)

    def warm_custom(self, ops) -> list[str]:
        return [op for op in ops if CATALOG[op].custom]

    def tracing(self, renders) -> bool:
        return bool({p.steps[0].op for p, _ in renders} & self.busy)


def test_a_row_its_worker_still_traces_gives_its_turn_to_one_that_would_not_wait():
    eng = _Tracing()
    ops = list(CATALOG)
    rows = fused_rows.RowRenderer(eng, CATALOG, ops, ops, steps=4, seed=42)
    slow = [op for op in rows.order if CATALOG[op].conditionals]
    custom = [op for op in rows.order if CATALOG[op].custom]
    assert rows.traced_ahead == len(slow) == 3 and len(custom) == 2  # the policies' rows
    assert rows.order[-len(slow) - len(custom):] == slow + custom  # both last, as before
    eng.busy = set(slow)
    outdated = threading.Event()
    turns = rows.in_order(outdated.is_set)
    head = [next(turns) for _ in range(len(ops) - len(slow) - len(custom))]
    assert head == rows.order[:len(head)]  # nobody waits: the order as it was
    assert [next(turns), next(turns)] == custom  # every policy still tracing
    threading.Timer(0.3, eng.busy.discard, [slow[2]]).start()
    t0 = time.monotonic()
    assert next(turns) == slow[2]  # every row left waits: the first whose worker answers
    assert 0.25 < time.monotonic() - t0 < 10
    outdated.set()
    assert next(turns) == slow[0]  # an outdated job waits for nothing: the first, at once
    outdated.clear()
    eng.busy.clear()
    assert list(turns) == [slow[1]]
