"""The gallery tab: every catalog operator rendered live by DALI on the current images.

One card per operator (:mod:`gallery.row`): the originals, then the operator at several magnitudes
or choices (:mod:`gallery.sweep`), each column labelled with its value and an "add" button; size
sets how large tiles are shown; a click on a tile opens it large in its card beside the original.
Rows render on the render scheduler (:mod:`widgets.scheduler`: one job at a time, the newest
wins), stream in with a progress bar, get their cards on a cards thread (:mod:`.card_queue`), and
mostly render a category per DALI pipeline (:mod:`.fused_rows`); a worker started with the view
traces the policies (:func:`pipelines.trace_ahead.prestart`). Each change of images, size or
filter starts a new generation, and an older one's job stops at its next row. Cards stay valid
across filter changes (only images and size invalidate them). Widget changes made for the worker
run on the kernel's main thread (:mod:`widgets.ui_thread`). With labels (:meth:`set_labels`,
:mod:`.view_labels`) every row moves them with its pixels and draws them.
"""

from __future__ import annotations

import html
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dali_gallery.pipelines.catalog import CATALOG, Catalog, OpSpec
from dali_gallery.pipelines.device import describe
from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.images import PREVIEW_SIZES, EncodedImage, ImageProblem, collect
from dali_gallery.pipelines.labels import DEFAULT_MIN_KEPT
from dali_gallery.pipelines.preset import PresetError
from dali_gallery.pipelines.trace_ahead import prestart
from dali_gallery.widgets.kernel_messages import keep_widget_messages
from dali_gallery.widgets.label_source import LabelSource
from dali_gallery.widgets.scheduler import Outcome, Scheduler
from dali_gallery.widgets.style import ERROR, close_tree
from dali_gallery.widgets.ui_thread import UI, on_ui_thread

from .card_queue import CardQueue
from .fused_rows import RowRenderer
from .gallery_images import decode_first, encode_arrays, problem_text
from .row import CardZoom, Row, Strips, card_px, row_strips, slug, tile_px
from .sweep import STEPS, RowResult, gallery_ops
from .view_labels import GalleryLabels, LabelRequest, LabelState
from .view_layout import build_controls, summary

__all__ = ["GalleryView", "SIZES", "slug"]

SIZES = PREVIEW_SIZES
MAX_IMAGES = 16
_log = logging.getLogger(__name__)

AddHandler = Callable[[str, dict[str, Any]], None]
Key = tuple[int, int, int, int]
"""(image set version, size, labels version, drawing): the cards' validity (renders: 3 first)."""


@dataclass
class _Job:
    gen: int
    ops: list[str]
    images: list[EncodedImage]
    key: Key
    labels: LabelRequest | None = None


class GalleryView:
    """Every catalog operator at several magnitudes on the current images, rendered by DALI.

    ``images``: what :func:`pipelines.images.collect` takes (folder, paths, uploads) or None;
    ``allowed_root`` confines paths. ``on_add(op, params)`` handlers run on an "add" click.
    For tests and benches: ``results`` (op -> RowResult), ``stats``, ``wait_idle``, ``row``.
    """

    def __init__(self, images: Any = None, *, device: str = "auto",
                 allowed_root: str | Path | None = None, size: int = 256, max_images: int = 4,
                 steps: int = STEPS, seed: int = 42, engine: PreviewEngine | None = None,
                 catalog: Catalog = CATALOG) -> None:
        if size not in SIZES:
            raise ValueError(f"gallery size {size!r} is not allowed; expected one of {SIZES}")
        if not 1 <= max_images <= MAX_IMAGES:
            raise ValueError(f"max_images {max_images!r} is not allowed; expected 1 to "
                             f"{MAX_IMAGES}")
        keep_widget_messages()  # ~1,450 widget messages within seconds
        prestart(device)  # once a process: the policies' trace worker and CuPy, warming up
        self.engine = engine or PreviewEngine(device, catalog=catalog)
        self.catalog = catalog
        self.allowed_root = Path(allowed_root).resolve() if allowed_root else None
        self.max_images = max_images
        self.steps = steps
        self.seed = seed
        self.fuse_rows = True  # rows a chunk per pipeline (:mod:`.fused_rows`); False: alone
        self.results: dict[str, RowResult] = {}
        self.problems: list[ImageProblem] = []
        self._unread: list[ImageProblem] = []  # files not read (problems: + not decoded)
        self.stats: dict[str, Any] = {}
        self._handlers: list[AddHandler] = []
        self._rows: dict[str, Row] = {}
        self._zoom = CardZoom()
        self.zoom = self._zoom.view
        self._visible: list[str] = []
        self._images: list[EncodedImage] = []
        self._version = 0
        self.images_set = False  # whether images were given (an empty set counts)
        self._loaded: tuple[int, ...] | None = None
        self.labels = GalleryLabels()
        self._specs: dict[str, OpSpec] = {}  # results' catalog entries (replaced: render again)
        self._gen, self._closed = 0, False
        self._lock = threading.RLock()
        self.scheduler: Scheduler[_Job, None] = Scheduler(
            self._run, self._delivered, on_error=self._ui_error, ui=UI,
            name="dali-gallery-gallery")
        self.cards = CardQueue()  # where cards are made; the app holds it until its page is ready
        build_controls(self, size)
        if images is not None:
            self.set_images(images)
        else:
            self._restart(new_images=True)

    # ---- public API ---------------------------------------------------------------------------

    def set_images(self, images: Any, root: str | Path | None = None) -> list[ImageProblem]:
        """Show ``images`` (folder, paths, uploads); returns the files that could not be read
        (decoding problems appear in ``problems`` and the status line once decoded)."""
        root_path = Path(root).resolve() if root else self.allowed_root
        encoded, problems = collect(images, root=root_path, max_files=self.max_images * 4)
        problems = [p for p in problems if not p.over_limit]  # it shows fewer anyway
        with self._lock:
            self._images = encoded
            self.problems, self._unread = list(problems), list(problems)
            self.images_set = True
        self._restart(new_images=True)
        return problems

    def set_arrays(self, arrays: Sequence[np.ndarray], names: Sequence[str] | None = None) -> None:
        """Show decoded HWC uint8 images (kept as PNG, decoded by DALI again: sized as files)."""
        encoded = encode_arrays(arrays, names)
        with self._lock:
            self._images = encoded
            self.problems, self._unread = [], []
            self.images_set = True
        self._restart(new_images=True)

    def set_labels(self, labels: LabelSource | None, *, show: bool = True,
                   min_kept: float = DEFAULT_MIN_KEPT) -> None:
        """Move and draw these annotations (matched to the images by file name; None: none)
        on every row: ``show`` draws them ("show labels"), ``min_kept`` is the drop threshold.
        A change of labels renders the rows again; one of ``show`` only draws them again."""
        with self._lock:
            change = self.labels.update(labels, show, min_kept)
        if change:
            self._restart(new_images=change == "labels", redraw=True)

    def set_status(self, text: str, error: bool = False) -> None:
        """A line in the status bar (e.g. why nothing renders yet)."""
        self._say(text, error)

    def on_add(self, handler: AddHandler) -> None:
        """Call ``handler(op, params)`` when an "add" button is clicked."""
        self._handlers.append(handler)

    def add(self, op: str, params: dict[str, Any], label: str = "") -> None:
        """What an "add" button does: hand the step to every handler; a refusal (too many
        steps, invalid value) is shown in the status line, naming the operator."""
        what = label or "defaults"
        try:
            for handler in self._handlers:
                handler(op, dict(params))
        except (ValueError, KeyError, StepError, PresetError) as e:
            self._say(f"could not add {op} ({what}): {e}", error=True)
            return
        self._say(f"added {op} ({what}) to the builder")

    def wait_idle(self, timeout: float = 120.0) -> bool:
        """Block until every visible row of the current generation is rendered and shown (on
        the main thread, this applies the cards the worker handed over)."""
        return self.scheduler.wait_idle(timeout)

    @property
    def visible(self) -> list[str]:
        """Operators the current filter shows, in catalog order."""
        with self._lock:
            return list(self._visible)

    def row(self, op: str) -> Row | None:
        """The card of ``op``, when it is built."""
        with self._lock:
            return self._rows.get(op)

    def shown(self) -> list[str]:
        """Operators whose cards are on the page now, in order."""
        with self._lock:
            return [op for op in self._visible if op in self._rows]

    def close(self) -> None:
        """Stop the worker and release widgets and pipelines."""
        with self._lock:
            self._closed = True
            self._gen += 1
            rows, self._rows = list(self._rows.values()), {}
        self.scheduler.close(timeout=30)
        self.cards.close()
        self._zoom.close()  # out of its card, its bytes dropped
        for row in rows:
            row.close()
        self.engine.close()
        close_tree(self.zoom.widget)  # in no card now: not under ``widget``
        close_tree(self.widget)  # the controls too (``close`` alone left their comms open)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # ---- generations (main thread) ------------------------------------------------------------

    def _restart(self, new_images: bool = False, redraw: bool = False) -> None:
        """A new generation: outdated work dropped, missing visible rows queued (``redraw``:
        every card made again, from renders still valid); the status says so at once."""
        with self._lock:
            self._gen += 1
            old: list[Row] = []
            if new_images or redraw:
                self._zoom.close()
                old, self._rows = list(self._rows.values()), {}
            if new_images:
                self._version += 1
                self.results, self._specs = {}, {}
            old += self._drop_replaced()
            self._visible = gallery_ops(self.catalog, self.category.value, self.search.value)
            # every visible card not on the page (one kept in ``results`` is not rendered again)
            missing = [op for op in self._visible if op not in self._rows]
            job = _Job(self._gen, missing, list(self._images), self._key(), self.labels.request())
            self.stats = {"generation": self._gen, "started": time.perf_counter(),
                          "rows": len(missing), "row_ms": {}}
            self._show_rows()
            self.progress.bar_style = ""
            if not self._images:
                self._say("no images to show: choose a source above"
                          + problem_text(self.problems), error=bool(self.problems))
            else:  # not the last generation's "N operators in ..." while this one waits
                self._say(f"rendering {len(missing)} of {len(self._visible)} operators")
                self.scheduler.submit(job)
        for row in old:
            row.close()

    def _drop_replaced(self) -> list[Row]:
        """Forget the renders (and take the cards) of operators whose catalog entry is not
        the one they were rendered from: registered again, or removed."""
        stale = [op for op, spec in self._specs.items() if self.catalog.get(op) is not spec]
        if self._zoom.row is not None and self._zoom.row.op in stale:
            self._zoom.close()
        for op in stale:
            del self._specs[op], self.results[op]
        return [row for op in stale if (row := self._rows.pop(op, None)) is not None]

    def _key(self) -> Key:
        return (self._version, int(self.size.value), self.labels.version, self.labels.drawn)

    def _show_rows(self) -> None:
        """Cards of the visible operators that are built, in catalog order, and the progress."""
        shown = tuple(self._rows[op].widget for op in self._visible if op in self._rows)
        self.rows_box.children = shown
        self.progress.max = max(1, len(self._visible))
        self.progress.value = len(shown)

    def _current(self, gen: int) -> bool:
        with self._lock:
            return gen == self._gen and not self._closed

    # ---- worker -------------------------------------------------------------------------------

    def _run(self, job: _Job) -> None:
        """One generation's rows (worker thread); returns early once it is outdated."""
        if self._loaded != job.key[:2]:
            t0 = time.perf_counter()
            if not self._load(job):
                return
            self.stats["decode_s"] = round(time.perf_counter() - t0, 3)
        labels = self.labels.for_job(self.engine, job.key[:3], job.labels)
        originals, names = self.engine.images, self.engine.names
        px = tile_px(job.key[1])
        device = describe(self.engine.device)
        cards: list[Future[None]] = []
        rendered = 0
        with self._lock:
            todo = [op for op in job.ops if op not in self.results]
        rows = RowRenderer(self.engine, self.catalog, job.ops, todo, steps=self.steps,
                           seed=self.seed, fuse=self.fuse_rows)
        self.stats["traced_ahead"] = rows.traced_ahead
        for k, op in enumerate(rows.in_order(lambda: not self._current(job.gen))):
            self.cards.wait_turn(k, lambda: not self._current(job.gen), card_px(px, len(originals)))
            if not self._current(job.gen):
                break
            with self._lock:
                result = self.results.get(op)  # valid for these images and labels
                spec = self._specs.get(op) if result is not None else self.catalog.get(op)
            if spec is None:  # removed from the catalog since the job started
                continue
            if result is None:
                self._say(f"rendering {op} ({k + 1}/{len(job.ops)}) on {device}")
                result = rows.render(spec)
                rendered += 1
            with self._lock:
                if job.gen != self._gen:
                    break
                self.results[op], self._specs[op] = result, spec
                self.stats["row_ms"][op] = round(result.ms, 1)
                self.stats.setdefault("first_row_s",
                                      round(self.cards.busy_s(self.stats["started"]), 3))
            # the strips are encoded and the card made while DALI renders the next rows
            cards.append(self.cards.submit(self._card, job, spec, result, originals, names,
                                           px, labels))
        for card in cards:
            card.result()  # an encoding failure is this job's: the scheduler reports it
        with self._lock:
            if job.gen != self._gen:
                return
            self.stats["total_s"] = round(self.cards.busy_s(self.stats["started"]), 3)
            self.stats.update(rendered=rendered, held_s=self.cards.waited_s(self.stats["started"]),
                              fused_chunks=(rows.fused_chunks, rows.failed_chunks))
        self.cards.finish(lambda: self._finish(job), self._ui_error)

    def _card(self, job: _Job, spec: OpSpec, result: RowResult, originals: list[np.ndarray],
              names: list[str], px: int, labels: LabelState | None) -> None:
        """Card thread (one: cards come in render order): a row's strips, then its card."""
        if not self._current(job.gen):
            return
        strips = row_strips(result, originals, px, labels, batch=self.engine.device == "gpu")
        self.cards.deliver(lambda: self._publish(job.key, spec, result, strips,
                                                 (originals, names), labels), self._ui_error)

    def _delivered(self, outcome: Outcome[_Job, None]) -> None:
        """Main thread: a job that raised is a bug; say so if its generation is current."""
        if outcome.error is None:
            return
        error = outcome.error
        _log.error("gallery render failed", exc_info=error)
        if self._current(outcome.request.gen):
            self._say(f"gallery render failed: {type(error).__name__}: {error}", error=True)

    def _publish(self, key: Key, spec: OpSpec, result: RowResult, strips: Strips,
                 images: tuple[list[np.ndarray], list[str]], labels: LabelState | None) -> None:
        """Main thread: build the card and show it if the images (and the operator's catalog
        entry) are still those it shows."""
        op = spec.name
        with self._lock:
            if (self._closed or key != self._key() or op in self._rows
                    or self.catalog.get(op) is not spec):
                return
            self._rows[op] = Row(spec, result, strips, self.add,
                                 originals=images[0], names=images[1], on_zoom=self.zoom_tile,
                                 labels=labels)
            self._show_rows()

    def zoom_tile(self, op: str, image: int, column: int) -> None:
        """Show image ``image`` of column ``column`` (0: the original) of ``op``'s card large,
        in that card, with the original beside it (what clicking the tile does)."""
        with self._lock:
            self._zoom.open(self._rows[op], image, column)

    def _finish(self, job: _Job) -> None:
        with self._lock:
            if job.gen != self._gen or self._closed:
                return
            self.progress.bar_style = "success"
            text, error = summary(self.results, self._visible, self.stats, self.catalog,
                                  (self.category.value, self.search.value),
                                  describe(self.engine.device),
                                  problem_text(self.problems))
        self._say(text, error)

    def _load(self, job: _Job) -> bool:
        """Decode the first ``max_images`` good images at the job's size (DALI, CPU)."""
        arrays, names, problems = decode_first(job.images, self.max_images, job.key[1],
                                               self.engine.num_threads)
        with self._lock:
            if job.gen != self._gen:
                return False
            self.problems = [*self._unread, *problems]  # not those of an earlier size
        if not arrays:
            self._say("none of the images could be decoded" + problem_text(self.problems),
                      error=True)
            return False
        self.engine.set_arrays(arrays, names)
        self._loaded = job.key[:2]
        self.labels.forget()  # the engine forgot them with its images
        return True

    def _ui_error(self, error: Exception) -> None:
        self.status.value = (f'<span class="{ERROR}">gallery display failed: '
                             f'{html.escape(type(error).__name__)}: {html.escape(str(error))}'
                             "</span>")

    def _say(self, text: str, error: bool = False) -> None:
        cls = ERROR if error else "dg-gallery-note"
        value = f'<span class="{cls}">{html.escape(text)}</span>'
        on_ui_thread(lambda: setattr(self.status, "value", value))
