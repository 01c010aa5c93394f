"""The live preview: renders on a worker thread, shows tiles, inspects them, renders thumbnails.

It owns the engine side (:class:`PreviewRenderer`), the :class:`Scheduler` and the preview
widgets; the builder tells it when the pipeline changed (``request``) and learns about render
errors through ``on_errors(step, message)`` so it can show them on the step's card. Results and
errors arrive on the worker thread: in a kernel they are applied on its main thread
(:mod:`widgets.ui_thread`), and always under the builder's UI lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.custom_budget import NOTICE_SECONDS, estimate
from dali_gallery.pipelines.engine import MAX_BATCH, StepError
from dali_gallery.pipelines.images import ImageProblem
from dali_gallery.pipelines.preset import Preset

from . import style
from .images_panel import ImageSource
from .inspector import StepReport
from .picker import Picker
from .preview import MAX_DRAWS, SIZES, PreviewGrid
from .render import PreviewRenderer, RenderRequest, RenderResult
from .scheduler import Outcome, Scheduler
from .thumbnails import Thumbnails
from .ui_thread import UI

log = logging.getLogger(__name__)
SIZE_VALUES = tuple(v for _, v in SIZES)
MAX_IMAGES = MAX_BATCH // MAX_DRAWS
"""Most images (rows) a preview may show: at any number of draws they fit in one render."""
ErrorSink = Callable[[int | None, str | None], None]
"""``(step, message)``: show ``message`` on step ``step``; ``(None, None)`` clears all."""


def check_size(size: int) -> int:
    if size not in SIZE_VALUES:
        raise ValueError(f"size {size!r} is not allowed; expected one of {SIZE_VALUES}")
    return size


def check_count(field: str, value: int, lo: int, hi: int) -> int:
    """``value`` when it is a whole number in [lo, hi]; else a ValueError naming the field."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{field} {value!r} is not allowed; expected a whole number from {lo} "
                         f"to {hi}")
    return value


class LivePreview:
    """Preview grid + inspector + status line, fed by renders of the current preset."""

    def __init__(self, *, device: str, catalog: Catalog = CATALOG, draws: int,
                 max_images: int, size: int, seed: int, sync: bool, thumbnails: bool,
                 picker: Picker, current: Callable[[], Preset],
                 on_seed: Callable[[str, Any], None], on_errors: ErrorSink,
                 on_idle: Callable[[], None], lock: threading.RLock) -> None:
        self.max_images = check_count("max_images", max_images, 1, MAX_IMAGES)
        self.draws = check_count("draws", draws, 1, MAX_DRAWS)
        self.count = self.max_images
        self.size = check_size(size)
        self.catalog = catalog
        self.renderer = PreviewRenderer(device, catalog)
        self.engine = self.renderer.engine
        self.device = self.engine.device
        self.source: ImageSource | None = None
        self.tail = False  # render through the preset's training output ("show training output")
        self.picker = picker
        self._current = current
        self._on_seed = on_seed
        self._on_errors = on_errors
        self._on_idle_hook = on_idle
        self._ui = lock
        self._error_version = 0
        self._shown_originals: tuple[int, int, bool] | None = None
        self._thumbs_queued: set[str] = set()
        self.last_result: RenderResult | None = None
        self.last_error: Exception | None = None
        self.thumbnail_errors: dict[str, str] = {}
        self.status = style.classed(w.HTML(), style.STATUS)
        self.grid = PreviewGrid(draws=self.draws, count=self.count, max_images=self.max_images,
                                size=self.size, seed=seed, on_settings=self._on_setting,
                                on_inspect=self.inspect)
        self.inspector = self.grid.inspector  # placed by the grid under the clicked tile's row
        self.widget = w.VBox([self.grid.widget],
                             layout=w.Layout(flex="1 1 auto", overflow="auto"))
        self.thumbnails = Thumbnails(self.device, catalog) if thumbnails else None
        self.scheduler: Scheduler[RenderRequest, RenderResult] = Scheduler(
            self.renderer.render, self._deliver, on_idle=self._on_idle, on_error=self._bug,
            sync=sync, ui=UI)

    # ---- requests -----------------------------------------------------------------------------

    def request(self) -> None:
        """Render the current preset (supersedes any request not started yet)."""
        if self.renderer.count == 0:
            self.status.value = ("no images loaded: use the bundled samples, a folder or "
                                 "uploads (Images tab)")
            return
        preset, count = self._current(), min(self.count, self.renderer.count)
        self._note_slow(preset, count)
        self.scheduler.submit(RenderRequest(preset, self.draws, count, self.renderer.version,
                                            self.tail and preset.output is not None,
                                            self.renderer.overlay))

    def _note_slow(self, preset: Preset, count: int) -> None:
        """A render whose Python operators take a while says so first: the tiles change only
        when it is done (the estimate is the one the engine checks against its budget)."""
        sizes = [a.shape[:2] for a in self.engine.images[:count]]
        times = estimate(preset, sizes, self.draws, catalog=self.catalog)
        total = sum(t.seconds for t in times)
        if total >= NOTICE_SECONDS:
            slow = max(times, key=lambda t: t.seconds)
            self.status.value = (f"rendering&hellip; step {slow.step} ({slow.op}) runs Python "
                                 f"for about {total:.1f} s")

    def load(self, source: ImageSource) -> tuple[list[ImageProblem], bool]:
        """Load images; returns the problems and whether the images were replaced (they are
        kept when no file is usable)."""
        before = self.renderer.version
        problems = list(source.problems) + self.renderer.load(
            source.items, root=source.root, max_side=self.size or None,
            max_files=max(4 * self.max_images, 24))
        replaced = self.renderer.version != before
        if replaced:
            self.source = source
            self._images_changed()
        return problems, replaced

    def set_view(self, draws: int | None = None, count: int | None = None) -> None:
        draws = self.draws if draws is None else check_count("draws", draws, 1, MAX_DRAWS)
        count = self.count if count is None else check_count("count", count, 1, self.max_images)
        self.draws, self.count = draws, count
        self.grid.set_values(draws=self.draws, count=(self.count, self._available()))
        self.request()

    def set_size(self, size: int) -> list[ImageProblem]:
        self.size = check_size(size)
        self.grid.set_values(size=size)
        problems = self.renderer.reload(size or None)
        self._images_changed()
        return problems

    def cli_args(self) -> list[str]:
        """``--images ... --draws ... --batch-size ... --device ... [--size ...]``."""
        path = self.source.cli_path if self.source is not None else None
        n = min(self.count, self.renderer.count) or self.count
        args = ["--images", path or "FOLDER_WITH_THE_SAME_IMAGES", "--draws", str(self.draws),
                "--batch-size", str(n), "--device", self.device]
        tail = ["--tail"] if self.tail and self._current().output is not None else []
        return args + (["--size", str(self.size)] if self.size else []) + tail

    def wait_idle(self, timeout: float = 60.0, thumbnails: bool = False) -> bool:
        return self.scheduler.wait_idle(timeout, background=thumbnails)

    def tile_bytes(self, image: int, draw: int) -> bytes:
        return bytes(self.grid.tiles[image][draw].value)

    def inspect(self, image: int, draw: int) -> list[StepReport]:
        """Open the inspector on a tile of the render on screen."""
        result = self.last_result
        if result is None or not (image < result.shape[0] and draw < result.shape[1]):
            return []
        render, preset = result.render, result.request.preset
        record = render.record(image, draw)
        self.inspector.show(image, draw, result.names[image], preset.seed, preset, record,
                            result.originals[image], render.tile(image, draw),
                            labels=result.label_view(image, draw), catalog=self.catalog)
        return list(self.inspector.reports)

    def close(self) -> None:
        self.scheduler.close()
        self.renderer.close()
        if self.thumbnails is not None:
            self.thumbnails.close()
        self.grid.close()
        style.close_tree(self.inspector.widget)

    # ---- thumbnails ---------------------------------------------------------------------------

    def want_thumbnails(self, names: list[str]) -> None:
        """Queue thumbnails of operators just shown (picker tab or search results)."""
        if self.thumbnails is None or self.renderer.count == 0:
            return
        for name in names:
            if name not in self._thumbs_queued and self.picker.items[name].available:
                self._thumbs_queued.add(name)
                self.scheduler.background(self._thumbnail_task(name))

    def _thumbnail_task(self, op: str) -> Callable[[], None]:
        def task() -> None:
            assert self.thumbnails is not None
            try:
                data = self.thumbnails.render(op)
            except StepError as e:  # shown on the item; the other thumbnails go on
                message = str(e)
                with self._ui:
                    self.thumbnail_errors[op] = message
                UI.call(lambda: setattr(self.picker.items[op].thumb, "tooltip",
                                        f"thumbnail failed: {message}"), self._bug)
                return
            if data is not None:
                UI.call(lambda: self.picker.set_thumbnail(op, data), self._bug)
        return task

    # ---- internals ----------------------------------------------------------------------------

    def _available(self) -> int:
        return max(1, min(self.max_images, self.renderer.count))

    def _images_changed(self) -> None:
        with self._ui:
            self.inspector.hide()  # it showed a tile of images that are no longer loaded
            self.grid.set_values(count=(min(self.count, self._available()), self._available()))
        if self.thumbnails is not None:
            thumbs = self.thumbnails
            first = self.engine.images[0] if self.renderer.count else None
            self.scheduler.clear_background()
            self._thumbs_queued = set()
            self.scheduler.background(lambda: thumbs.set_image(first))
            self.want_thumbnails(self.picker.visible())
        self.request()

    def _on_setting(self, name: str, value: Any) -> None:
        if name == "size":
            self.set_size(int(value))
        elif name == "draws":
            self.set_view(draws=int(value))
        elif name == "count":
            self.set_view(count=int(value))
        else:  # seed, new_draw: pipeline edits
            self._on_seed(name, value)

    def _deliver(self, outcome: Outcome[RenderRequest, RenderResult]) -> None:
        with self._ui:
            if outcome.error is not None:
                if outcome.latest:  # a stale error is about a state the user already left
                    self._show_error(outcome.error, outcome.request, outcome.version)
                return
            result = outcome.result
            assert result is not None
            if result.shape != self.grid.shape:
                if not outcome.latest:
                    return
                self.grid.layout(*result.shape)
                self._shown_originals = None
            if self._shown_originals != result.originals_key:
                self.grid.show_originals(result.original_bytes, result.names)
                self._shown_originals = result.originals_key
            self.grid.show_tiles(result.tiles, result.captions)
            result.done_at = time.perf_counter()
            self.last_result = result
            if outcome.version > self._error_version:
                self.last_error = None
                self.grid.show_error(None)
                self._on_errors(None, None)
            r = result.render
            self.status.value = (
                f"{r.n_images}&times;{r.draws} in {r.ms:.0f} ms "
                f"(+{result.encode_ms:.0f} ms encode) &middot; "
                f"{'pipeline built' if r.built else 'no rebuild'}")

    def _show_error(self, error: Exception, request: RenderRequest, version: int) -> None:
        self.last_error = error
        self._error_version = version
        step = error.step if isinstance(error, StepError) else None
        message = (error.detail if isinstance(error, StepError) and error.detail
                   else f"{type(error).__name__}: {error}")
        steps = request.preset.steps
        if isinstance(step, int) and 0 <= step < len(steps):
            self._on_errors(step, message)
            self.grid.show_error(f"step {step} ({steps[step].op}) failed; showing the last "
                                 "good preview")
        else:
            self.grid.show_error(f"{message} (showing the last good preview)")
        self.status.value = f'<span class="{style.ERROR}">render failed</span>'

    def _on_idle(self) -> None:
        self._on_idle_hook()
        selected = self.inspector.selected
        if selected is not None:
            with self._ui:
                self.inspect(*selected)

    def _bug(self, error: Exception) -> None:
        log.error("dali-gallery preview callback failed", exc_info=error)
        self.grid.show_error(f"internal error ({type(error).__name__}: {error}); the "
                             "pipeline is safe, use undo or keep editing")
