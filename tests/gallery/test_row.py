"""A gallery card's column picture: DALI's tiles stacked, aligned, and sent no larger than the
page can show them."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from dali_gallery.gallery.row import DISPLAY_SCALE, TILE_PX, strip_jpeg


def tiles(side: int, colours: list[tuple[int, int, int]]) -> list[np.ndarray]:
    return [np.full((side, side, 3), c, dtype=np.uint8) for c in colours]


def decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)


def test_large_tiles_are_scaled_to_the_display_size():
    colours = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (220, 220, 40)]
    sheet = decode(strip_jpeg(tiles(512, colours), (512, 512)))
    assert sheet.shape[1] == TILE_PX * DISPLAY_SCALE
    gap = 4 * sheet.shape[1] / 512
    assert abs(sheet.shape[0] - round((4 * 512 + 3 * 4) * sheet.shape[1] / 512)) <= 1
    step = sheet.shape[0] / 4
    for k, colour in enumerate(colours):  # each tile keeps its place and colour
        y = int(k * step + step / 2 - gap)
        centre = sheet[y, sheet.shape[1] // 2]
        assert np.abs(centre - np.array(colour)).max() < 12, (k, centre, colour)


def test_small_tiles_are_kept_as_they_are():
    sheet = decode(strip_jpeg(tiles(96, [(10, 120, 250)] * 2), (100, 120)))
    assert sheet.shape[:2] == (2 * 100 + 4, 120)
    assert np.abs(sheet[50, 60] - np.array((10, 120, 250))).max() < 12
    assert np.abs(sheet[1, 1] - 40).max() < 12  # the margin of a smaller tile in its cell
