"""The builder's labels controls: load annotations, show or hide them, the drop threshold.

Annotations come from a COCO file or YOLO labels named in code (a trusted caller's path), a
COCO ``.json`` uploaded in the page (its bytes are a document, never a path), or a ``.json``
lying in the images folder (offered by name: that folder passed the allowed-root check, and
the file is checked again, symlinks followed). They are matched to the preview's images by
file name (:mod:`.label_source`). Problems are listed by file and reason like the images'
problems, and the rest still loads; a document that cannot be used at all leaves the labels
as they were and says why. "classification | detection" (:mod:`.label_task`) removes the labels
or shows an annotated set. Other views (the app's gallery) follow through :meth:`on_labels`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.annotations import AnnotationError, AnnotationProblem
from dali_gallery.pipelines.annotations_yolo import YoloLayout
from dali_gallery.pipelines.image_collect import within_root
from dali_gallery.pipelines.image_files import readable
from dali_gallery.pipelines.label_code import LabelSet

from . import style
from .image_source import ImageSource
from .label_overlay import labels_legend_html
from .label_source import YOLO, LabelSource, from_path, from_upload, from_yolo
from .label_task import SamplesLoader, TaskPick
from .render import MIN_KEPT_RANGE, PreviewRenderer
from .style import shared_layout
from .upload_entry import UploadRefused, entry_bytes, entry_name

MAX_PROBLEMS_SHOWN = 50
"""Problems listed (a dataset's file can have thousands; the rest are counted)."""
MAX_FOUND = 20
"""Annotation files of the images folder offered by name."""
YOLO_CHOICE = "YOLO labels (a .txt per image)"
LIKELY = ("instances", "annotation", "coco", "label")
"""Words of annotation files' usual names: offered first (a folder may hold other .json)."""


def check_annotations_arg(annotations: Any) -> None:
    """``Builder(annotations=...)``: a COCO file that exists, or "yolo"; else an error now,
    before any thread or pipeline exists."""
    if annotations is None or annotations == YOLO:
        return
    if not isinstance(annotations, (str, os.PathLike)):
        raise TypeError(f"annotations={type(annotations).__name__} is not allowed; expected "
                        f"the path of a COCO instances .json or {YOLO!r}")
    if not Path(annotations).is_file():
        raise FileNotFoundError(f"annotations={os.fspath(annotations)!r}: no such file (a COCO "
                                f"instances .json, or {YOLO!r} for a YOLO folder)")


class LabelsPanel:
    """Upload, files found beside the images, "show labels", the drop threshold, a summary
    with a legend, and the problem list. ``on_change()`` re-renders the preview; ``samples``
    shows the bundled annotated samples (the images panel's own loader; None: not offered)."""

    def __init__(self, renderer: PreviewRenderer, *, on_change: Callable[[], None],
                 source: Callable[[], ImageSource | None],
                 allowed_root: Path | None = None,
                 samples: SamplesLoader | None = None) -> None:
        self.renderer = renderer
        self.on_change = on_change
        self._source = source
        self.allowed_root = allowed_root
        self._quiet = False
        self.headline = style.Headline()
        """The labels loaded ("instances.json, 4 of 6 images"; empty: none)."""
        self._listeners: list[Callable[[], None]] = []
        self.task = TaskPick(self, samples)
        self.upload_button = style.classed(w.FileUpload(
            accept=".json,application/json", multiple=False,
            description="annotations (.json)", tooltip="a COCO instances file for these "
            "images (boxes, masks, keypoints); kept in memory"), style.LABELS_UPLOAD)
        self.upload_button.observe(self._on_upload, "value")
        self.found = style.classed(w.Dropdown(options=[], description="in folder",
                                              style={"description_width": "60px"},
                                              layout=shared_layout(width="300px")),
                                   style.LABELS_FOUND)
        self.found_load = style.classed(w.Button(description="load labels", icon="tags"),
                                        style.LABELS_LOAD)
        self.found_load.on_click(lambda _: self.load_found(self.found.value))
        self.show = style.classed(w.Checkbox(value=renderer.overlay, description="show labels",
                                             indent=False, layout=shared_layout(width="120px")),
                                  style.LABELS_SHOW)
        self.show.observe(lambda c: self._quiet or self.set_show(bool(c["new"])), "value")
        self.min_kept = style.classed(w.BoundedFloatText(
            value=renderer.engine.min_kept, min=MIN_KEPT_RANGE[0], max=MIN_KEPT_RANGE[1],
            step=0.05, description="drop boxes keeping <", tooltip="after a step that moves "
            "them, boxes keeping less than this fraction of their area are dropped",
            style={"description_width": "140px"}, layout=shared_layout(width="220px")),
            style.LABELS_MIN_KEPT)
        self.min_kept.observe(lambda c: self._quiet or self.set_min_kept(float(c["new"])),
                              "value")
        self.clear_button = style.classed(w.Button(description="remove labels", icon="times",
                                                   disabled=True), style.LABELS_CLEAR)
        self.clear_button.on_click(lambda _: self.clear())
        self.summary = w.HTML()
        self.legend = w.HTML()
        self.problems_html = style.classed(w.HTML(), style.LABELS_PROBLEMS)
        self.widget = style.classed(w.VBox([
            w.HBox([w.HTML("<b>Labels</b> <span style='opacity:.7'>(object detection, "
                           "segmentation)</span>"), self.task.widget],
                   layout=shared_layout(flex_flow="row wrap", align_items="center")),
            w.HBox([self.upload_button, self.found, self.found_load],
                   layout=shared_layout(flex_flow="row wrap")),
            w.HBox([self.show, self.min_kept, self.clear_button],
                   layout=shared_layout(flex_flow="row wrap", align_items="center")),
            self.summary, self.legend, self.problems_html]), style.LABELS)
        self.refresh()

    # ---- state --------------------------------------------------------------------------------

    @property
    def source(self) -> LabelSource | None:
        return self.renderer.labels

    @property
    def export_set(self) -> LabelSet | None:
        """What the exported module carries: the loaded labels (masks when the preview has
        them) and the drop threshold the preview uses; None without annotations."""
        source = self.source
        if source is None:
            return None
        return LabelSet(masks=source.masks_on, min_kept=self.renderer.engine.min_kept)

    @property
    def problems(self) -> list[AnnotationProblem]:
        return list(self.source.problems) if self.source is not None else []

    def on_labels(self, handler: Callable[[], None]) -> None:
        """Call ``handler()`` after the labels, "show labels" or the threshold changed (the
        app's gallery reads them from ``renderer``)."""
        self._listeners.append(handler)

    def images_folder(self) -> Path | None:
        """The folder the images come from (None: uploads, or files of several folders)."""
        return self._images_dir()

    def likely_found(self) -> str | None:
        """The first ``.json`` offered in the images folder whose name looks like annotations
        (``instances``, ``coco``...), else ``"yolo"`` when the folder has YOLO labels (.txt
        files), None when it has neither."""
        values = [str(value) for _, value in self.found.options or ()]
        for value in values:
            if value != YOLO and any(k in value.lower() for k in LIKELY):
                return value
        return YOLO if YOLO in values else None

    def failed(self, message: str) -> None:
        """Show why the labels could not be loaded (they stay as they were)."""
        self._failed(message)

    # ---- actions ------------------------------------------------------------------------------

    def load(self, annotations: str | Path) -> list[AnnotationProblem]:
        """A COCO instances file (a trusted caller's path), or ``"yolo"``: the images folder's
        YOLO labels. AnnotationError when it cannot be used at all (also shown)."""
        folder = self._images_dir()
        try:
            if folder is None:
                raise AnnotationError("annotations are matched to the images of a folder; load "
                                      "the images from a folder first (uploaded images take an "
                                      "uploaded .json)")
            labels = (from_yolo(folder, confine=self._root()) if annotations == YOLO
                      else from_path(annotations, folder))
        except (AnnotationError, OSError) as e:
            self._failed(str(e))
            raise AnnotationError(str(e)) from None
        return self._use(labels)

    def upload(self, data: bytes, name: str = "annotations.json") -> list[AnnotationProblem]:
        """An uploaded COCO document (bytes: data, never a path) for the current images."""
        src = self._source()
        available = list(src.listing.files) if src is not None and src.listing is not None \
            else self.renderer.names
        try:
            labels = from_upload(data, name, available, self._images_dir())
        except AnnotationError as e:
            self._failed(str(e))
            return [AnnotationProblem(readable(name)[:80], str(e))]
        return self._use(labels)

    def load_found(self, choice: Any) -> list[AnnotationProblem]:
        """One of the files offered in the images folder (by name, never a typed path)."""
        folder = self._images_dir()
        options = dict(self.found.options) if self.found.options else {}
        if folder is None or choice is None or choice not in options.values():
            self._failed("choose an annotations file of the images folder")
            return []
        try:
            return self.load(choice if choice == YOLO else self._inside(folder / str(choice)))
        except AnnotationError as e:
            return [AnnotationProblem(readable(str(choice)), str(e))]

    def clear(self) -> None:
        """No labels: the preview renders as without annotations."""
        self.renderer.set_labels(None)
        self.refresh()
        self._changed()

    def set_show(self, on: bool) -> None:
        """Draw the labels over the tiles (or hide them; they are still moved and checked)."""
        self.renderer.overlay = bool(on)
        self._quiet_set(self.show, bool(on))
        if self.source is not None:
            self._changed()

    def set_min_kept(self, value: float) -> None:
        """The drop threshold (a fraction of a box's area, 0.01 to 1)."""
        self.renderer.set_min_kept(value)
        self._quiet_set(self.min_kept, float(value))
        if self.source is not None:
            self._changed()

    def refresh(self) -> None:
        """After the images changed: labels of another folder are removed, the files offered,
        the summary and the legend follow the images now loaded."""
        folder = self._images_dir()
        labels = self.source
        note = ""
        if labels is not None and labels.images_dir is not None and \
                not _same(labels.images_dir, folder):
            self.renderer.set_labels(None)
            labels = None
            note = "The labels were removed: they belong to the images of another folder."
            self._changed()
        self._offer(folder)
        self.clear_button.disabled = labels is None
        self.task.sync()
        names = self.renderer.names
        if labels is None:
            self.summary.value = (f'<div class="{style.ERROR}">{escape(note)}</div>' if note
                                  else "<span style='opacity:.7'>no labels loaded</span>")
            self.legend.value = self.problems_html.value = ""
            self.headline.text = ""
            return
        matched = labels.matched(names)
        self.headline.text = f"{labels.origin}, {len(matched)} of {len(names)} images"
        masks = "" if labels.masks_on else "; no masks"
        self.summary.value = (f"<b>{escape(labels.origin)}</b>: labels for {len(matched)} of "
                              f"{len(names)} image(s){masks}")
        self.legend.value = labels_legend_html(labels.names, labels.counts(names)) \
            if matched else ""
        self._show_problems(labels.problems)

    # ---- internals ----------------------------------------------------------------------------

    def _use(self, labels: LabelSource) -> list[AnnotationProblem]:
        self.renderer.set_labels(labels)
        self.refresh()
        self._changed()
        return list(labels.problems)

    def _changed(self) -> None:
        self.on_change()
        for handler in self._listeners:
            handler()

    def _failed(self, message: str) -> None:
        kept = "; the labels were not changed" if self.source is not None else ""
        self.problems_html.value = style.error_html([message], f"could not load the labels{kept}")

    def _show_problems(self, problems: list[AnnotationProblem]) -> None:
        shown = [str(p) for p in problems[:MAX_PROBLEMS_SHOWN]]
        more = len(problems) - len(shown)
        if more > 0:
            shown.append(f"... and {more} more")
        self.problems_html.value = style.error_html(
            shown, f"{len(problems)} annotation problem(s): left out, the rest is loaded") \
            if problems else ""

    def _images_dir(self) -> Path | None:
        """The folder the images come from (None: uploads, or files of several folders)."""
        src = self._source()
        if src is None:
            return None
        if src.folder is not None:
            return src.folder
        if src.kind == "paths":
            parents = {Path(p).parent for p in src.items}
            return parents.pop() if len(parents) == 1 else None
        return None

    def _root(self) -> Path | None:
        """The root the images passed: the allowed root; for the bundled samples of a served
        app, their own folder (None: any folder)."""
        src = self._source()
        return src.root if src is not None and src.root is not None else self.allowed_root

    def _inside(self, path: Path) -> Path:
        """``path`` when it resolves inside :meth:`_root`, symlinks followed."""
        allowed = self._root()
        if allowed is not None and not within_root(path, allowed):  # a file: never the root
            raise AnnotationError(f"{readable(path.name)} leads outside the allowed root; "
                                  "it was not opened")
        return path

    def _offer(self, folder: Path | None) -> None:
        """The .json files of the images folder, and its YOLO labels when it has .txt files
        or a labels/ folder of Ultralytics' or Roboflow's layout (``ds/images/train`` ->
        ``ds/labels/train``, ``ds/train/images`` or ``ds/train`` -> ``ds/train/labels``),
        inside the allowed root: :meth:`YoloLayout.of`."""
        options: list[tuple[str, str]] = []
        if folder is not None:
            try:
                with os.scandir(folder) as it:  # only .json and .txt names are kept
                    entries = sorted(e.name for e in it if not e.name.startswith(".")
                                     and e.name.lower().endswith((".json", ".txt"))
                                     and e.is_file())
            except OSError:
                entries = []
            jsons = [n for n in entries if n.lower().endswith(".json")]
            jsons.sort(key=lambda n: not any(k in n.lower() for k in LIKELY))  # stable
            options = [(readable(n), n) for n in jsons[:MAX_FOUND]]
            split = YoloLayout.of(folder, self._root()).labels is not None  # images/ -> labels/
            if split or any(n.lower().endswith(".txt") for n in entries):
                options.append((YOLO_CHOICE, YOLO))
        self.found.options = options
        self.found.disabled = self.found_load.disabled = not options

    def _quiet_set(self, widget: w.ValueWidget, value: Any) -> None:
        self._quiet = True
        try:
            widget.value = value
        finally:
            self._quiet = False

    def _on_upload(self, change: dict[str, Any]) -> None:
        value = change["new"]
        if not value or self._quiet:
            return
        entry = value[0]
        self._quiet_set(self.upload_button, ())  # the bytes go to the labels; free the widget's
        try:  # the document's size is checked by its parser
            data = entry_bytes(entry)
        except UploadRefused as e:
            self._failed(str(e))
            return
        self.upload(data, entry_name(entry, "annotations.json"))


def _same(a: Path, b: Path | None) -> bool:
    if b is None:
        return False
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
