"""A gallery card's column picture: DALI's tiles stacked, aligned, letterboxed (never
stretched), sent no larger than the page shows them, shown at the size the user picked; and the
buttons over the tiles that open the zoom view land on the image they cover."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from dali_gallery.gallery.row import (
    COLUMN_GAP_PX,
    DISPLAY_SCALE,
    GAP_PX,
    Row,
    Strips,
    row_strips,
    strip_jpeg,
    tile_px,
)
from dali_gallery.gallery.sweep import RowResult, plan_row
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.images import PREVIEW_SIZES

PX = tile_px(256)


def tiles(side: int, colours: list[tuple[int, int, int]]) -> list[np.ndarray]:
    return [np.full((side, side, 3), c, dtype=np.uint8) for c in colours]


def decode(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)


def test_large_tiles_are_scaled_to_the_display_size():
    colours = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (220, 220, 40)]
    sheet = decode(strip_jpeg(tiles(512, colours), (512, 512), PX))
    assert sheet.shape[1] == PX * DISPLAY_SCALE
    gap = 4 * sheet.shape[1] / 512
    assert abs(sheet.shape[0] - round((4 * 512 + 3 * 4) * sheet.shape[1] / 512)) <= 1
    step = sheet.shape[0] / 4
    for k, colour in enumerate(colours):  # each tile keeps its place and colour
        y = int(k * step + step / 2 - gap)
        centre = sheet[y, sheet.shape[1] // 2]
        assert np.abs(centre - np.array(colour)).max() < 12, (k, centre, colour)


def test_small_tiles_are_kept_as_they_are():
    sheet = decode(strip_jpeg(tiles(96, [(10, 120, 250)] * 2), (100, 120), PX))
    assert sheet.shape[:2] == (2 * 100 + 4, 120)
    assert np.abs(sheet[50, 60] - np.array((10, 120, 250))).max() < 12
    assert np.abs(sheet[1, 1] - 40).max() < 12  # the margin of a smaller tile in its cell


def test_every_size_is_shown_at_its_own_width():
    """The size control used to change only the decode size: tiles stayed 104 CSS px."""
    widths = [tile_px(s) for s in PREVIEW_SIZES]
    assert widths == sorted(set(widths)), widths
    assert tile_px(512) == 2 * tile_px(256)
    big = decode(strip_jpeg(tiles(512, [(200, 30, 30)]), (512, 512), tile_px(512)))
    small = decode(strip_jpeg(tiles(512, [(200, 30, 30)]), (512, 512), tile_px(256)))
    assert big.shape[1] == 2 * small.shape[1] == tile_px(512) * DISPLAY_SCALE


def red_extent(sheet: np.ndarray) -> tuple[int, int]:
    red = (sheet[..., 0] > 150) & (sheet[..., 1] < 90)
    ys, xs = np.nonzero(red)
    return int(xs.max() - xs.min() + 1), int(ys.max() - ys.min() + 1)


def test_a_wide_and_a_tall_image_share_a_cell_without_being_stretched():
    wide = np.full((100, 200, 3), (220, 30, 30), dtype=np.uint8)
    tall = np.full((200, 100, 3), (220, 30, 30), dtype=np.uint8)
    result = RowResult(plan_row(CATALOG["brightness"]), [[wide, tall]] * 4)
    strips = row_strips(result, [wide, tall], PX)
    assert strips.cell == (200, 200) and strips.count == 2 and len(strips.jpegs) == 5
    sheet = decode(strips.jpegs[1])
    half = sheet.shape[0] // 2
    w, h = red_extent(sheet[:half])
    assert abs(w / h - 2) < 0.05, (w, h)
    w, h = red_extent(sheet[half:])
    assert abs(h / w - 2) < 0.05, (w, h)


def test_the_originals_column_is_encoded_once_for_the_same_images():
    """Every card shows the same originals: encoded once; other arrays (equal content,
    other objects), another cell or another width get their own picture."""
    a, b = tiles(64, [(200, 30, 30), (30, 30, 200)])
    result = RowResult(plan_row(CATALOG["brightness"]), [[a, b]] * 4)
    first = row_strips(result, [a, b], PX)
    again = row_strips(result, [a, b], PX)
    assert again.jpegs[0] is first.jpegs[0]
    copies = row_strips(result, [a.copy(), b.copy()], PX)
    assert copies.jpegs[0] is not first.jpegs[0] and copies.jpegs[0] == first.jpegs[0]
    wider = row_strips(result, [a, b], tile_px(512))
    assert wider.jpegs[0] is not first.jpegs[0]
    assert np.abs(decode(first.jpegs[0])[16, 16] - np.array((200, 30, 30))).max() < 12


def make_row(n: int = 2, on_zoom=None) -> Row:
    plan = plan_row(CATALOG["rotate"])
    cols = [[np.full((64, 96, 3), 40 * k, dtype=np.uint8) for _ in range(n)]
            for k in range(len(plan.columns))]
    result = RowResult(plan, cols)
    originals = [np.zeros((64, 96, 3), dtype=np.uint8)] * n
    return Row(CATALOG["rotate"], result, row_strips(result, originals, PX), lambda *a: None,
               originals=originals, names=[f"img{i}.jpg" for i in range(n)], on_zoom=on_zoom)


def test_the_zoom_buttons_lie_over_the_images_they_open():
    zoomed: list[tuple[str, int, int]] = []
    row = make_row(on_zoom=lambda *a: zoomed.append(a))
    buttons = row.zoom_buttons
    assert buttons is not None and "dg-gallery-zoom" in buttons._dom_classes
    cols = 1 + len(row.result.plan.columns)
    assert len(buttons.options) == 2 * cols
    scale = PX / 96  # the strip is shown PX wide; its cell is 96 image px wide
    assert buttons.layout.grid_template_columns == f"repeat({cols}, {PX}px)"
    assert buttons.layout.grid_template_rows == f"repeat(2, {64 * scale:.2f}px)"
    assert buttons.layout.grid_gap == f"{GAP_PX * scale:.2f}px {COLUMN_GAP_PX}px"
    # row-major: image 1 of the 30 deg column (column 2, after the originals)
    assert "img1.jpg: angle=30 deg" in buttons.tooltips[1 * cols + 2]
    row.click_tile(1, 2)
    assert zoomed == [("rotate", 1, 2)]
    assert buttons.index is None, "a button, not a selection: ready for the next click"
    row.click_tile(0, 0)
    assert zoomed[-1] == ("rotate", 0, 0) and row.column_label(0) == "original"
    row.close()


def test_a_card_without_tiles_has_nothing_to_zoom():
    plan = plan_row(CATALOG["rotate"])
    row = Row(CATALOG["rotate"], RowResult(plan, error="rotate failed"),
              Strips([], (0, 0), 0, PX), lambda *a: None)
    assert row.zoom_buttons is None
    with pytest.raises(ValueError, match="rotate has no tiles"):
        row.click_tile(0, 1)
    row.close()


def test_strips_of_a_gpu_gallery_are_the_same_pictures_encoded_as_one_batch(monkeypatch):
    """A GPU gallery encodes its strips as one nvImageCodec batch a card (its CPU codecs, so
    this runs anywhere); decoded, they are the pictures Pillow encodes (JPEG's tolerance),
    letterboxed the same way."""
    from dali_gallery.gallery import row as row_mod

    calls: list[int] = []
    real = row_mod.encode_batch

    def counted(arrays, fmt, quality):
        calls.append(len(arrays))
        return real(arrays, fmt, quality)

    monkeypatch.setattr(row_mod, "encode_batch", counted)
    ramp = np.linspace(0, 255, 200, dtype=np.float32)
    wide = np.stack([np.tile(ramp, (100, 1))] * 3, axis=2).astype(np.uint8)
    tall = np.ascontiguousarray(np.transpose(wide, (1, 0, 2)))
    result = RowResult(plan_row(CATALOG["brightness"]), [[wide, tall]] * 3)
    px = row_mod.tile_px(256)
    batched = row_mod.row_strips(result, [wide, tall], px, batch=True)
    cpu = row_mod.row_strips(result, [wide.copy(), tall.copy()], px)  # other originals
    assert calls == [4] and len(batched.jpegs) == len(cpu.jpegs) == 4
    for a, b in zip(batched.jpegs, cpu.jpegs, strict=True):
        da, db = (np.asarray(Image.open(io.BytesIO(x)).convert("RGB"), np.int16) for x in (a, b))
        assert da.shape == db.shape == (2 * 200 + row_mod.GAP_PX, 200, 3)
        assert np.abs(da - db).mean() < 2 and np.abs(da - db).max() < 40
