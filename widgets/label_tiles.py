"""Display bytes of tiles with their labels drawn over them (the labelled path of the preview).

Only used when annotations are loaded and "show labels" is on: the unlabelled path keeps the
engine's own encoding (nvImageCodec on a GPU). Labels are drawn after the picture is shrunk to
its display size, so lines and captions keep their size on screen whatever the render's size.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from PIL import Image

from dali_gallery.pipelines.display import to_display
from dali_gallery.pipelines.engine import Render
from dali_gallery.pipelines.label_render import LabelOutput, SampleLabels

from .encode import encode
from .label_overlay import TileLabels, draw_labels
from .label_report import input_tile_labels, tile_labels, track

ZOOM_TARGET = 1024
"""The large view draws its labels on the tile enlarged (nearest) to about this many pixels, so
lines stay thin and crisp when it is shown large."""


@dataclass
class TileLabelView:
    """One tile's labels for the inspector: the image's labels before the chain, what the
    render did to them, category names, the drop threshold and whether to draw them."""

    before: SampleLabels
    after: LabelOutput
    names: dict[int, str]
    min_kept: float
    overlay: bool

    def drawn(self, tile: np.ndarray, original: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(tile, original) enlarged and drawn for the large view."""
        clipped = track(len(self.before.boxes), self.after, self.min_kept).clipped
        t, o = shrunk(tile, ZOOM_TARGET), shrunk(original, ZOOM_TARGET)
        return (draw_labels(t, tile_labels(self.after, clipped), self.names, scale=zoom_scale(t)),
                draw_labels(o, input_tile_labels(self.before), self.names, scale=zoom_scale(o)))


def zoom_scale(image: np.ndarray) -> int:
    """A whole enlargement of ``image`` towards :data:`ZOOM_TARGET` pixels (1 to 4)."""
    return max(1, min(4, ZOOM_TARGET // max(1, *image.shape[:2])))


def shrunk(image: np.ndarray, max_side: int) -> np.ndarray:
    """An HWC uint8 copy of ``image`` at most ``max_side`` on a side (display only)."""
    a = to_display(image)
    if max(a.shape[:2]) <= max_side:
        return a
    pic = Image.fromarray(np.ascontiguousarray(a[:, :, :3]))
    pic.thumbnail((max_side, max_side), Image.Resampling.BILINEAR)
    return np.asarray(pic)


def overlay_bytes(image: np.ndarray, labels: TileLabels, names: Mapping[int, str],
                  max_side: int) -> bytes:
    """JPEG bytes of ``image`` with ``labels`` drawn, at most ``max_side`` on a side."""
    return encode(draw_labels(shrunk(image, max_side), labels, names), "jpeg")


def overlay_originals(images: Sequence[np.ndarray], labels: Sequence[SampleLabels],
                      names: Mapping[int, str], max_side: int) -> list[bytes]:
    """The originals with their input labels drawn."""
    return [overlay_bytes(a, input_tile_labels(s), names, max_side)
            for a, s in zip(images, labels, strict=True)]


def overlay_tiles(render: Render, before: Sequence[SampleLabels], names: Mapping[int, str],
                  min_kept: float, max_side: int) -> tuple[list[bytes], float]:
    """Every tile of ``render`` with its moved labels drawn (clipped boxes dashed), and the
    milliseconds it took. ``before``: each image's labels as fed (sample j is image j % n)."""
    assert render.labels is not None
    t0 = time.perf_counter()
    n = render.n_images
    out = []
    for j, (image, moved) in enumerate(zip(render.images, render.labels, strict=True)):
        clipped = track(len(before[j % n].boxes), moved, min_kept).clipped
        out.append(overlay_bytes(image, tile_labels(moved, clipped), names, max_side))
    return out, (time.perf_counter() - t0) * 1000
