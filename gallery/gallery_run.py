"""One full gallery render in a new view and engine, timed: the gallery benches' unit (in the
bench's process, :mod:`.gallery_bench`, and in a fresh one, :mod:`.fresh_bench`)."""

from __future__ import annotations

import statistics
import time
from typing import Any

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.timing import p95


def render_gallery(device: str, images: list, cache: PipelineCache) -> dict[str, Any]:
    """One full gallery render in a new view and engine (which takes the pipelines an earlier
    engine of the process let go, kept built: :mod:`pipelines.kept_pipelines`)."""
    from .view import GalleryView

    engine = PreviewEngine(device, cache=cache)
    view = GalleryView(device=device, size=256, max_images=4, engine=engine)
    t0 = time.perf_counter()
    view.set_arrays(images)
    if not view.wait_idle(600):
        view.close()
        return {"error": "the gallery did not finish within 600 s"}
    wall = time.perf_counter() - t0
    results = dict(view.results)
    stats = dict(view.stats)
    hits, builds, renders = engine.cache_hits, engine.builds, engine.renders
    kept = engine.kept_hits
    view.close()
    rendered = {op: r for op, r in results.items() if r.ok}
    row_ms = [r.ms for r in rendered.values()]
    slowest = sorted(rendered.values(), key=lambda r: r.ms, reverse=True)[:3]
    return {
        "operators_rendered": len(rendered),
        "tiles": sum(len(col) for r in rendered.values() for col in r.tiles),
        "unavailable_here": sorted(op for op, r in results.items() if r.unavailable),
        "failed": sorted(op for op, r in results.items() if r.error),
        "first_row_s": stats.get("first_row_s"),
        "total_s": round(wall, 2),
        "dali_rows_s": round(sum(row_ms) / 1000, 2),
        "pipelines_built": builds,
        "pipelines_from_cache": hits,
        "pipelines_kept_built": kept,
        "dali_renders": renders,
        "row_median_ms": round(statistics.median(row_ms), 1) if row_ms else None,
        "row_p95_ms": round(p95(row_ms), 1) if row_ms else None,
        "slowest_rows_ms": {r.op: round(r.ms, 1) for r in slowest},
    }
