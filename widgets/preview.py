"""The preview grid: rows are images, the first column the original, then K draws.

Tiles are ``ipywidgets.Image`` widgets whose bytes are replaced in place when a render lands,
so the layout never jumps while a slider is dragged. Tiles are letterboxed in square cells
that share the row's width (CSS in :mod:`.style`), so an image keeps its aspect ratio at any
number of draws and tiles grow when there are fewer. A tile's caption lists every step that
fired on it (wrapped, never cut). Clicking a tile or its caption opens the inspector (a large
view with the original beside it, the values drawn, histograms) right under that tile's row.
The grid widgets are rebuilt only when the number of images or draws changes.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.images import ORIGINAL_SIZE, PREVIEW_SIZES

from . import style
from .inspector import Inspector
from .style import shared_layout

SIZES: tuple[tuple[str, int], ...] = (
    *((f"{s} px", s) for s in PREVIEW_SIZES), ("original", ORIGINAL_SIZE))
"""Longest image side the preview decodes to (:data:`pipelines.images.PREVIEW_SIZES`); 0 =
original size (exact export parity)."""
MAX_DRAWS = 8
PARITY_NOTE = ("Draw 0 of every image is exactly the first batch of the exported pipeline "
               "on the same files when the size is <b>original</b>; smaller sizes shrink the "
               "inputs before augmenting (faster, close but not identical).")


def cell_width(columns: int) -> str:
    """CSS width of one cell of a row of ``columns`` cells: an equal share of the preview's
    width (``cqw``: the rows box is a size container), from ``style.TILE_MIN_PX`` to
    ``style.TILE_MAX_PX``. Fewer draws, larger tiles; a fixed square would squash them."""
    gaps = (columns - 1) * style.CELL_GAP_PX
    return (f"clamp({style.TILE_MIN_PX}px, calc((100cqw - {gaps}px) / {columns}), "
            f"{style.TILE_MAX_PX}px)")


def zoom_side(columns: int) -> str:
    """CSS length of the inspector's large view: twice a cell (and a little), never wider than
    the preview."""
    return f"min(calc(2 * {cell_width(columns)} + 8px), calc(100cqw - 40px))"


class PreviewGrid:
    """Controls (draws, images, size, seed, new draw), the tile grid and the status line."""

    def __init__(self, *, draws: int, count: int, max_images: int, size: int, seed: int,
                 on_settings: Callable[[str, Any], None],
                 on_inspect: Callable[[int, int], None]) -> None:
        self.on_settings = on_settings
        self.on_inspect = on_inspect
        self._quiet = False
        self._retired = style.Retired()  # rows taken off the page (see style.RETIRE_S)
        self._rows_made = 0
        self.draws = style.classed(w.IntSlider(
            value=draws, min=1, max=MAX_DRAWS, description="draws", continuous_update=False,
            tooltip="independent random draws per image (columns)",
            style={"description_width": "44px"}, layout=shared_layout(width="190px")), style.DRAWS)
        self.count = style.classed(w.IntSlider(
            value=count, min=1, max=max(1, max_images), description="images",
            continuous_update=False, tooltip="how many images (rows) to preview",
            style={"description_width": "48px"}, layout=shared_layout(width="190px")),
            style.N_IMAGES)
        self.size = style.classed(w.Dropdown(
            options=list(SIZES), value=size if size in dict(SIZES).values() else 256,
            description="size", tooltip="longest side the images are decoded to for the "
            "preview; 'original' gives exact parity with the exported pipeline",
            style={"description_width": "32px"}, layout=shared_layout(width="140px")), style.SIZE)
        self.seed = style.classed(w.BoundedIntText(
            value=seed, min=0, max=2**31 - 1, description="seed",
            tooltip="the pipeline seed (saved in the preset and the exported code)",
            style={"description_width": "34px"}, layout=shared_layout(width="150px")), style.SEED)
        self.new_draw = style.classed(w.Button(
            description="new draw", icon="dice", tooltip="pick a new random seed (the "
            "exported code uses it too)", layout=shared_layout(width="110px")), style.NEW_DRAW)
        self.status = style.classed(w.HTML(), style.STATUS)
        self.error = style.classed(w.HTML(layout=w.Layout(display="none")), style.ERROR)
        note = w.HTML(f'<div style="opacity:.7;font-size:12px">{PARITY_NOTE}</div>')
        self.rows = style.classed(w.VBox(), style.PREVIEW_ROWS)
        self.inspector = Inspector(on_show=self._place_inspector)
        self._rows: list[w.HBox] = []
        self._inspector_row: int | None = None
        controls = w.HBox([self.draws, self.count, self.size, self.seed, self.new_draw],
                          layout=shared_layout(flex_flow="row wrap", align_items="center"))
        self.widget = style.classed(w.VBox([controls, note, self.status, self.error, self.rows]),
                                    style.PREVIEW)
        self.originals: list[w.Image] = []
        self.tiles: list[list[w.Image]] = []
        self.captions: list[list[w.Button]] = []
        self.names: list[w.HTML] = []
        for name, wd in (("draws", self.draws), ("count", self.count), ("size", self.size),
                         ("seed", self.seed)):
            wd.observe(self._forward(name), "value")
        self.new_draw.on_click(lambda _: self.on_settings("new_draw", None))

    # ---- shape --------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, int]:
        """(images, draws) the grid currently has tiles for."""
        return len(self.tiles), (len(self.tiles[0]) if self.tiles else 0)

    def layout(self, n: int, draws: int) -> None:
        """Rebuild the tile widgets for n images x draws (blank until a render lands)."""
        if (n, draws) == self.shape:
            return
        old = self._rows
        self._rows_made += 1
        self.originals, self.tiles, self.captions, self.names = [], [], [], []
        rows = []
        width = cell_width(draws + 1)
        self.inspector.zoom_side = zoom_side(draws + 1)
        for i in range(n):
            original = style.classed(w.Image(format="jpeg"), style.PREVIEW_ORIGINAL)
            name = style.classed(w.HTML(), style.PREVIEW_NAME)
            cells = [style.classed(w.VBox([original, name], layout=shared_layout(width=width)),
                                   style.PREVIEW_CELL)]
            tiles, captions = [], []
            for d in range(draws):
                tile = style.classed(w.Image(format="jpeg"), style.PREVIEW_TILE)
                zoom = style.classed(w.Button(
                    description="", tooltip="a large view of this tile with the original "
                    "beside it, and what fired on it"), style.TILE_ZOOM)
                caption = style.classed(w.Button(
                    description=f"draw {d}", tooltip="inspect this tile: which steps fired, "
                    "the sampled values and before/after histograms"), style.TILE_INSPECT)
                zoom.on_click(self._inspect(i, d))
                caption.on_click(self._inspect(i, d))
                box = style.classed(w.Box([tile, zoom]), style.TILE_BOX)
                cell = w.VBox([box, caption], layout=shared_layout(width=width))
                cells.append(style.classed(cell, style.PREVIEW_CELL))
                tiles.append(tile)
                captions.append(caption)
            self.originals.append(original)
            self.names.append(name)
            self.tiles.append(tiles)
            self.captions.append(captions)
            rows.append(style.classed(w.HBox(cells, layout=shared_layout(
                flex_flow="row nowrap", align_items="flex-start")), style.PREVIEW_ROW))
        self._rows = rows
        selected = self.inspector.selected
        if selected is not None and not (selected[0] < n and selected[1] < draws):
            self.inspector.hide()  # its tile is gone: never show a tile that is not there
        self._arrange()
        self._retired.add(old)  # closed later: a page may still be making their views

    def _place_inspector(self, image: int) -> None:
        """Put the inspector right under the row of ``image`` (the tile that was clicked)."""
        self._inspector_row = image
        self._arrange()

    def _arrange(self) -> None:
        children: list[w.Widget] = list(self._rows)
        at = self._inspector_row
        if at is not None and at < len(children):
            children.insert(at + 1, self.inspector.widget)
        if tuple(children) != self.rows.children:
            self.rows.children = children

    # ---- content ------------------------------------------------------------------------------

    def show_originals(self, images: list[bytes], names: list[str]) -> None:
        for i, (img, name) in enumerate(zip(self.originals, self.names, strict=True)):
            if i < len(images):
                img.value = images[i]
                name.value = (f'<div title="{escape(names[i])}" style="font-size:11px;'
                              f'white-space:nowrap;overflow:hidden;text-overflow:ellipsis">'
                              f"{escape(names[i])}</div>")

    def show_tiles(self, tiles: list[list[bytes]], captions: list[list[str]]) -> None:
        """``tiles[i][d]``: bytes of draw d of image i (shape must match :attr:`shape`)."""
        for i, row in enumerate(tiles):
            for d, data in enumerate(row):
                self.tiles[i][d].value = data
                caption = self.captions[i][d]
                caption.description = captions[i][d]
                caption.tooltip = (f"fired on this tile: {captions[i][d]}; click to inspect "
                                   "the values drawn" if captions[i][d] != "-" else
                                   "no step fired on this tile; click to inspect it")

    def show_error(self, message: str | None) -> None:
        """A render failure not tied to one step, above the (kept) last good tiles."""
        self.error.value = f"<b>render failed:</b> {escape(message)}" if message else ""
        self.error.layout.display = None if message else "none"

    def set_values(self, **values: Any) -> None:
        """Show settings changed elsewhere (seed after undo, count clamped to the images)."""
        self._quiet = True
        try:
            for name, value in values.items():
                wd = getattr(self, name)
                if name == "count":
                    wd.max = max(1, value[1])
                    value = value[0]
                wd.value = value
        finally:
            self._quiet = False

    def close(self) -> None:
        self._retired.close()
        style.close_tree(self.widget)

    # ---- internals ----------------------------------------------------------------------------

    def _forward(self, name: str) -> Callable[[dict[str, Any]], None]:
        def handler(change: dict[str, Any]) -> None:
            if not self._quiet:
                self.on_settings(name, change["new"])
        return handler

    def _inspect(self, i: int, d: int) -> Callable[[w.Button], None]:
        rows = self._rows_made  # a retired row's click (it stays open a while) inspects nothing
        return lambda _: self.on_inspect(i, d) if rows == self._rows_made else None
