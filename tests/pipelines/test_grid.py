"""The render grid lays out any tile: an empty one (no rows or columns) is drawn as a marked
placeholder instead of crashing, and extreme aspects still fit their cell.

Regression: ``dali-gallery render`` died with a ZeroDivisionError in PIL's ``thumbnail`` on a
tile with 0 rows wider than the grid's cell.
"""

from __future__ import annotations

import numpy as np

from dali_gallery.pipelines.grid import LABEL_H, grid_image
from dali_gallery.pipelines.preset import load
from dali_gallery.pipelines.render_result import Render, SampleRecord
from tests.support import preset_dict


def test_empty_and_extreme_tiles_are_laid_out():
    originals = [np.full((64, 64, 3), 200, np.uint8), np.full((3, 2000, 3), 90, np.uint8)]
    tiles = [np.zeros((0, 400, 3), np.uint8), np.zeros((4000, 0, 3), np.uint8),  # draw 0
             np.full((1, 4000, 3), 255, np.uint8), np.full((4000, 1, 3), 255, np.uint8)]
    records = [SampleRecord(i % 2, i // 2, fired={0: True}) for i in range(4)]
    render = Render(tiles, records, n_images=2, draws=2, device="cpu", built=True, ms=1.0)
    preset = load(preset_dict([{"op": "flip"}]))
    calls = []

    def decorate(i: int, c: int, tile: np.ndarray) -> np.ndarray:
        calls.append((i, c))
        return tile

    tile = 96
    sheet = np.asarray(grid_image(render, originals, preset, tile=tile, decorate=decorate))
    assert sheet.shape == (2 * (tile + LABEL_H), 3 * tile, 3)
    assert sorted(calls) == [(0, 0), (0, 2), (1, 0), (1, 2)]  # never on an empty tile
    empty = sheet[LABEL_H: LABEL_H + tile, tile: 2 * tile]  # image 0, draw 0
    assert (empty[..., 0] > empty[..., 1] + 40).any()  # the placeholder's red outline and text
    thin = sheet[LABEL_H: LABEL_H + tile, 2 * tile: 3 * tile]  # image 0, draw 1: 1x4000
    assert (thin == 255).all(axis=2).any()  # still drawn, a line across its cell
