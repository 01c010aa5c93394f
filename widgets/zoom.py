"""A large view of one tile with the image it started from beside it.

Tiles in the preview grid and the gallery are small; geometry (a rotation's corners, a crop's
window, a warp's curvature) needs a closer look. Both images are letterboxed in square boxes like
the tiles (aspect ratio kept), and the boxes are sized so both are shown at the same scale when
that fits, so a size change (rotate with an expanded canvas, a resize) is visible as one; the
caption under each states its pixel size. The large view never shrinks; where the page is too
narrow for both at that scale, the original beside it gets smaller rather than moving below.
"""

from __future__ import annotations

from collections.abc import Callable
from html import escape

import ipywidgets as w
import numpy as np

from dali_gallery.pipelines.display import to_display

from . import style
from .encode import encode

ZOOM_PX = 400
"""CSS pixels of the large view's (square) box where the caller gives no other length."""
ENCODE_MAX_SIDE = 1280
"""Longest side of the bytes sent for the zoom (preview sizes are smaller: sent as rendered)."""


def original_factor(tile: tuple[int, int], original: tuple[int, int]) -> float:
    """Side of the original's box as a fraction of the tile's, from their (height, width):
    the same scale (a box side is an image's longer side), unless the original is the larger
    one (a small crop of a large image must not push the view off the screen)."""
    return min(1.0, max(1, *original) / max(1, *tile))


def css_times(side: str, factor: float) -> str:
    """``side`` (any CSS length: ``400px``, ``min(...)``) times ``factor``."""
    if side.endswith("px") and side[:-2].replace(".", "", 1).isdigit():
        return f"{float(side[:-2]) * factor:.2f}px"
    return f"calc({side} * {factor:.4f})"


class ZoomView:
    """The large tile and the original side by side; hidden until :meth:`show`.

    ``header``: a title line with a close button (the gallery); the inspector has its own.
    """

    def __init__(self, *, fmt: str = "jpeg", header: bool = True,
                 on_close: Callable[[], None] | None = None) -> None:
        self.fmt = fmt
        self.on_close = on_close
        # static parts share their layouts and styles (a page restores every model); the two
        # images' widths and the view's display change, so those layouts are their own
        static, text = style.shared_layout(), style.shared_style(w.HTML)
        self.title = w.HTML(layout=static, style=text)
        self.large = style.classed(w.Image(format=fmt), style.ZOOM_LARGE)
        self.original = style.classed(w.Image(format=fmt), style.ZOOM_ORIGINAL)
        self.large_caption = w.HTML(layout=static, style=text)
        self.original_caption = w.HTML(layout=static, style=text)
        self.close_button = style.classed(w.Button(
            description="\u2715", tooltip="close the large view",
            layout=style.shared_layout(width="36px"), style=style.shared_style(w.Button)),
            style.ZOOM_CLOSE)
        self.close_button.on_click(lambda _: self._close())
        pair = w.HBox([w.VBox([self.large, self.large_caption], layout=static),
                       w.VBox([self.original, self.original_caption], layout=static)],
                      layout=style.shared_layout(flex_flow="row nowrap",
                                                 align_items="flex-start"))
        pair.add_class(style.ZOOM_PAIR)
        head = [w.HBox([self.title, self.close_button], layout=style.shared_layout(
            justify_content="space-between"))] if header else []
        self.widget = style.classed(w.VBox([*head, pair], layout=w.Layout(display="none")),
                                    style.ZOOM)
        self.shown: tuple[str, ...] | None = None
        """What is shown (the caller's key), None when hidden."""

    def show(self, tile: np.ndarray, original: np.ndarray, *, title: str = "",
             side: str = f"{ZOOM_PX}px", key: tuple[str, ...] = (),
             sizes: tuple[tuple[int, ...], tuple[int, ...]] | None = None) -> None:
        """Show ``tile`` large, letterboxed in a square box of side ``side`` (a CSS length), and
        ``original`` beside it. ``title`` is plain text (escaped here). ``sizes``: the shapes
        the pictures stand for, when they were enlarged to draw on them (labels)."""
        t, o = to_display(tile), to_display(original)
        ts, os_ = sizes if sizes is not None else (t.shape, o.shape)
        factor = original_factor(ts[:2], os_[:2])
        self.large.value = encode(t, self.fmt, max_side=ENCODE_MAX_SIDE)
        self.original.value = encode(o, self.fmt, max_side=ENCODE_MAX_SIDE)
        self.large.layout.width = side  # square boxes: the stylesheet's aspect-ratio
        self.original.layout.width = css_times(side, factor)
        same = max(os_[:2]) <= max(ts[:2])  # see original_factor
        self.large_caption.value = _caption("this tile", ts)
        self.original_caption.value = _caption(
            "original" + ("" if same else " (shown smaller)"), os_)
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
