"""One operator's card in the gallery: header, one image per column, and the add buttons.

The pixels are DALI's (from :func:`gallery.sweep.render_row`); this module only stacks a
column's tiles into one picture (each letterboxed in a shared cell, so nothing is stretched),
scales it to the size it is shown at and encodes it as JPEG. The size the user picks sets the
size tiles are shown at (:func:`tile_px`). A page holds ~50 cards, so each card uses few widget
models: a header, one ``Image`` per column, one ``ToggleButtons`` whose buttons are the "add"
actions and one whose transparent buttons lie over the tiles and open the zoom view. On
labelled images the tiles are drawn with their moved labels (:mod:`.view_labels`), and the card
of an operator that cannot move labels says why instead of showing tiles.
"""

from __future__ import annotations

import html
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import ipywidgets as W
import numpy as np

from dali_gallery.pipelines.catalog import OpSpec
from dali_gallery.pipelines.display import encode_batch, encode_image, to_display
from dali_gallery.widgets.style import (
    ERROR,
    ZOOM_CSS,
    close_tree,
    shared_layout,
    shared_style,
)
from dali_gallery.widgets.zoom import ZOOM_PX, ZoomView

from .sweep import RowResult
from .view_labels import LabelState, drawn_column, zoom_labels

MIN_TILE_PX = 80
DISPLAY_SCALE = 2
"""Image pixels per CSS pixel of a tile: sharp on high-density screens, and a page of 50 cards
stays a few MB (at 512 px the strips would be 25 times larger than what is shown)."""
GAP_PX = 4
COLUMN_GAP_PX = 4
"""CSS pixels between two columns (the images' 2 px side margins in the view's CSS)."""
JPEG_QUALITY = 85
BACKGROUND = 40
"""Grey of a cell's letterbox and of the gaps between images."""

CSS = """<style>
.dg-gallery-rows { gap: 10px; }
.dg-gallery-row { border: 1px solid #d0d0d0; border-radius: 6px; padding: 6px;
  margin: 0 !important; max-width: 100%; overflow-x: auto; }
.dg-gallery-row img { height: auto; margin: 0 2px; }
.dg-gallery-label { font-size: 11px; text-align: center; margin: 0 2px; }
.dg-gallery-add button { font-size: 11px; padding: 0 2px; margin: 0 2px !important; }
.dg-gallery-gpu-only, .dg-gallery-error, .dg-gallery-refused { max-width: 560px;
  font-size: 12px; }
.dg-gallery-refused { color: #8a5a00; }
.dg-gallery-error { color: #b00020; }
.dg-gallery-strips { position: relative; margin: 0; }
.dg-gallery-zoom { position: absolute; top: 0; left: 0; }
.dg-gallery-zoom > div { display: contents; }
.dg-gallery-zoom button { height: auto !important; margin: 0 !important; padding: 0;
  background: transparent !important; border: 0; box-shadow: none !important;
  color: transparent !important; font-size: 0; cursor: zoom-in; }
.dg-gallery-zoom button:hover { outline: 2px solid #1976d2; outline-offset: -2px; }
.dg-gallery-row .dg-zoom img { margin: 0; }
""" + ZOOM_CSS + "</style>"
"""The gallery's stylesheet (cards, and the tile buttons laid over the strips)."""

AddCallback = Callable[[str, dict[str, Any], str], None]
ZoomCallback = Callable[[str, int, int], None]
"""``(op, image, column)``: column 0 is the original, k the row's column k - 1."""


def tile_px(size: int) -> int:
    """CSS width of a tile when images are decoded to ``size``: every size is shown at its own
    width (128 px -> 80, 256 -> 128, 512 -> 256), sent at :data:`DISPLAY_SCALE`."""
    return max(MIN_TILE_PX, size // DISPLAY_SCALE)


CARD_CHROME_PX = 90
"""CSS height of a card without its tiles: header, description, add buttons and padding."""


def card_px(tile: int, images: int) -> int:
    """About how tall a card of ``images`` tiles of CSS width ``tile`` is on the page (tiles
    taken as square: letterboxed cells of other shapes make it a guess, used only to size the
    first screen)."""
    return CARD_CHROME_PX + images * (tile + GAP_PX)


def slug(op: str) -> str:
    """A CSS-class-safe form of an operator name (``a.b_c`` -> ``a-b_c``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", op)


def strip_sheet(tiles: Sequence[np.ndarray], cell: tuple[int, int]) -> np.ndarray:
    """The tiles of one column stacked vertically, each centred in a ``cell`` (h, w) box. A
    shared cell keeps the images of a card aligned across columns and keeps each one's aspect
    ratio."""
    h, w = cell
    n = len(tiles)
    sheet = np.empty((n * h + (n - 1) * GAP_PX, w, 3), dtype=np.uint8)
    for i, tile in enumerate(tiles):
        a = to_display(tile)
        th, tw = min(a.shape[0], h), min(a.shape[1], w)
        top = i * (h + GAP_PX)
        y, x = top + (h - th) // 2, (w - tw) // 2
        sheet[y:y + th, x:x + tw] = a[:th, :tw]
        # only what no tile covers is painted (a full-sheet fill cost as much as the copies)
        sheet[top:y], sheet[y + th:top + h + GAP_PX] = BACKGROUND, BACKGROUND
        sheet[y:y + th, :x], sheet[y:y + th, x + tw:] = BACKGROUND, BACKGROUND
    return sheet[:n * h + (n - 1) * GAP_PX]


def strip_jpeg(tiles: Sequence[np.ndarray], cell: tuple[int, int], width: int) -> bytes:
    """:func:`strip_sheet` as JPEG no wider than ``width`` CSS px at :data:`DISPLAY_SCALE`."""
    sheet = strip_sheet(tiles, cell)
    # never sent wider than it can be shown (the height follows)
    return encode_image(sheet, "jpeg", quality=JPEG_QUALITY,
                        fit=(width * DISPLAY_SCALE, sheet.shape[0]))


@dataclass(frozen=True)
class Strips:
    """A card's column pictures: ``jpegs[0]`` the originals, then one per rendered column;
    ``cell`` is the (h, w) box in image pixels each image is centred in, ``count`` the images
    per column and ``px`` the CSS width each column is shown at."""

    jpegs: list[bytes]
    cell: tuple[int, int]
    count: int
    px: int


def row_strips(result: RowResult, originals: list[np.ndarray], px: int,
               labels: LabelState | None = None, *, batch: bool = False) -> Strips:
    """The JPEG of the originals column, then one per rendered column (none if not rendered).
    The columns are encoded in parallel (Pillow releases the GIL while it scales and encodes):
    on a warm GPU gallery, encoding one column after another took longer than DALI. With
    ``batch`` (a gallery on the GPU) pictures that need no shrinking are encoded as one batch
    by nvImageCodec's CPU codecs (:func:`encode_batch`, the GIL released).
    With ``labels`` drawn ("show labels"), each column's tiles get their labels first."""
    if not result.ok:
        return Strips([], (0, 0), 0, px)
    columns = [originals, *result.tiles]
    cell = (max(t.shape[0] for col in columns for t in col),
            max(t.shape[1] for col in columns for t in col))
    if labels is not None and labels.overlay and result.labels is not None:
        def column(k: int) -> bytes:
            return strip_jpeg(drawn_column(labels, result, originals, k), cell, px)

        jpegs = list(_encoder_pool().map(column, range(len(columns))))
    else:
        first = _ORIGINALS.get(originals, cell, px)
        todo = columns[1:] if first else columns
        batched = encode_batch([strip_sheet(col, cell) for col in todo], "jpeg", JPEG_QUALITY) \
            if batch and cell[1] <= px * DISPLAY_SCALE else None
        jpegs = batched or list(_encoder_pool().map(lambda col: strip_jpeg(col, cell, px), todo))
        if first:
            jpegs.insert(0, first)
        else:
            _ORIGINALS.keep(originals, cell, px, jpegs[0])
    return Strips(jpegs, cell, len(originals), px)


class _OriginalsStrips:
    """The originals column is the same picture on most cards (same images, cell and width):
    encoded once, not once per card. Entries hold the arrays they were made from and match
    them by identity, so other images (even at a reused address) never get a stale picture."""

    def __init__(self, size: int = 8) -> None:
        self._size = size
        self._entries: list[tuple[list[np.ndarray], tuple[int, int], int, bytes]] = []
        self._lock = threading.Lock()

    def get(self, originals: Sequence[np.ndarray], cell: tuple[int, int], px: int) -> bytes:
        with self._lock:
            for arrays, c, p, jpeg in self._entries:
                if (c, p) == (cell, px) and len(arrays) == len(originals) and all(
                        a is b for a, b in zip(arrays, originals, strict=True)):
                    return jpeg
        return b""

    def keep(self, originals: Sequence[np.ndarray], cell: tuple[int, int], px: int,
             jpeg: bytes) -> None:
        with self._lock:
            self._entries = [(list(originals), cell, px, jpeg), *self._entries][:self._size]


_ORIGINALS = _OriginalsStrips()


_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def _encoder_pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1),
                                       thread_name_prefix="dali-gallery-jpeg")
        return _POOL


class Row:
    """The widgets of one card; ``on_add(op, params, label)`` runs when an add button is
    clicked, ``on_zoom(op, image, column)`` when a tile is. ``originals`` and ``names`` are the
    images the card was rendered on (the zoom view shows them); ``labels`` their labels."""

    def __init__(self, spec: OpSpec, result: RowResult, strips: Strips, on_add: AddCallback,
                 *, originals: Sequence[np.ndarray] = (), names: Sequence[str] = (),
                 on_zoom: ZoomCallback | None = None,
                 labels: LabelState | None = None) -> None:
        self.op = spec.name
        self.result = result
        self.strips = strips
        self.labels = labels
        self.originals = list(originals)
        self.names = list(names)
        self._on_add = on_add
        self._on_zoom = on_zoom
        self._zoom_widget: W.Widget | None = None
        px = strips.px
        plan = result.plan
        walks = ", ".join(f"<code>{html.escape(p)}</code>" for p in plan.walks)
        sweep = f" &middot; columns: {walks}" if walks else ""
        head = W.HTML(
            f"<b>{html.escape(spec.name)}</b> <small>{html.escape(spec.category)}"
            f"{' &middot; GPU only' if not spec.cpu else ''}{sweep}</small><br>"
            f"<small>{html.escape(spec.doc)}</small>", layout=shared_layout(),
            style=shared_style(W.HTML))
        head.add_class("dg-gallery-head")
        buttons = shared_style(W.ToggleButtons, button_width=f"{px}px")
        self.add = W.ToggleButtons(
            options=[(c.button, k) for k, c in enumerate(plan.columns)], index=None,
            tooltips=[f"add {self.op} with {c.label} to the builder" for c in plan.columns],
            style=buttons, layout=shared_layout())
        self.add.add_class("dg-gallery-add")
        self.add.observe(self._clicked, names="index")
        self.images = [self._image(data, "dg-gallery-tile" if k else "dg-gallery-original", px)
                       for k, data in enumerate(strips.jpegs)]
        self.zoom_buttons: W.ToggleButtons | None = None
        body: list[W.Widget] = []
        if self.images:
            original = W.HTML("original", layout=shared_layout(width=f"{px}px"),
                              style=shared_style(W.HTML))
            original.add_class("dg-gallery-label")
            self.zoom_buttons = self._zoom_overlay()
            strips_box = W.Box([W.HBox(self.images, layout=shared_layout()),
                                self.zoom_buttons], layout=shared_layout())
            strips_box.add_class("dg-gallery-strips")
            body += [strips_box, W.HBox([original, self.add], layout=shared_layout())]
        else:
            note = W.HTML(html.escape(result.unavailable or result.refused or result.error
                                      or ""))
            note.add_class("dg-gallery-gpu-only" if result.unavailable else
                           "dg-gallery-refused" if result.refused else "dg-gallery-error")
            if result.error:
                note.add_class(ERROR)
            body += [note, self.add]
        self._body = [head, *body]
        self.widget = W.VBox(list(self._body), layout=shared_layout())
        self.widget.add_class("dg-gallery-row")
        self.widget.add_class(f"dg-gallery-row-{slug(self.op)}")

    @staticmethod
    def _image(jpeg: bytes, css: str, px: int) -> W.Image:
        img = W.Image(value=jpeg, format="jpeg", layout=shared_layout(width=f"{px}px"))
        img.add_class(css)
        return img

    def column_label(self, column: int) -> str:
        """``original`` for column 0, else the label of the row's column ``column - 1``."""
        return "original" if column == 0 else self.result.plan.columns[column - 1].label

    def _zoom_overlay(self) -> W.ToggleButtons:
        """One transparent button over each image of each column, laid out as a CSS grid that
        matches the strips: columns ``px`` wide, rows one cell high (scaled like the strip)."""
        n, cols, px = self.strips.count, len(self.images), self.strips.px
        h, w = self.strips.cell
        scale = px / max(1, w)
        options, tooltips = [], []
        for i in range(n):
            name = self.names[i] if i < len(self.names) else f"image {i + 1}"
            for k in range(cols):
                options.append((f"zoom {i + 1}/{k}", i * cols + k))
                tooltips.append(f"a large view of {name}: {self.column_label(k)}")
        buttons = W.ToggleButtons(
            options=options, index=None, tooltips=tooltips,
            style=shared_style(W.ToggleButtons, button_width=f"{px}px"),
            layout=shared_layout(display="grid", grid_template_columns=f"repeat({cols}, {px}px)",
                                 grid_template_rows=f"repeat({n}, {h * scale:.2f}px)",
                                 grid_gap=f"{GAP_PX * scale:.2f}px {COLUMN_GAP_PX}px",
                                 margin=f"0 0 0 {COLUMN_GAP_PX // 2}px"))
        buttons.add_class("dg-gallery-zoom")
        buttons.observe(self._zoom_clicked, names="index")
        return buttons

    def click(self, column: int) -> None:
        """What clicking the column's add button does (tests and scripts)."""
        self.add.index = column

    def click_tile(self, image: int, column: int) -> None:
        """What clicking image ``image`` of column ``column`` (0: originals) does."""
        if self.zoom_buttons is None:
            raise ValueError(f"{self.op} has no tiles to zoom into")
        self.zoom_buttons.index = image * len(self.images) + column

    def open_zoom(self, zoom: ZoomView, image: int, column: int) -> None:
        """Show image ``image`` of column ``column`` (0: the original) large in ``zoom``, the
        original beside it, with their labels drawn when the tiles have them; then put
        ``zoom`` in this card."""
        original = self.originals[image]
        tile = original if column == 0 else self.result.tiles[column - 1][image]
        sizes = None
        view = zoom_labels(self.labels, self.result, image, column)
        if view is not None:
            sizes = (tile.shape, original.shape)
            tile, original = view.drawn(tile, original)
        zoom.show(tile, original, side=f"{max(ZOOM_PX, 2 * self.strips.px + 16)}px",
                  title=f"{self.op} \u00b7 {self.column_label(column)} \u00b7 "
                        f"{self.names[image]}", key=(self.op, str(image), str(column)),
                  sizes=sizes)
        self.show_zoom(zoom.widget)

    def show_zoom(self, widget: W.Widget) -> None:
        """Show ``widget`` (the gallery's zoom view) at the bottom of this card."""
        self._zoom_widget = widget
        self.widget.children = [*self._body, widget]

    def hide_zoom(self) -> None:
        """Take the zoom view out of this card (it is not closed: the gallery reuses it)."""
        if self._zoom_widget is not None:
            self._zoom_widget = None
            self.widget.children = list(self._body)

    def _clicked(self, change: dict[str, Any]) -> None:
        k = change["new"]
        if k is None:
            return
        self.add.index = None  # a button, not a selection: ready for the next click
        col = self.result.plan.columns[k]
        self._on_add(self.op, dict(col.params), col.label)

    def _zoom_clicked(self, change: dict[str, Any]) -> None:
        k = change["new"]
        if k is None or self.zoom_buttons is None:
            return
        self.zoom_buttons.index = None
        if self._on_zoom is not None:
            image, column = divmod(k, len(self.images))
            self._on_zoom(self.op, image, column)

    def close(self) -> None:
        """Release the widgets (their comms and image bytes); the zoom view is not theirs."""
        self.hide_zoom()
        close_tree(self.widget)


class CardZoom:
    """The gallery's one zoom view (``view``) and the card it is in (main thread)."""

    def __init__(self) -> None:
        self.view = ZoomView(on_close=self.take_out)
        self.row: Row | None = None

    def open(self, row: Row, image: int, column: int) -> None:
        """Show a tile of ``row`` large, in that card (taken out of the one it was in)."""
        self.take_out()
        row.open_zoom(self.view, image, column)
        self.row = row

    def take_out(self) -> None:
        """Take the view out of its card (the close button, or the card is going)."""
        row, self.row = self.row, None
        if row is not None:
            row.hide_zoom()

    def close(self) -> None:
        """Take it out and hide it: it showed images or labels no longer shown."""
        self.take_out()
        self.view.hide()
