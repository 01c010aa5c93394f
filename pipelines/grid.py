"""Lay out a render as a grid image and as an .npz batch (the exported script's layout).

The pixels come from the DALI render; this module only places tiles side by side and writes
labels, so a PNG of the grid can be shared or attached to an issue.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from .display import to_display
from .preset import Group, Preset
from .render_result import Render

LABEL_H = 14


def fired_label(render: Render, preset: Preset, image: int, draw: int) -> str:
    """Short names of the steps that fired on one tile (``-`` when none did)."""
    rec = render.record(image, draw)
    names = []
    for i, step in preset.active_steps():
        if isinstance(step, Group):  # the children that ran
            names += [c.op.split(".")[-1] for j, c in step.active_children()
                      if rec.child_ran(i, j)]
        elif rec.fired.get(i, True):
            names.append(step.op.split(".")[-1])
    return ", ".join(names) or "-"


Decorate = Callable[[int, int, np.ndarray], np.ndarray]
"""(image, column, tile) -> the tile to show (column 0: the original, then draw + 1)."""


def grid_image(render: Render, originals: list[np.ndarray], preset: Preset,
               tile: int = 192, decorate: Decorate | None = None) -> Image.Image:
    """Rows are images; the first column is the original, then one column per draw.
    ``decorate`` draws on each tile first (the CLI draws labels with it)."""
    cols = render.draws + 1
    rows = render.n_images
    sheet = Image.new("RGB", (cols * tile, rows * (tile + LABEL_H)), (32, 32, 32))
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default()
    for i in range(rows):
        y = i * (tile + LABEL_H)
        cells = [(originals[i], "original")]
        cells += [(render.tile(i, d), fired_label(render, preset, i, d))
                  for d in range(render.draws)]
        for c, (img, label) in enumerate(cells):
            x = c * tile
            draw.text((x + 3, y + 1), label[: tile // 6], fill=(230, 230, 230), font=font)
            if 0 in np.shape(img)[:2]:  # nothing to scale (PIL's thumbnail divides by it)
                _empty_tile(draw, x, y + LABEL_H, tile, np.shape(img))
                continue
            pic = Image.fromarray(to_display(img if decorate is None else decorate(i, c, img)))
            pic.thumbnail((tile, tile))
            sheet.paste(pic, (x + (tile - pic.width) // 2, y + LABEL_H + (tile - pic.height) // 2))
    return sheet


def _empty_tile(draw: ImageDraw.ImageDraw, x: int, y: int, tile: int,
                shape: tuple[int, ...]) -> None:
    """A placeholder for an image with no rows or columns: a grid of a broken chain must still
    show the other tiles and say which one was empty."""
    draw.rectangle((x + 2, y + 2, x + tile - 3, y + tile - 3), outline=(160, 60, 60))
    size = "x".join(str(v) for v in shape[1::-1]) if len(shape) >= 2 else "?"
    draw.text((x + 6, y + tile // 2 - 6), f"empty ({size} px)"[: tile // 6], fill=(230, 120, 120),
              font=ImageFont.load_default())


def save_npz(path: str | Path, images: list[np.ndarray], labels: list[int] | None = None) -> None:
    """The exported script's --out layout: image_0000, image_0001, ... and labels."""
    arrays = {f"image_{i:04d}": img for i, img in enumerate(images)}
    arrays["labels"] = np.array(labels if labels is not None else range(len(images)),
                                dtype=np.int32)
    np.savez(path, **arrays)


def output_problem(path: str | Path, picture: bool = False) -> str | None:
    """Why a render could not write ``path`` (None: it can), asked before rendering so that a
    typo does not cost the render; ``picture``: a grid image, whose type its extension picks
    (PIL's writers: .png, .jpg, .webp ...)."""
    p = Path(path)
    if not p.parent.is_dir():
        return f"its folder {str(p.parent)!r} does not exist"
    if p.is_dir():
        return "it is a folder; expected a file name"
    if picture:
        ext = p.suffix.lower()
        known = Image.registered_extensions()
        if known.get(ext) not in Image.SAVE:
            return (f"{ext or 'a name without extension'} is not an image type PIL writes; "
                    "expected .png or .jpg (or another type PIL writes)")
    return None

