"""The gallery's rows rendered a chunk at a time: one DALI pipeline for many operators.

Every column of a row is a one-step preset rendered once (draw 0), the same render the builder
makes after "add" (:func:`sweep.column_presets`). Rows whose columns can all be fused
(``PreviewEngine.fusible``: no conditionals, Python operators or labels) are rendered with the
rows after them in the same category, up to :data:`MAX_BRANCHES` columns and a pixel bound,
through ``PreviewEngine.render_fused``: one pipeline per chunk instead of one (or four) per
row. Chunks follow the catalog's categories, so a category filter renders the chunks the full
gallery did, from the same cached pipelines. A row that cannot be fused, and every row of a
chunk whose fused render failed (logged), is rendered alone by :func:`sweep.render_row`, which
names the failing operator and value. A fused row's ``ms`` is its columns' share of the chunk.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence

from dali_gallery.pipelines.catalog import Catalog, OpSpec
from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.preset import Preset, PresetError
from dali_gallery.pipelines.trace_ahead import WAIT_S

from .sweep import (
    RowPlan,
    RowResult,
    ahead_order,
    column_presets,
    plan_row,
    render_row,
)

MAX_BRANCHES = 64
"""Columns (branches) in one fused pipeline at most: a chunk traces in well under a second
and its rows still reach the page in a few steps."""
MAX_PIXELS = 96_000_000
"""Input pixels of a chunk (columns x images x pixels each) at most: the outputs of every
branch live together until the run ends."""
POLL_S = 0.02
"""How often a render waiting for trace-ahead workers looks which answered."""
_log = logging.getLogger(__name__)


class RowRenderer:
    """Renders the rows of one gallery job: ``ops`` (the cards to show) in ``order``
    (:func:`sweep.ahead_order`, which starts tracing the slow ones in workers: how many it
    started is ``traced_ahead``); ``todo`` are those still to render (the others are kept by
    the gallery and never asked for). ``fuse=False`` renders every row alone (the unfused path
    the tests compare with)."""

    def __init__(self, engine: PreviewEngine, catalog: Catalog, ops: Sequence[str],
                 todo: Sequence[str], *, steps: int, seed: int, fuse: bool = True) -> None:
        self.engine = engine
        self.catalog = catalog
        self.steps = steps
        self.seed = seed
        self.fuse = fuse
        self.order, self._ahead = ahead_order(engine, catalog, list(ops), list(todo), steps,
                                              seed)
        self.traced_ahead = len(self._ahead)
        pending = set(todo)
        self._order = [op for op in self.order if op in pending]
        self._done: dict[str, RowResult] = {}
        self._alone: set[str] = set()
        self.fused_chunks = 0
        self.failed_chunks = 0

    def in_order(self, stop: Callable[[], bool] = lambda: False) -> Iterator[str]:
        """``order``, except that a row whose pipelines a worker is still tracing gives its
        turn to the first row after it that would not wait (a policy traced sooner, a custom
        row); when every row left would wait, the first whose worker answers goes next. The
        workers answer in the order their traces end, not the catalog's (an H200 host's cold
        gallery waited 0.1-0.8 s for the first policy while later ones were ready).
        ``stop()`` (an outdated job) ends a wait at once."""
        left = list(self.order)
        while left:
            pick = self._next(left, stop)
            left.remove(pick)
            yield pick

    def _next(self, left: list[str], stop: Callable[[], bool]) -> str:
        deadline = time.monotonic() + WAIT_S  # then the first row's render waits (and logs)
        while (pick := next((op for op in left if not self._waits(op)), None)) is None:
            if stop() or time.monotonic() >= deadline:
                return left[0]
            time.sleep(POLL_S)
        return pick

    def _waits(self, op: str) -> bool:
        renders = self._ahead.get(op)
        return bool(renders) and self.engine.tracing(renders)

    def render(self, spec: OpSpec) -> RowResult:
        """The row of ``spec`` (rendered now, or with the chunk it belongs to)."""
        done = self._done.pop(spec.name, None)
        if done is not None:
            return done
        if self.fuse and spec.name not in self._alone:
            chunk = self._chunk(spec.name)
            if chunk:
                self._render_chunk(chunk)
                done = self._done.pop(spec.name, None)
                if done is not None:
                    return done
        return render_row(self.engine, plan_row(spec, self.steps), seed=self.seed,
                          catalog=self.catalog)

    # ---- internals ----------------------------------------------------------------------------

    def _fusible(self, spec: OpSpec) -> tuple[RowPlan, list[Preset]] | None:
        """The row's plan and column presets when every column can be fused, else None."""
        if spec.unavailable_on(self.engine.device) is not None or self.engine.labels is not None:
            return None
        plan = plan_row(spec, self.steps)
        if plan.mode == "draws":  # several draws of one preset: not one render per column
            return None
        try:  # validated once, by the engine's memo, as its render finds it
            presets = column_presets(plan, self.seed, self.catalog)
            fusible = all(map(self.engine.fusible, presets))
        except PresetError:  # rendered alone, which reports it
            return None
        return (plan, presets) if fusible else None

    def _chunk(self, first: str) -> list[tuple[RowPlan, list[Preset]]]:
        """``first``'s row and the fusible rows right after it in the same category."""
        if first not in self._order:
            return []
        start = self._order.index(first)
        category = self.catalog[first].category
        images = self.engine.images
        per_column = max(1, sum(a.shape[0] * a.shape[1] for a in images))
        limit = max(1, min(MAX_BRANCHES, MAX_PIXELS // per_column))
        chunk: list[tuple[RowPlan, list[Preset]]] = []
        columns = 0
        for op in self._order[start:]:
            spec = self.catalog.get(op)
            if spec is None or spec.category != category or op in self._done:
                break
            row = self._fusible(spec)
            if row is None:
                if op == first:
                    self._alone.add(op)
                break
            if chunk and columns + len(row[1]) > limit:
                break
            chunk.append(row)
            columns += len(row[1])
        return chunk

    def _render_chunk(self, chunk: list[tuple[RowPlan, list[Preset]]]) -> None:
        presets = [p for _, ps in chunk for p in ps]
        t0 = time.perf_counter()
        try:
            renders = self.engine.render_fused(presets)
        except (StepError, ValueError) as e:  # each row alone names its own failure
            _log.warning("gallery: rendering %s in one pipeline failed (%s: %s); rendering "
                         "them one by one", ", ".join(p.op for p, _ in chunk),
                         type(e).__name__, e)
            self.failed_chunks += 1
            self._alone.update(p.op for p, _ in chunk)
            return
        self.fused_chunks += 1
        ms = (time.perf_counter() - t0) * 1000 / max(1, len(presets))
        at = 0
        for plan, ps in chunk:
            parts = renders[at:at + len(ps)]
            at += len(ps)
            n = parts[0].n_images
            self._done[plan.op] = RowResult(plan, [[r.tile(i, 0) for i in range(n)]
                                                   for r in parts], ms * len(ps))

