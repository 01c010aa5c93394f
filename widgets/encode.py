"""Display bytes for image widgets: DALI's pixels encoded with Pillow, and histograms.

Encoding is display only: the pixels come from the DALI render. Tiles larger than the display
size (the "original" size option) are shrunk for display after rendering, never before.
"""

from __future__ import annotations

import io
import time

import numpy as np

from dali_gallery.pipelines.display import encode_image, to_display

JPEG_QUALITY = 90


def encode(array: np.ndarray, fmt: str = "jpeg", max_side: int | None = None) -> bytes:
    """JPEG or PNG bytes of one HWC (or CHW float) image, at most ``max_side`` on a side."""
    fit = (max_side, max_side) if max_side is not None else None
    return encode_image(array, fmt, quality=JPEG_QUALITY, fit=fit)


def encode_all(arrays: list[np.ndarray], fmt: str = "jpeg",
               max_side: int | None = None) -> tuple[list[bytes], float]:
    """Encoded tiles and the milliseconds it took (reported apart from render time)."""
    t0 = time.perf_counter()
    out = [encode(a, fmt, max_side) for a in arrays]
    return out, (time.perf_counter() - t0) * 1000


def histogram_png(before: np.ndarray, after: np.ndarray, *, title_before: str = "original",
                  title_after: str = "augmented", width_in: float = 6.0) -> bytes:
    """Per-channel (R, G, B) histograms before and after, side by side, as PNG bytes.

    Uses matplotlib's object API (no pyplot state), so it is safe off the main thread."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_in, 2.1), dpi=90)
    axes = fig.subplots(1, 2, sharey=True)
    top = 0.0
    for ax, img, title in ((axes[0], before, title_before), (axes[1], after, title_after)):
        a = to_display(img)
        for c, colour in enumerate(("#d62728", "#2ca02c", "#1f77b4")):
            counts = np.bincount(a[..., c].ravel(), minlength=256)
            frac = counts / max(1, counts.sum())
            ax.plot(np.arange(256), frac, color=colour, lw=1)
            top = max(top, float(frac[1:255].max()))  # fill/clipping spikes at 0 and 255
        ax.set_title(title, fontsize=9)
        ax.set_xlim(0, 255)
        ax.tick_params(labelsize=7)
    axes[0].set_ylim(0, top * 1.15 or 1)  # would flatten the rest; they go off the top
    axes[0].set_ylabel("fraction", fontsize=8)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()
