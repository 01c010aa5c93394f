"""One operator's card in the gallery: header, one image per column, and the add buttons.

The pixels are DALI's (from :func:`gallery.sweep.render_row`); this module only stacks a
column's tiles into one picture, scales it to the size it is shown at and encodes it as JPEG.
A page holds ~50 cards, so each card uses few widget models: a header, one ``Image`` per
column and one ``ToggleButtons`` whose buttons are the "add" actions.
"""

from __future__ import annotations

import html
import os
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import ipywidgets as W
import numpy as np

from dali_gallery.pipelines.catalog import OpSpec
from dali_gallery.pipelines.display import encode_image, to_display
from dali_gallery.widgets.style import close_tree

from .sweep import RowResult

TILE_PX = 104
DISPLAY_SCALE = 2
"""Image pixels per CSS pixel of a tile: sharp on high-density screens, and a page of 50 cards
stays a few MB (at 512 px the strips would be 25 times larger than what is shown)."""
GAP_PX = 4
JPEG_QUALITY = 85

AddCallback = Callable[[str, dict[str, Any], str], None]


def slug(op: str) -> str:
    """A CSS-class-safe form of an operator name (``a.b_c`` -> ``a-b_c``)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", op)


def strip_jpeg(tiles: Sequence[np.ndarray], cell: tuple[int, int]) -> bytes:
    """The tiles of one column stacked vertically, each centred in a ``cell`` (h, w) box, as
    JPEG. A shared cell keeps the images of a card aligned across columns."""
    h, w = cell
    n = len(tiles)
    sheet = np.full((n * h + (n - 1) * GAP_PX, w, 3), 40, dtype=np.uint8)
    for i, tile in enumerate(tiles):
        a = to_display(tile)
        th, tw = min(a.shape[0], h), min(a.shape[1], w)
        y = i * (h + GAP_PX) + (h - th) // 2
        x = (w - tw) // 2
        sheet[y:y + th, x:x + tw] = a[:th, :tw]
    # never sent wider than it can be shown (the height follows)
    return encode_image(sheet, "jpeg", quality=JPEG_QUALITY,
                        fit=(TILE_PX * DISPLAY_SCALE, sheet.shape[0]))


def row_strips(result: RowResult, originals: list[np.ndarray]) -> list[bytes]:
    """The JPEG of the originals column, then one per rendered column (none if not rendered).
    The columns are encoded in parallel (Pillow releases the GIL while it scales and encodes):
    on a warm GPU gallery, encoding one column after another took longer than DALI."""
    if not result.ok:
        return []
    columns = [originals, *result.tiles]
    cell = (max(t.shape[0] for col in columns for t in col),
            max(t.shape[1] for col in columns for t in col))
    return list(_encoder_pool().map(lambda col: strip_jpeg(col, cell), columns))


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
    """The widgets of one card; ``on_add(op, params, label)`` runs when a button is clicked."""

    def __init__(self, spec: OpSpec, result: RowResult, strips: list[bytes],
                 on_add: AddCallback) -> None:
        self.op = spec.name
        self.result = result
        self._on_add = on_add
        plan = result.plan
        sweep = (f" &middot; columns: <code>{html.escape(plan.param)}</code>"
                 if plan.param else "")
        head = W.HTML(
            f"<b>{html.escape(spec.name)}</b> <small>{html.escape(spec.category)}"
            f"{' &middot; GPU only' if not spec.cpu else ''}{sweep}</small><br>"
            f"<small>{html.escape(spec.doc)}</small>")
        head.add_class("dg-gallery-head")
        self.add = W.ToggleButtons(
            options=[(c.button, k) for k, c in enumerate(plan.columns)], index=None,
            tooltips=[f"add {self.op} with {c.label} to the builder" for c in plan.columns],
            style={"button_width": f"{TILE_PX}px"})
        self.add.add_class("dg-gallery-add")
        self.add.observe(self._clicked, names="index")
        self.images = [self._image(data, "dg-gallery-tile" if k else "dg-gallery-original")
                       for k, data in enumerate(strips)]
        body: list[W.Widget] = []
        if self.images:
            original = W.HTML("original", layout=W.Layout(width=f"{TILE_PX}px"))
            original.add_class("dg-gallery-label")
            body += [W.HBox(self.images), W.HBox([original, self.add])]
        else:
            note = W.HTML(html.escape(result.unavailable or result.error or ""))
            note.add_class("dg-gallery-gpu-only" if result.unavailable else "dg-gallery-error")
            if result.error:
                note.add_class("dg-error")
            body += [note, self.add]
        self.widget = W.VBox([head, *body])
        self.widget.add_class("dg-gallery-row")
        self.widget.add_class(f"dg-gallery-row-{slug(self.op)}")

    @staticmethod
    def _image(jpeg: bytes, css: str) -> W.Image:
        img = W.Image(value=jpeg, format="jpeg", layout=W.Layout(width=f"{TILE_PX}px"))
        img.add_class(css)
        return img

    def click(self, column: int) -> None:
        """What clicking the column's add button does (tests and scripts)."""
        self.add.index = column

    def _clicked(self, change: dict[str, Any]) -> None:
        k = change["new"]
        if k is None:
            return
        self.add.index = None  # a button, not a selection: ready for the next click
        col = self.result.plan.columns[k]
        self._on_add(self.op, dict(col.params), col.label)

    def close(self) -> None:
        """Release the widgets (their comms and image bytes)."""
        close_tree(self.widget)

