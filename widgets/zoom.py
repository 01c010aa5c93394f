"""A large view of one tile with the image it started from beside it.

Tiles in the preview grid and the gallery are small; geometry (a rotation's corners, a crop's
window, a warp's curvature) needs a closer look. Both images keep their aspect ratio, and when
they fit they are shown at the same scale, so a size change (rotate with an expanded canvas, a
resize, a crop) is visible as a size change; the caption under each states its pixel size.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

import ipywidgets as w
import numpy as np

from dali_gallery.pipelines.display import to_display

from . import style
from .encode import encode

ZOOM_PX = 2 * style.TILE_MAX_PX + 40
"""CSS pixels of the large view's longer side: more than twice the widest builder tile."""
DISPLAY_SCALE = 2
"""Image pixels per CSS pixel sent for the zoom (sharp on high-density screens)."""


def zoom_sizes(tile: tuple[int, int], original: tuple[int, int],
               px: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """CSS (width, height) of the tile and of the original, from their (height, width).

    The tile's longer side gets ``px``; the original is drawn at the same scale unless that
    makes it larger than ``px``, in which case it is shrunk to ``px`` on its longer side (a
    small crop of a large image must not push the view off the screen)."""
    th, tw = max(1, tile[0]), max(1, tile[1])
    oh, ow = max(1, original[0]), max(1, original[1])
    scale = px / max(th, tw)
    o_scale = min(scale, px / max(oh, ow))
    return ((round(tw * scale), round(th * scale)), (round(ow * o_scale), round(oh * o_scale)))


class ZoomView:
    """The large tile and the original side by side; hidden until :meth:`show`.

    ``header``: a title line with a close button (the gallery); the inspector has its own.
    """

    def __init__(self, *, fmt: str = "jpeg", header: bool = True,
                 on_close: Callable[[], None] | None = None) -> None:
        self.fmt = fmt
        self.on_close = on_close
        self.title = w.HTML()
        self.large = style.classed(w.Image(format=fmt), style.ZOOM_LARGE)
        self.original = style.classed(w.Image(format=fmt), style.ZOOM_ORIGINAL)
        self.large_caption = w.HTML()
        self.original_caption = w.HTML()
        self.close_button = style.classed(w.Button(
            description="\u2715", tooltip="close the large view",
            layout=w.Layout(width="36px")), style.ZOOM_CLOSE)
        self.close_button.on_click(lambda _: self._close())
        pair = w.HBox([w.VBox([self.large, self.large_caption]),
                       w.VBox([self.original, self.original_caption])],
                      layout=w.Layout(flex_flow="row wrap", align_items="flex-start"))
        pair.add_class(style.ZOOM_PAIR)
        head = [w.HBox([self.title, self.close_button],
                       layout=w.Layout(justify_content="space-between"))] if header else []
        self.widget = style.classed(w.VBox([*head, pair], layout=w.Layout(display="none")),
                                    style.ZOOM)
        self.shown: tuple[str, ...] | None = None
        """What is shown (the caller's key), None when hidden."""

    def show(self, tile: np.ndarray, original: np.ndarray, *, title: str = "",
             px: int = ZOOM_PX, key: tuple[str, ...] = ()) -> None:
        """Show ``tile`` large (``px`` CSS pixels on its longer side) and ``original`` beside it.
        ``title`` is plain text (escaped here)."""
        t, o = to_display(tile), to_display(original)
        (tw, th), (ow, oh) = zoom_sizes(t.shape[:2], o.shape[:2], px)
        self.large.value = encode(t, self.fmt, max_side=px * DISPLAY_SCALE)
        self.original.value = encode(o, self.fmt, max_side=px * DISPLAY_SCALE)
        self.large.layout.width, self.large.layout.height = f"{tw}px", f"{th}px"
        self.original.layout.width, self.original.layout.height = f"{ow}px", f"{oh}px"
        same = max(o.shape[:2]) <= max(t.shape[:2])  # see zoom_sizes
        self.large_caption.value = _caption("this tile", t.shape)
        self.original_caption.value = _caption(
            "original" + ("" if same else " (shown smaller)"), o.shape)
        self.title.value = f"<b>{escape(title)}</b>" if title else ""
        self.shown = key
        self.widget.layout.display = None

    def hide(self) -> None:
        """Hide and drop the bytes (nothing stale stays in the page or the kernel)."""
        self.shown = None
        self.widget.layout.display = "none"
        for img in (self.large, self.original):
            img.value = b""
        self.title.value = self.large_caption.value = self.original_caption.value = ""

    def _close(self) -> None:
        self.hide()
        if self.on_close is not None:
            self.on_close()


def _caption(what: str, shape: tuple[int, ...]) -> str:
    return (f'<div style="font-size:11px;opacity:.8">{escape(what)} &middot; '
            f"{shape[1]}&times;{shape[0]} px</div>")
