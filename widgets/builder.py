"""``Builder``: the pipeline builder widget (picker, step cards, live preview, export).

One object, usable in a notebook (``Builder(images=...)`` as the last expression of a cell
shows it) and embedded by the gallery app. The pipeline lives in a :class:`ChainModel` (always
valid, undoable); widgets only propose edits. Renders run on a worker thread
(:class:`LivePreview`: one in flight, newest request wins) so sliders stay responsive; a render
error is shown on the step that caused it while the last good preview stays on screen.
"""

from __future__ import annotations

import random
import shlex
import threading
from html import escape
from pathlib import Path
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.device import resolve
from dali_gallery.pipelines.export import export_code, preset_from_source
from dali_gallery.pipelines.images import ImageProblem
from dali_gallery.pipelines.preset import (
    Preset,
    PresetError,
    cut,
    document_text,
    load,
    parse_document,
)

from . import style
from .autosave import autosave_for
from .builder_layout import build_layout
from .export_panel import slug
from .group_card import GroupCard, arrange_cards, card_key, make_card, retire
from .images_panel import SAMPLES_DIR, ImageSource, source_from
from .inspector import StepReport
from .kernel_messages import keep_widget_messages
from .labels_panel import check_annotations_arg
from .live import LivePreview, check_size
from .model import ChainModel, Change
from .picker import Picker
from .render import PreviewRenderer, RenderRequest, RenderResult
from .scheduler import Scheduler
from .shard_selector import ShardSelector
from .step_card import StepCard
from .suggest import suggested_params


class Builder:
    """Build a DALI augmentation chain with live previews and export it as training code.

    ``images``: a folder, a file, a list of paths or of (name, bytes) (default: the bundled
    samples). ``preset``: a path, JSON text, dict or Preset. ``device``: "auto", "cpu" or
    "gpu". ``allowed_root``: folders typed in the UI must lie inside it (None: any folder).
    ``size``: longest image side for the preview (0 = original size, exact export parity).
    ``autosave``: saved after edits, offered back next time: True, a per-user file per notebook
    (off in Voilà, see ``autosave.autosave_for``), a path, or None/False (off).
    ``annotations``: labels drawn over the tiles and moved with them: a COCO instances .json
    (its images in the images folder) or "yolo" (the folder's YOLO labels); ``builder.labels``
    loads others. ``sync=True`` renders in the calling thread (no worker thread)."""

    def __init__(self, images: Any = None, preset: Any = None, device: str = "auto", *,
                 allowed_root: str | Path | None = None, draws: int = 3, max_images: int = 6,
                 size: int = 256, samples: str | Path | None = SAMPLES_DIR,
                 thumbnails: bool = True, sync: bool = False,
                 autosave: str | Path | bool | None = True, catalog: Catalog = CATALOG,
                 annotations: str | Path | None = None) -> None:
        check_size(size)
        check_annotations_arg(annotations)
        keep_widget_messages()  # a chain's cards and tiles come in bursts
        start = images if images is not None else samples
        # a path that does not exist fails here, before any thread or pipeline exists
        first = source_from(start, pick=max_images) if start is not None else None
        self.catalog = catalog
        self.model = ChainModel(load(preset, catalog) if preset is not None else None, catalog)
        self.allowed_root = Path(allowed_root).resolve() if allowed_root is not None else None
        self.autosave = autosave_for(autosave)
        self.cards: list[StepCard | GroupCard] = []
        self._retired = style.Retired()  # cards taken off the page, closed later
        self.image_problems: list[ImageProblem] = []
        self._ui = threading.RLock()
        self._code: tuple[str, str] = ("", "")
        self._export_dirty, self._export_key = True, ()  # the Export tab's made from the key
        self._restorable: Preset | None = None
        self.picker = Picker(resolve(device), self._add_from_picker, catalog,
                             on_visible=lambda names: self.live.want_thumbnails(names))
        self.shards = ShardSelector(lambda *_: self._on_view_change())
        self.live = LivePreview(
            device=device, catalog=catalog, draws=draws, max_images=max_images, size=size,
            seed=self.model.preset.seed, sync=sync, thumbnails=thumbnails, picker=self.picker,
            current=lambda: self.shards.preset_for(self.model.preset), on_seed=self._on_seed,
            on_errors=self._show_step_error, on_idle=self._on_idle, lock=self._ui)
        self.engine = self.live.engine
        self.device = self.live.device
        self.preview = self.live.grid
        self.inspector = self.live.inspector
        self.status = self.live.status
        self._build_widgets(samples)
        self._offer_restore()
        self.model.listen(self._on_change)
        self._sync_cards()
        if first is not None:
            self._load_source(first)
        if annotations is not None:
            try:
                self.labels.load(annotations)
            except BaseException:
                self.close()
                raise

    # ---- widgets ------------------------------------------------------------------------------

    def _build_widgets(self, samples: str | Path | None) -> None:
        build_layout(self, samples)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    # ---- the pipeline (public API) ------------------------------------------------------------

    @property
    def preset(self) -> Preset:
        """A copy of the current pipeline (JSON-serialisable with ``.to_dict()``)."""
        return self.model.preset.copy()

    @property
    def code(self) -> str:
        """The exported training module for the current pipeline; with annotations loaded it
        reads the COCO dataset and moves its labels (ValueError: a step that cannot)."""
        labels = self.labels.export_set
        key = self.model.preset.to_json(indent=None) + repr(labels)
        if self._code[0] != key:
            self._code = (key, export_code(self.model.preset, self.catalog, labels=labels))
        return self._code[1]

    def add_step(self, op: str, **params: Any) -> int:
        """Append a step (catalog defaults overridden by ``params``); returns its index."""
        return self.model.add_step(op, params)

    def remove_step(self, index: int) -> None:
        self.model.remove_step(index)

    def move_step(self, index: int, delta: int) -> int:
        return self.model.move_step(index, delta)

    def duplicate_step(self, index: int) -> int:
        return self.model.duplicate_step(index)

    def set_param(self, index: int, name: str, value: Any, child: int | None = None) -> None:
        """A literal, ``Uniform``/``Choice`` or JSON (of ``child`` of a group); else PresetError."""
        self.model.set_param(index, name, value, child)

    def set_probability(self, index: int, probability: float, child: int | None = None) -> None:
        self.model.set_probability(index, probability, child)

    def set_enabled(self, index: int, enabled: bool, child: int | None = None) -> None:
        self.model.set_enabled(index, enabled, child)

    def set_seed(self, seed: int) -> None:
        self.model.set_seed(seed)

    def new_draw(self) -> int:
        """A new random seed (kept in the preset, so the export still matches)."""
        seed = random.SystemRandom().randrange(2**31)
        self.model.set_seed(seed)
        return seed

    def set_shard(self, shard_id: int, num_shards: int) -> None:
        """Preview what shard ``shard_id`` of ``num_shards`` GPUs draws (its own seed)."""
        self.shards.set(shard_id, num_shards)

    def undo(self) -> bool:
        return self.model.undo()

    def redo(self) -> bool:
        return self.model.redo()

    def load_preset(self, source: Any) -> None:
        """Replace the pipeline (undoable); PresetError lists every problem."""
        self.model.replace(source)

    def restore_autosave(self) -> bool:
        """Load the pipeline autosaved by an earlier session (undoable)."""
        preset, self._restorable = self._restorable, None
        self.restore_button.layout.display = "none"
        if preset is None:
            return False
        self.model.replace(preset)
        return True

    # ---- images, view and results (public API) ------------------------------------------------

    def set_images(self, images: Any) -> list[ImageProblem]:
        """Preview these images (trusted caller: not restricted to the allowed root)."""
        return self._load_source(source_from(images, pick=self.live.max_images))

    def open_folder(self, text: str) -> list[ImageProblem]:
        """Load a folder named by a user, restricted to the allowed root."""
        return self.images_panel.load_folder(text)

    def set_draws(self, draws: int) -> None:
        self.live.set_view(draws=draws)

    def set_count(self, count: int) -> None:
        self.live.set_view(count=count)

    def set_size(self, size: int) -> list[ImageProblem]:
        """Longest image side for the preview (0 = original: exact export parity)."""
        return self.live.set_size(size)

    def wait_idle(self, timeout: float = 60.0, thumbnails: bool = False) -> bool:
        """Block until the preview and export (and thumbnails, when asked) are up to date."""
        return self.live.wait_idle(timeout, thumbnails)

    @property
    def scheduler(self) -> Scheduler[RenderRequest, RenderResult]:
        """The render scheduler (its ``stats`` count renders, superseded and stale ones)."""
        return self.live.scheduler

    @property
    def renderer(self) -> PreviewRenderer:
        return self.live.renderer

    @property
    def last_result(self) -> RenderResult | None:
        """The render on screen (arrays, per-sample records, display bytes)."""
        return self.live.last_result

    @property
    def last_error(self) -> Exception | None:
        """The error of the newest render, None once a render succeeds."""
        return self.live.last_error

    def tile_bytes(self, image: int, draw: int) -> bytes:
        """The bytes the preview shows for draw ``draw`` of image ``image``."""
        return self.live.tile_bytes(image, draw)

    def inspect(self, image: int, draw: int) -> list[StepReport]:
        """Open the inspector on a tile: which steps fired, sampled values, histograms."""
        return self.live.inspect(image, draw)

    @property
    def cli_command(self) -> str:
        """The ``dali-gallery render`` command that renders the same grid."""
        preset_file = f"{slug(self.model.preset.name)}_preset.json"
        return shlex.join(["dali-gallery", "render", preset_file, *self.live.cli_args(),
                           *self.shards.cli_args(self.model.preset), "--out", "grid.png"])

    def close(self) -> None:
        """Stop the worker and release DALI pipelines and widgets."""
        self.live.close()
        self.distribution.close()
        self._retired.close()
        style.close_tree(self.widget)

    # ---- reacting to edits --------------------------------------------------------------------

    def _on_view_change(self) -> None:
        self._export_dirty = True  # the CLI command follows the view
        self.live.request()

    def _on_change(self, change: Change) -> None:
        if self.autosave is not None:
            self.autosave.armed = True
        with self._ui:
            self._sync_cards(change)
            self.undo_button.disabled = not self.model.history.can_undo
            self.redo_button.disabled = not self.model.history.can_redo
            self.preview.set_values(seed=self.model.preset.seed)
            self._export_dirty = True
        if change.kind == "meta":
            self._on_idle()
        else:
            self.live.request()

    def _sync_cards(self, change: Change | None = None) -> None:
        steps = self.model.preset.steps
        if [card_key(s) for s in steps] == [c.key for c in self.cards]:
            for card, step in zip(self.cards, steps, strict=True):
                card.sync(step)  # type: ignore[arg-type]  # same keys: same kinds
            return
        removed = (change.step if change is not None and change.kind == "structure"
                   and len(steps) == len(self.cards) - 1 else None)
        old = self.cards
        self.cards = arrange_cards(old, steps, removed, lambda i, step, collapsed: make_card(
            i, step, self, self.model, self.catalog, count=len(steps), collapsed=collapsed,
            unavailable=lambda op: self.picker.items[op].reason))
        self.chain.children = [c.widget for c in self.cards] or [  # made only when shown
            w.HTML("<i>No steps yet: add one from <b>Add a step</b>.</i>")]
        self._retired.add(retire([c for c in old if c not in self.cards]))  # inert, closed
        # later: see style.RETIRE_S

    def _show_step_error(self, step: int | None, message: str | None) -> None:
        if step is None:
            for card in self.cards:
                card.show_error(None)
        elif step < len(self.cards):
            self.cards[step].show_error(message)

    def _add_from_picker(self, op: str) -> None:
        try:
            self.model.add_step(op, suggested_params(self.catalog[op]))
        except PresetError as e:
            self.picker.hint.value = style.error_html(e.problems)

    def _on_seed(self, name: str, value: Any) -> None:
        if name == "new_draw":
            self.new_draw()
        else:
            self.set_seed(int(value))

    def _set_name(self, name: str) -> None:
        try:
            self.model.set_name(name)
        except PresetError as e:
            self.export.show_problems("preset name", e.problems)

    def _preset_file(self, data: bytes, name: str) -> list[str]:
        """An uploaded preset or exported module: a document, never a path on the server."""
        shown = cut(name, 80)  # the browser's file name: data, and bounded
        try:
            if name.lower().endswith(".py"):
                preset = preset_from_source(document_text(data, shown), self.catalog)
            else:
                preset = parse_document(data, self.catalog, origin=shown)
            self.model.replace(preset)
        except PresetError as e:
            problems = list(e.problems)
        else:
            problems = []
        self.export.show_problems(f"could not load {shown}; the pipeline was not changed",
                                  problems)
        return problems

    def _load_source(self, source: ImageSource) -> list[ImageProblem]:
        problems, replaced = self.live.load(source)
        self.image_problems = problems
        if replaced:
            self.images_panel.show(source, problems, names=self.live.renderer.names)
        else:
            self.images_panel.show(None, problems, f"no usable image in {source.label}; the "
                                   "previous images are kept")
            self.live.request()  # re-shows the preview, or says that there are no images
        self.labels.refresh()
        self._export_dirty = True
        return problems

    # ---- export and autosave (when the preview is idle) ---------------------------------------

    def _on_idle(self) -> None:
        """Autosave, and refresh the Export tab when anything it shows changed: the pipeline,
        the labels (loaded, removed, the drop threshold), the view its command reproduces."""
        self._save()
        with self._ui:
            preset, source = self.model.preset, self.live.source
            note = source.cli_note if source is not None else (
                "The preview images are not one folder on the server: put the same files "
                "in a folder and pass it to --images.")
            key = (preset.to_json(indent=None), repr(self.labels.export_set), self.cli_command)
            if not self._export_dirty and key == self._export_key:
                return
            self._export_dirty, self._export_key = False, key
            try:
                code = self.code
            except ValueError as e:  # labels loaded and a step or the tail cannot move them
                code = "# " + str(e).replace("\n", "\n# ")
            self.export.update(code, preset.to_json(), preset.name, self.cli_command, note)

    def _offer_restore(self) -> None:
        if self.autosave is None:
            return
        found = self.autosave.restorable(self.catalog)
        preset = found.preset
        if preset is not None and preset.to_dict() != self.model.preset.to_dict():
            self._restorable = preset  # kept: the first edit here overwrites the file
            self.restore_button.description = f"restore autosaved pipeline ({found.message})"
            self.restore_button.tooltip = self.autosave.shown  # its name: no server folder
            self.restore_button.layout.display = None
        elif found.problem:  # moved aside or autosave off: say so in the toolbar
            self.notice.value = escape(found.message)

    def _save(self) -> None:
        if self.autosave is None:
            return
        if self.autosave.write(self.model.preset):
            self.notice.value = ""
        elif self.autosave.error:
            self.notice.value = escape(self.autosave.error)
