"""Detection and segmentation labels drawn over a tile, for display only.

The tile comes from a DALI render; this module never changes its pixels for training, it draws a
copy a person looks at (as FiftyOne's or Albumentations' visualisers do) so that a label that
no longer matches the augmented image (a box left behind by a flip, a mask cut by a crop) is
seen at a glance. Category names come from uploaded annotation files: they are untrusted, so the
legend escapes them and the captions draw only characters the bitmap font has.
"""

from __future__ import annotations

import colorsys
import math
from collections.abc import Mapping
from dataclasses import dataclass
from html import escape

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from dali_gallery.pipelines.display import to_display

MASK_ALPHA = 0.4
"""Opacity of a mask fill: the image under it stays readable."""
LINE_PX = 2
"""Width of a box's lines in output pixels (so also after ``scale``: lines stay thin and crisp)."""
DASH_PX, GAP_PX = 6, 4
"""A clipped box's dash pattern along each side."""
KEYPOINT_RADIUS = 3
"""Radius of a keypoint's dot in output pixels, its dark outline included."""
OUTLINE = (24, 24, 24)
"""Keypoints' outline: dark, so a dot shows on a light image and beside a box of its colour."""
CAPTION_MAX_CHARS = 24
"""Longer names are cut: a caption must not hide the object it names."""
EDGE_EPS = 1e-3
"""Pixels' tolerance of a box edge: float32 coordinates of an edge on a pixel line stay on it."""
LEGEND = "dg-label-legend"
"""CSS class of the legend's outer element (a hook for browser tests and theming)."""

# Sasha Trubetskoy's "20 simple distinct colours", with the near-black navy swapped for a lighter
# blue-violet and the apricot (too near pink and beige) for spring green: every colour shows on a
# dark image and differs from the others at a glance.
_PALETTE: tuple[tuple[int, int, int], ...] = (
    (230, 25, 75), (60, 180, 75), (255, 225, 25), (67, 99, 216), (245, 130, 49),
    (145, 30, 180), (66, 212, 244), (240, 50, 230), (191, 239, 69), (250, 190, 212),
    (70, 153, 144), (220, 190, 255), (154, 99, 36), (255, 250, 200), (128, 0, 0),
    (170, 255, 195), (128, 128, 0), (0, 255, 150), (130, 130, 255), (169, 169, 169),
)
_GOLDEN = 0.618033988749895


def category_colour(category_id: int) -> tuple[int, int, int]:
    """RGB colour of a category, the same in every call, tile and session (a category keeps its
    colour while the user edits the chain): a fixed palette for ids 0-19, golden-ratio hues with
    alternating saturation and value after that (and for negative ids)."""
    i = int(category_id)
    if 0 <= i < len(_PALETTE):
        return _PALETTE[i]
    hue = (i * _GOLDEN) % 1.0
    sat = (0.85, 0.55)[i % 2]
    val = (0.95, 0.8)[(i // 2) % 2]
    r, g, b = colorsys.hsv_to_rgb(hue, sat, val)
    return round(r * 255), round(g * 255), round(b * 255)


def text_colour(background: tuple[int, int, int]) -> tuple[int, int, int]:
    """Black or white, whichever reads better on ``background`` (its perceived luminance)."""
    r, g, b = background
    return (0, 0, 0) if 0.299 * r + 0.587 * g + 0.114 * b > 150 else (255, 255, 255)


@dataclass(frozen=True, eq=False)  # eq=False: arrays have no truth value; identity eq and hash
class TileLabels:
    """The labels of one tile, in coordinates relative to it (they follow the tile's size).

    ``boxes`` (N, 4) left, top, right, bottom; ``classes`` (N,) category ids; ``keypoints``
    (N, K, 3) x, y, visibility (0: not labelled, not drawn; (N, K, 2): all shown); ``mask``
    (H', W'[, 1]) category map,
    0 is background, any size; ``clipped`` (N,) the chain cut this box. Lists are accepted and
    converted; shapes that do not agree raise ``ValueError`` here, not later while drawing.
    """

    boxes: np.ndarray
    classes: np.ndarray
    keypoints: np.ndarray | None = None
    mask: np.ndarray | None = None
    clipped: np.ndarray | None = None

    def __post_init__(self) -> None:
        boxes = np.asarray(self.boxes, dtype=np.float32)
        if boxes.size == 0:
            boxes = boxes.reshape(0, 4)
        if boxes.ndim != 2 or boxes.shape[1] != 4:
            raise ValueError(f"boxes must be (N, 4), got {boxes.shape}")
        n = boxes.shape[0]
        classes = np.asarray(self.classes).reshape(-1).astype(np.int32)
        if classes.shape != (n,):
            raise ValueError(f"classes must be ({n},) like the boxes, got {classes.shape}")
        object.__setattr__(self, "boxes", boxes)
        object.__setattr__(self, "classes", classes)
        if self.keypoints is not None:
            kp = np.asarray(self.keypoints, dtype=np.float32)
            if kp.size == 0 and n == 0:
                kp = kp.reshape(0, 0, 3)
            if kp.ndim != 3 or kp.shape[0] != n or kp.shape[2] not in (2, 3):
                raise ValueError(f"keypoints must be ({n}, K, 3), got {kp.shape}")
            object.__setattr__(self, "keypoints", kp)
        if self.clipped is not None:
            clipped = np.asarray(self.clipped, dtype=bool).reshape(-1)
            if clipped.shape != (n,):
                raise ValueError(f"clipped must be ({n},) like the boxes, got {clipped.shape}")
            object.__setattr__(self, "clipped", clipped)
        if self.mask is not None:
            mask = np.asarray(self.mask)
            if mask.ndim == 3 and mask.shape[2] == 1:
                mask = mask[:, :, 0]
            if mask.ndim != 2:
                raise ValueError(f"mask must be (H, W) or (H, W, 1), got {mask.shape}")
            if mask.dtype != bool and not np.issubdtype(mask.dtype, np.integer):
                raise ValueError(f"mask must hold integer category ids, got {mask.dtype}")
            object.__setattr__(self, "mask", mask.astype(np.int64))


def _rgb(tile: np.ndarray) -> np.ndarray:
    """An HxWx3 uint8 copy of any tile the renders give (gray, RGBA, CHW or float)."""
    a = np.asarray(tile)
    if a.ndim == 2:
        a = a[:, :, None]
    a = to_display(a)
    if a.shape[2] == 4:
        a = a[:, :, :3]
    if a.ndim != 3 or a.shape[2] != 3:
        raise ValueError(f"tile must be an image (H, W[, C]), got {np.shape(tile)}")
    return np.array(a, dtype=np.uint8, copy=True)


def scale_nearest(mask: np.ndarray, height: int, width: int) -> np.ndarray:
    """``mask`` resized to (height, width) by nearest neighbour: ids are never mixed into ids
    that no pixel had (bilinear would invent categories on the borders)."""
    rows = np.minimum(((np.arange(height) + 0.5) * mask.shape[0] / height).astype(np.intp),
                      mask.shape[0] - 1)
    cols = np.minimum(((np.arange(width) + 0.5) * mask.shape[1] / width).astype(np.intp),
                      mask.shape[1] - 1)
    return mask[rows[:, None], cols[None, :]]


def _blend_mask(out: np.ndarray, mask: np.ndarray) -> None:
    """Each category's pixels of ``out`` mixed with its colour (background 0 left as it is)."""
    if mask.size == 0:
        return
    ids = scale_nearest(mask, out.shape[0], out.shape[1])
    for cid in np.unique(ids):
        if cid == 0:
            continue
        where = ids == cid
        colour = np.array(category_colour(int(cid)), dtype=np.float32)
        mixed = out[where].astype(np.float32) * (1 - MASK_ALPHA) + colour * MASK_ALPHA
        out[where] = np.clip(np.rint(mixed), 0, 255).astype(np.uint8)


def box_pixels(box: np.ndarray, height: int, width: int) -> tuple[int, int, int, int] | None:
    """Inclusive pixel rectangle (x0, y0, x1, y1) of a relative box, clipped to the image; None
    for a box entirely outside it or with a coordinate that is not finite."""
    if not np.all(np.isfinite(box)):
        return None
    left, right = sorted((float(box[0]), float(box[2])))
    top, bottom = sorted((float(box[1]), float(box[3])))
    if right <= 0 or bottom <= 0 or left >= 1 or top >= 1:
        return None
    # EDGE_EPS: float32 0.8 * 60 is 48.0000007, which must end at pixel 47 as 48.0 does
    x0 = min(max(math.floor(left * width + EDGE_EPS), 0), width - 1)
    y0 = min(max(math.floor(top * height + EDGE_EPS), 0), height - 1)
    x1 = min(max(math.ceil(right * width - EDGE_EPS) - 1, x0), width - 1)
    y1 = min(max(math.ceil(bottom * height - EDGE_EPS) - 1, y0), height - 1)
    return x0, y0, x1, y1


def _dashed_rectangle(draw: ImageDraw.ImageDraw, rect: tuple[int, int, int, int],
                      colour: tuple[int, int, int]) -> None:
    """A ``LINE_PX`` rectangle in dashes, inside ``rect`` like ``ImageDraw.rectangle``'s lines."""
    x0, y0, x1, y1 = rect
    w = LINE_PX - 1
    for x in range(x0, x1 + 1, DASH_PX + GAP_PX):
        end = min(x + DASH_PX - 1, x1)
        draw.rectangle((x, y0, end, min(y0 + w, y1)), fill=colour)
        draw.rectangle((x, max(y1 - w, y0), end, y1), fill=colour)
    for y in range(y0, y1 + 1, DASH_PX + GAP_PX):
        end = min(y + DASH_PX - 1, y1)
        draw.rectangle((x0, y, min(x0 + w, x1), end), fill=colour)
        draw.rectangle((max(x1 - w, x0), y, x1, end), fill=colour)


def caption_text(category_id: int, names: Mapping[int, str]) -> str:
    """The caption of a category: its name, or ``#id`` where it has none, cut to
    ``CAPTION_MAX_CHARS`` and limited to printable Latin-1 (all the bitmap font can draw)."""
    name = names.get(int(category_id))
    text = str(name) if name else f"#{int(category_id)}"
    text = "".join(c if c.isprintable() and ord(c) < 256 else "?" for c in text)
    return text if len(text) <= CAPTION_MAX_CHARS else text[: CAPTION_MAX_CHARS - 1] + "~"


def _caption(draw: ImageDraw.ImageDraw, font: ImageFont.ImageFont, at: tuple[int, int],
             text: str, colour: tuple[int, int, int], size: tuple[int, int]) -> None:
    """A filled caption with its top-left at ``at``, moved (and cut) to stay inside the image."""
    width, height = size
    while text and draw.textlength(text, font=font) + 4 > width:
        text = text[:-1]
    if not text:
        return
    _, _, tw, th = draw.textbbox((0, 0), text, font=font)
    w, h = tw + 4, th + 3
    x = min(max(at[0], 0), max(width - w, 0))
    y = min(max(at[1], 0), max(height - h, 0))
    draw.rectangle((x, y, x + w - 1, y + h - 1), fill=colour)
    draw.text((x + 2, y + 1), text, font=font, fill=text_colour(colour))


def _font() -> ImageFont.ImageFont:
    """Pillow's built-in bitmap font: no font file to ship or find, same pixels everywhere."""
    loader = getattr(ImageFont, "load_default_imagefont", None)  # Pillow >= 10.1
    return loader() if loader is not None else ImageFont.load_default()  # type: ignore[return-value]


def draw_labels(tile: np.ndarray, labels: TileLabels, names: Mapping[int, str],
                *, scale: int = 1) -> np.ndarray:
    """A new HxWx3 uint8 copy of ``tile`` (times ``scale``) with the labels drawn: masks as
    translucent fills, boxes as rectangles (dashed where the chain clipped them) with a caption,
    keypoints as outlined dots. ``tile`` is not modified.

    ``scale`` > 1 enlarges the tile first (nearest neighbour) and draws on that, so a small tile
    shown large (click-to-zoom) has thin crisp lines rather than blurred fat ones. Parts of boxes
    outside the tile are cut off; boxes and keypoints wholly outside are skipped.
    """
    if int(scale) != scale or scale < 1:
        raise ValueError(f"scale must be a whole number >= 1, got {scale!r}")
    out = _rgb(tile)
    if scale > 1:
        out = np.repeat(np.repeat(out, scale, axis=0), scale, axis=1)
    height, width = out.shape[:2]
    if height == 0 or width == 0:
        return out
    if labels.mask is not None:
        _blend_mask(out, labels.mask)
    image = Image.fromarray(out)
    draw = ImageDraw.Draw(image)
    clipped = labels.clipped if labels.clipped is not None else np.zeros(len(labels.boxes), bool)
    captions: list[tuple[tuple[int, int], str, tuple[int, int, int]]] = []
    for box, cid, cut in zip(labels.boxes, labels.classes, clipped, strict=True):
        rect = box_pixels(box, height, width)
        if rect is None:
            continue
        colour = category_colour(int(cid))
        if cut:
            _dashed_rectangle(draw, rect, colour)
        else:
            draw.rectangle(rect, outline=colour, width=LINE_PX)
        captions.append(((rect[0], rect[1]), caption_text(int(cid), names), colour))
    font = _font()
    for at, text, colour in captions:  # after every box: no box line crosses a caption
        _caption(draw, font, at, text, colour, (width, height))
    if labels.keypoints is not None:
        r = KEYPOINT_RADIUS
        for points, cid in zip(labels.keypoints, labels.classes, strict=True):
            colour = category_colour(int(cid))
            for point in points:
                visible = point[2] > 0 if point.shape[0] > 2 else True
                if not visible or not np.all(np.isfinite(point[:2])):
                    continue
                x, y = float(point[0]) * width, float(point[1]) * height
                if not (0 <= x <= width and 0 <= y <= height):
                    continue
                cx, cy = min(int(x), width - 1), min(int(y), height - 1)
                draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour, outline=OUTLINE)
    return np.asarray(image, dtype=np.uint8).copy()


def labels_legend_html(names: Mapping[int, str], counts: Mapping[int, int]) -> str:
    """A small HTML legend, one row per category in ``counts`` (by id): its colour, its name
    (``#id`` where ``names`` has none) and how many labels it has. Names are escaped: they come
    from uploaded annotation files, and the legend is shown as HTML."""
    rows = []
    for cid in sorted(int(c) for c in counts):
        r, g, b = category_colour(cid)
        name = names.get(cid)
        label = escape(str(name), quote=True) if name else f"#{cid}"
        rows.append(
            '<div style="display:flex;align-items:center;gap:6px;line-height:1.4">'
            f'<span style="display:inline-block;width:12px;height:12px;border-radius:2px;'
            f'background:rgb({r},{g},{b});border:1px solid rgba(0,0,0,0.4)"></span>'
            f'<span>{label}</span>'
            f'<span style="margin-left:auto;opacity:0.7">{int(counts[cid])}</span></div>')
    if not rows:
        rows.append('<div style="opacity:0.7">no labels</div>')
    return (f'<div class="{LEGEND}" style="font-size:12px;display:inline-flex;'
            f'flex-direction:column;gap:2px;min-width:8em">{"".join(rows)}</div>')
