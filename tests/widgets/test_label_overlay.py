"""Labels drawn over a tile: pixel facts of boxes, masks, keypoints and captions, and the
legend's escaping of untrusted category names."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from dali_gallery.widgets.label_overlay import (
    LINE_PX,
    MASK_ALPHA,
    TileLabels,
    box_pixels,
    caption_text,
    category_colour,
    draw_labels,
    labels_legend_html,
    scale_nearest,
)

H, W = 60, 80


def black() -> np.ndarray:
    return np.zeros((H, W, 3), np.uint8)


def grey(value: int = 100) -> np.ndarray:
    return np.full((H, W, 3), value, np.uint8)


def one_box(box: list[float], cid: int = 1, **kwargs) -> TileLabels:
    return TileLabels(np.array([box], np.float32), np.array([cid], np.int32), **kwargs)


def is_colour(pixels: np.ndarray, colour: tuple[int, int, int]) -> np.ndarray:
    return np.all(pixels == np.array(colour, np.uint8), axis=-1)


# a box from (x 8..71, y 12..47) on an 80x60 tile
BOX = [0.1, 0.2, 0.9, 0.8]
X0, Y0, X1, Y1 = 8, 12, 71, 47


def test_box_pixels_are_the_inclusive_rectangle_clipped_to_the_tile() -> None:
    assert box_pixels(np.array(BOX), H, W) == (X0, Y0, X1, Y1)
    assert box_pixels(np.array([-0.5, -0.5, 0.5, 2.0]), H, W) == (0, 0, 39, H - 1)
    assert box_pixels(np.array([0.9, 0.8, 0.1, 0.2]), H, W) == (X0, Y0, X1, Y1)  # swapped
    for outside in ([1.1, 0, 1.5, 1], [0, -1, 1, 0], [-2, -2, -1, -1], [np.nan, 0, 1, 1]):
        assert box_pixels(np.array(outside), H, W) is None


def test_box_colours_its_edges_and_leaves_its_interior_alone() -> None:
    colour = category_colour(1)
    out = draw_labels(black(), one_box(BOX), {1: "cat"})
    # bottom and right edges, LINE_PX thick and whole (the caption sits at the top-left)
    assert is_colour(out[Y1 - LINE_PX + 1: Y1 + 1, X0: X1 + 1], colour).all()
    assert is_colour(out[Y0: Y1 + 1, X1 - LINE_PX + 1: X1 + 1], colour).all()
    # left edge below the caption, top edge right of it
    assert is_colour(out[Y0 + 20: Y1 + 1, X0: X0 + LINE_PX], colour).all()
    assert is_colour(out[Y0: Y0 + LINE_PX, X0 + 40: X1 + 1], colour).all()
    # only LINE_PX thick: the next pixels in are untouched
    assert not out[Y0 + 20: Y1 - LINE_PX + 1, X0 + LINE_PX].any()
    assert not out[Y1 - LINE_PX, X0 + 40: X1 - LINE_PX + 1].any()
    # interior far from the caption and everything outside the box stay black
    assert not out[Y0 + 16: Y1 - LINE_PX + 1, X0 + 40: X1 - LINE_PX + 1].any()
    outside = np.ones((H, W), bool)
    outside[Y0: Y1 + 1, X0: X1 + 1] = False
    assert not out[outside].any()


def test_caption_is_filled_in_the_category_colour_at_the_box_top_left() -> None:
    colour = category_colour(3)
    out = draw_labels(black(), one_box(BOX, 3), {3: "dog"})
    caption = out[Y0: Y0 + 12, X0: X0 + 20]
    filled = is_colour(caption, colour).mean()
    assert 0.5 < filled < 1.0  # a filled label with text in it
    text = caption[~is_colour(caption, colour)]
    assert len(text) and (np.all(text == 0, axis=1) | np.all(text == 255, axis=1)).all()


def test_caption_falls_back_to_the_id_and_draws_the_name_otherwise() -> None:
    assert caption_text(7, {}) == "#7"
    assert caption_text(7, {7: ""}) == "#7"
    assert caption_text(7, {7: "person"}) == "person"
    assert caption_text(7, {7: "猫\ncat"}) == "??cat"  # the bitmap font has Latin-1 only
    assert len(caption_text(7, {7: "x" * 500})) <= 24
    named = draw_labels(black(), one_box(BOX, 7), {7: "person"})
    unnamed = draw_labels(black(), one_box(BOX, 7), {})
    assert not np.array_equal(named, unnamed)
    # a box at the tile's bottom-right corner still has its caption inside the tile
    corner = draw_labels(black(), one_box([0.95, 0.95, 1.0, 1.0], 7), {7: "person"})
    assert is_colour(corner, category_colour(7)).sum() > 50


def test_clipped_box_is_dashed() -> None:
    colour = category_colour(2)
    solid = draw_labels(black(), one_box(BOX, 2), {})
    dashed = draw_labels(black(), one_box(BOX, 2, clipped=np.array([True])), {})
    bottom = is_colour(dashed[Y1, X0: X1 + 1], colour)
    assert is_colour(solid[Y1, X0: X1 + 1], colour).all()
    assert 0.4 < bottom.mean() < 0.8  # dashes and gaps
    runs = [len(list(g)) for k, g in itertools.groupby(bottom) if not k]
    assert len(runs) >= 4
    right = is_colour(dashed[Y0 + 14: Y1 + 1, X1], colour)
    assert 0.4 < right.mean() < 0.8


def test_boxes_outside_the_tile_do_not_raise_and_are_clipped_or_skipped() -> None:
    colour = category_colour(4)
    labels = TileLabels(np.array([[1.5, 1.5, 3.0, 3.0], [-3.0, 0.0, -1.0, 1.0],
                                  [np.inf, 0, 1, 1], [np.nan] * 4], np.float32),
                        np.array([4, 4, 4, 4], np.int32))
    assert not draw_labels(black(), labels, {}).any()
    partial = draw_labels(black(), one_box([0.5, 0.5, 1.7, 1.9], 4), {})
    # the parts inside the tile are drawn along the tile's own border
    assert is_colour(partial[H - 1, W // 2 + 1: W], colour).all()
    assert is_colour(partial[H // 2 + 14: H, W - 1], colour).all()
    big = draw_labels(black(), one_box([-1e9, -1e9, 1e9, 1e9], 4), {})
    assert is_colour(big[H - 1], colour).all()


def test_mask_fill_blends_exactly_the_masked_pixels() -> None:
    base = grey(100)
    mask = np.zeros((H, W), np.uint8)
    mask[10:30, 20:50] = 5
    mask[40:50, 0:10] = 6
    out = draw_labels(base, TileLabels(np.zeros((0, 4)), np.zeros(0), mask=mask), {})
    changed = np.any(out != base, axis=-1)
    assert np.array_equal(changed, mask > 0)
    for cid in (5, 6):
        expected = np.rint(100 * (1 - MASK_ALPHA) + np.array(category_colour(cid)) * MASK_ALPHA)
        assert (out[mask == cid] == expected.astype(np.uint8)).all()
        assert not is_colour(out[mask == cid], category_colour(cid)).any()  # blended


def test_mask_of_another_size_is_scaled_nearest() -> None:
    small = np.array([[0, 1], [2, 0]], np.int32)[:, :, None]  # (2, 2, 1)
    out = draw_labels(grey(), TileLabels(np.zeros((0, 4)), [], mask=small), {})
    changed = np.any(out != 100, axis=-1)
    expected = np.zeros((H, W), bool)
    expected[: H // 2, W // 2:] = True
    expected[H // 2:, : W // 2] = True
    assert np.array_equal(changed, expected)
    assert not np.array_equal(out[0, -1], out[-1, 0])  # two categories, two colours
    big = np.kron(np.array([[3, 0], [0, 0]]), np.ones((300, 400), np.int64))
    assert np.array_equal(scale_nearest(big, H, W), np.kron([[3, 0], [0, 0]], np.ones((30, 40))))


def test_keypoints_with_visibility_zero_are_not_drawn() -> None:
    colour = category_colour(1)
    hidden = np.array([[[0.5, 0.5, 0.0], [0.25, 0.25, 0.0]]], np.float32)
    boxless = [[2.0, 2.0, 3.0, 3.0]]  # outside: only the keypoints could draw
    out = draw_labels(black(), one_box(boxless[0], keypoints=hidden), {})
    assert not out.any()
    shown = hidden.copy()
    shown[0, 0, 2] = 2
    out = draw_labels(black(), one_box(boxless[0], keypoints=shown), {})
    assert (out[30, 40] == colour).all()  # the dot's centre has the category colour
    ring = out[26:35, 36:45]
    dark = np.all((ring > 0) & (ring < 60), axis=-1)
    assert dark.sum() >= 8  # a dark outline around it
    assert not out[:20, :30].any()  # the hidden one at (20, 15) is not drawn


def test_empty_labels_give_an_unchanged_copy() -> None:
    tile = np.random.default_rng(0).integers(0, 256, (H, W, 3), dtype=np.uint8)
    empty = TileLabels(np.zeros((0, 4), np.float32), np.zeros(0, np.int32),
                       keypoints=np.zeros((0, 17, 3), np.float32), clipped=np.zeros(0, bool))
    out = draw_labels(tile, empty, {})
    assert np.array_equal(out, tile) and out is not tile
    assert np.array_equal(draw_labels(tile, TileLabels([], []), {}), tile)


def test_the_input_tile_is_never_modified() -> None:
    tile = np.random.default_rng(1).integers(0, 256, (H, W, 3), dtype=np.uint8)
    before = tile.copy()
    labels = one_box(BOX, keypoints=[[[0.5, 0.5, 1]]], mask=np.ones((H, W), np.uint8))
    out = draw_labels(tile, labels, {1: "cat"})
    assert np.array_equal(tile, before)
    assert out.dtype == np.uint8 and out.shape == (H, W, 3)
    assert not np.shares_memory(out, tile)
    out[:] = 0
    assert np.array_equal(tile, before)


def test_scale_upscales_nearest_and_keeps_lines_thin() -> None:
    tile = np.random.default_rng(2).integers(0, 256, (H, W, 3), dtype=np.uint8)
    plain = draw_labels(tile, TileLabels([], []), {}, scale=3)
    assert plain.shape == (3 * H, 3 * W, 3)
    assert np.array_equal(plain, np.repeat(np.repeat(tile, 3, 0), 3, 1))
    colour = category_colour(1)
    out = draw_labels(black(), one_box(BOX), {}, scale=3)
    bottom = 3 * (Y1 + 1) - 1
    assert is_colour(out[bottom - LINE_PX + 1: bottom + 1, 3 * X0 + 60: 3 * X1], colour).all()
    assert not out[bottom - LINE_PX, 3 * X0 + 60: 3 * X1].any()  # still LINE_PX, not 3x
    with pytest.raises(ValueError):
        draw_labels(black(), one_box(BOX), {}, scale=0)


def test_grey_and_float_tiles_are_drawn_on_as_rgb() -> None:
    out = draw_labels(np.zeros((H, W), np.uint8), one_box(BOX), {})
    assert out.shape == (H, W, 3) and is_colour(out[Y1, X0:X1], category_colour(1)).all()
    out = draw_labels(np.zeros((H, W, 1), np.float32), one_box(BOX), {})
    assert out.shape == (H, W, 3) and out.dtype == np.uint8


def test_labels_that_do_not_agree_are_refused_early() -> None:
    with pytest.raises(ValueError):
        TileLabels(np.zeros((2, 4)), np.zeros(3))
    with pytest.raises(ValueError):
        TileLabels(np.zeros((2, 3)), np.zeros(2))
    with pytest.raises(ValueError):
        TileLabels(np.zeros((2, 4)), np.zeros(2), clipped=[True])
    with pytest.raises(ValueError):
        TileLabels(np.zeros((2, 4)), np.zeros(2), keypoints=np.zeros((1, 5, 3)))
    with pytest.raises(ValueError):
        TileLabels(np.zeros((0, 4)), [], mask=np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError):
        TileLabels(np.zeros((0, 4)), [], mask=np.zeros((4, 4, 3), np.uint8))
    labels = TileLabels([[0, 0, 1, 1]], [1])
    assert labels.boxes.dtype == np.float32 and labels.classes.dtype == np.int32


def test_colours_are_stable_and_distinct() -> None:
    first = [category_colour(i) for i in range(20)]
    assert first == [category_colour(i) for i in range(20)]
    for a, b in itertools.combinations(first, 2):
        assert np.linalg.norm(np.subtract(a, b, dtype=float)) > 50, (a, b)
    for a in first:
        assert max(a) >= 120  # none near black: a line must show on a dark image
    more = [category_colour(i) for i in (-5, 20, 21, 99, 10**9)]
    assert more == [category_colour(i) for i in (-5, 20, 21, 99, 10**9)]
    assert all(len(c) == 3 and all(isinstance(v, int) and 0 <= v <= 255 for v in c)
               for c in more)
    assert len({category_colour(i) for i in range(200)}) == 200


def test_legend_escapes_names_and_lists_counts() -> None:
    names = {1: "<script>alert(1)</script>", 2: 'a"b&c', 3: "dog"}
    html = labels_legend_html(names, {3: 4, 1: 2, 2: 1, 9: 7})
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "a&quot;b&amp;c" in html
    assert "#9" in html  # no name: the id
    assert [int(n) for n in re.findall(r">(\d+)</span></div>", html)] == [2, 1, 4, 7]
    r, g, b = category_colour(9)
    assert f"rgb({r},{g},{b})" in html
    assert "no labels" in labels_legend_html(names, {})
