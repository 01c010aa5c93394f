"""CSS class names (stable hooks for browser tests and theming) and the builder's stylesheet.

Every class the UI sets is named here once, so tests and the gallery app can rely on them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape
from typing import Any

import ipywidgets as w
import traitlets

BUILDER = "dg-builder"
STYLE = "dg-style"
TOOLBAR = "dg-toolbar"
UNDO = "dg-undo"
REDO = "dg-redo"
STATUS = "dg-status"
RESTORE = "dg-restore"
ERROR = "dg-error"

STEP_CARD = "dg-step-card"
STEP_CARD_ERROR = "dg-step-card-error"
STEP_DISABLED = "dg-step-disabled"
STEP_TITLE = "dg-step-title"
STEP_ENABLED = "dg-step-enabled"
STEP_PROBABILITY = "dg-step-probability"
STEP_COLLAPSE = "dg-step-collapse"
STEP_DUPLICATE = "dg-step-duplicate"
STEP_UP = "dg-step-up"
STEP_DOWN = "dg-step-down"
STEP_REMOVE = "dg-step-remove"
STEP_ERROR = "dg-step-error"
GROUP_CARD = "dg-group-card"
GROUP_PICK = "dg-group-pick"
GROUP_WEIGHT = "dg-group-weight"
GROUP_UNGROUP = "dg-group-ungroup"
GROUP_CHILD = "dg-group-child"
CHAIN = "dg-chain"

PARAM = "dg-param"
MAGNITUDE = "dg-magnitude"
PARAM_MODE = "dg-param-mode"
PARAM_SYMMETRIC = "dg-param-symmetric"
PARAM_HALF_WIDTH = "dg-param-half-width"
PARAM_ERROR = "dg-param-error"

PICKER = "dg-picker"
PICKER_SEARCH = "dg-picker-search"
PICKER_ITEM = "dg-picker-item"
PICKER_ITEM_DISABLED = "dg-picker-item-disabled"
PICKER_ADD = "dg-picker-add"
PICKER_THUMB = "dg-picker-thumb"

PREVIEW = "dg-preview"
PREVIEW_TILE = "dg-preview-tile"
PREVIEW_ORIGINAL = "dg-preview-original"
PREVIEW_ROWS = "dg-preview-rows"
PREVIEW_ROW = "dg-preview-row"
PREVIEW_CELL = "dg-preview-cell"
PREVIEW_NAME = "dg-preview-name"
TILE_BOX = "dg-tile-box"
TILE_ZOOM = "dg-tile-zoom"
TILE_INSPECT = "dg-tile-inspect"
NEW_DRAW = "dg-new-draw"
SEED = "dg-seed"
SHARD = "dg-shard"
DRAWS = "dg-draws"
N_IMAGES = "dg-n-images"
SIZE = "dg-size"
INSPECTOR = "dg-inspector"
HISTOGRAM = "dg-histogram"
ZOOM = "dg-zoom"
ZOOM_PAIR = "dg-zoom-pair"
ZOOM_LARGE = "dg-zoom-large"
ZOOM_ORIGINAL = "dg-zoom-original"
ZOOM_CLOSE = "dg-zoom-close"

IMAGES = "dg-images"
FOLDER = "dg-folder"
FOLDER_LOAD = "dg-folder-load"
UPLOAD = "dg-upload"
SAMPLES = "dg-samples"
IMAGE_PROBLEMS = "dg-image-problems"
LABELS = "dg-labels"
LABELS_UPLOAD = "dg-labels-upload"
LABELS_FOUND = "dg-labels-found"
LABELS_LOAD = "dg-labels-load"
LABELS_SHOW = "dg-labels-show"
LABELS_MIN_KEPT = "dg-labels-min-kept"
LABELS_CLEAR = "dg-labels-clear"
LABELS_PROBLEMS = "dg-labels-problems"
LABELS_TASK = "dg-labels-task"
INSPECTOR_LABELS = "dg-inspector-labels"

EXPORT = "dg-export"
EXPORT_CODE = "dg-export-code"
DOWNLOAD_PY = "dg-download-py"
COPY_CODE = "dg-copy"
DOWNLOAD_PRESET = "dg-download-preset"
PRESET_UPLOAD = "dg-preset-upload"
PRESET_NAME = "dg-preset-name"
CLI = "dg-cli"

TILE_MIN_PX = 72
TILE_MAX_PX = 320
CELL_GAP_PX = 4
"""Width range (CSS px) of a builder preview cell and the gap between two: cells share the
preview's width (:func:`widgets.preview.cell_width`), so tiles grow when there are fewer draws,
and never shrink below the minimum (the preview scrolls instead)."""
COPY_CLI = "dg-copy-cli"
PRESET_JSON = "dg-preset-json"
COPY_PRESET = "dg-copy-preset"
EXPORT_NOTICE = "dg-export-notice"
BATCH_WARNING = "dg-batch-warning"

OUTPUT = "dg-output"
OUTPUT_ENABLED = "dg-output-enabled"
OUTPUT_SHOW = "dg-output-show"
IMAGE_FILES = "dg-image-files"
IMAGE_FILES_LOAD = "dg-image-files-load"


def param_class(name: str) -> str:
    """``dg-param-<name>``: one parameter's control in a step card."""
    return f"dg-param-{name}"


_SHARED: dict[tuple[Any, ...], w.Widget] = {}


def _shared(kind: type[w.Widget], settings: dict[str, str]) -> w.Widget:
    """The one open ``kind(**settings)`` model (a closed one is made again)."""
    key = (kind, *sorted(settings.items()))
    if key not in _SHARED or _SHARED[key].comm is None:
        _SHARED[key] = kind(**settings)
    return _SHARED[key]


class Headline(traitlets.HasTraits):
    """What a panel holds, in a few plain words, for a title that shows it while the panel is
    collapsed (the app's Images and Labels sections observe ``text``; set only on change)."""

    text = traitlets.Unicode("")


def shared_layout(**css: str) -> w.Layout:
    """One Layout model for every widget with these settings. A page restores every widget
    model the kernel holds before it shows anything, and each widget otherwise brings a
    Layout of its own; only for widgets whose layout is never changed afterwards."""
    return _shared(w.Layout, css)  # type: ignore[return-value]


def shared_style(widget: type[w.DOMWidget], **settings: str) -> w.Widget:
    """One style model for many widgets of a class (``w.Button``, ``w.HTML``...) with these
    settings: the same saving as :func:`shared_layout`, for styles never changed later."""
    return _shared(widget.class_traits()["style"].klass, settings)


def classed(widget: w.DOMWidget, *classes: str) -> w.DOMWidget:
    """Add CSS classes and return the widget (keeps construction code flat)."""
    for c in classes:
        widget.add_class(c)
    return widget


def error_html(lines: Iterable[str], title: str = "") -> str:
    """Escaped error text for an HTML widget (user data such as file names is never markup)."""
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    head = f"<b>{escape(title)}</b>" if title else ""
    ul = '<ul style="margin:2px 0 2px 18px;padding:0">'
    return f'<div class="{ERROR}">{head}{ul}{items}</ul></div>'


CSS = """
.dg-builder { font-size: 13px; }
.dg-step-card { border: 1px solid var(--jp-border-color1, #c8c8c8); border-radius: 6px;
  padding: 2px 6px 4px 6px; margin: 3px 0; background: var(--jp-layout-color1, #fff); }
.dg-step-card.dg-step-card-error { border-color: #c62828; box-shadow: 0 0 0 1px #c62828; }
.dg-step-card.dg-step-disabled { opacity: 0.55; }
.dg-error, .dg-error * { color: #c62828 !important; }
.dg-param.dg-magnitude { background: var(--jp-layout-color2, #f3f6f9); border-radius: 4px; }
.dg-preview-rows { container-type: inline-size; }
.dg-preview-cell { flex: 0 0 auto; margin: 0; }
img.dg-preview-tile, img.dg-preview-original { display: block; width: 100% !important;
  height: auto !important; max-width: none; aspect-ratio: 1 / 1; object-fit: contain;
  background: #222; margin: 0; }
.dg-tile-box { position: relative; width: 100%; margin: 0; }
.dg-tile-box > button.dg-tile-zoom { position: absolute; top: 0; left: 0; width: 100%;
  height: 100%; margin: 0; padding: 0; background: transparent; border: 0; box-shadow: none;
  cursor: zoom-in; }
.dg-tile-box > button.dg-tile-zoom:hover { outline: 2px solid #1976d2; outline-offset: -2px; }
button.dg-tile-inspect { width: 100%; height: auto; min-height: 24px; margin: 2px 0 0 0;
  padding: 2px 4px; font-size: 11px; line-height: 1.25; white-space: normal;
  overflow-wrap: anywhere; text-overflow: clip; overflow: visible; }
.dg-preview-name { width: 100%; margin: 0; }
.dg-picker-item { border-bottom: 1px solid var(--jp-border-color2, #e4e4e4); }
.dg-picker-item-disabled { opacity: 0.6; }
.dg-picker-thumb img { background: #222; }
.dg-export-code pre { max-height: 420px; overflow: auto; font-size: 12px; margin: 0;
  font-family: var(--jp-code-font-family, monospace); }
.dg-cli pre { font-family: var(--jp-code-font-family, monospace); font-size: 12px; }
.dg-step-card .widget-button { font-size: 14px; }
.dg-status { color: var(--jp-ui-font-color2, #666); }
.dg-builder .widget-html-content { line-height: 1.35; }
.dg-param-mode .widget-toggle-button { font-size: 11px; padding: 0 2px; }
.dg-param-mode { margin-left: 4px; }
.dg-picker .lm-TabBar-content { flex-wrap: wrap; }
.dg-picker .lm-TabBar-tab { flex: 0 0 auto !important; min-width: 0 !important;
  max-width: none !important; }
.dg-picker .widget-tab-contents, .dg-picker .jupyter-widget-tab-contents { overflow: auto; }
"""
ZOOM_CSS = """
.dg-zoom { border: 1px solid var(--jp-border-color1, #bbb); border-radius: 4px; padding: 4px;
  margin: 4px 0; }
.dg-zoom-pair { gap: 8px; }
.dg-zoom-pair > :first-child { flex: 0 0 auto; }
.dg-zoom-pair > :last-child { flex: 0 1 auto; min-width: 0; }
img.dg-zoom-large, img.dg-zoom-original { height: auto; aspect-ratio: 1 / 1;
  object-fit: contain; background: #222; margin: 0; }
img.dg-zoom-large { max-width: none; }
img.dg-zoom-original { max-width: 100%; }
"""
"""The zoom view's rules (:mod:`.zoom`), also carried by the gallery's own stylesheet."""
CSS += ZOOM_CSS + f".dg-preview-row {{ gap: {CELL_GAP_PX}px; }}\n"


def close_tree(widget: w.Widget) -> None:
    """Close a widget and its children (``close`` alone leaves the children's comms open)."""
    for child in getattr(widget, "children", ()):
        close_tree(child)
    widget.close()


RETIRE_S = 10.0
"""How long a widget taken off the page stays open before it is closed. A page that is still
restoring its widgets lists the kernel's models, then fetches each: a model closed in between
fails it ("Cannot read properties of undefined (reading 'create_view')", seen once in a Voilà
page whose builder rebuilt its cards while the page loaded)."""


class Retired:
    """Widgets taken off the page, each closed (with its children) once it has been off the
    page for :data:`RETIRE_S`, checked whenever more are retired, or all at :meth:`close`."""

    def __init__(self) -> None:
        self._items: list[tuple[float, w.Widget]] = []

    def add(self, widgets: Iterable[w.Widget]) -> None:
        now = time.monotonic()
        self._items += [(now, x) for x in widgets]
        self.close(older_than=RETIRE_S)

    def close(self, older_than: float = 0.0) -> None:
        now, keep = time.monotonic(), []
        for since, widget in self._items:
            if now - since >= older_than:
                close_tree(widget)
            else:
                keep.append((since, widget))
        self._items = keep

    def __len__(self) -> int:
        return len(self._items)


def stylesheet() -> w.HTML:
    """A (visually empty) HTML widget carrying the stylesheet, placed inside the builder."""
    return classed(w.HTML(f"<style>{CSS}</style>"), STYLE)
