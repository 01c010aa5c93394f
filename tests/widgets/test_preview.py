"""The builder's preview grid never distorts a tile, says in full what fired on it, and opens
the inspector right under the row of the tile that was clicked (real DALI renders on the
bundled samples; the on-screen geometry itself is measured in tests/browser/test_geometry.py)."""

from __future__ import annotations

import re

import pytest

from dali_gallery.pipelines.grid import fired_label
from dali_gallery.widgets import style
from dali_gallery.widgets.preview import cell_width
from tests.widgets.conftest import settle

CHAIN = ["rotate", "hsv", "gaussian_blur", "saturation", "hue"]


def css_px(expr: str, container: float) -> float:
    """The width ``cell_width`` asks for in a preview ``container`` px wide (what the browser
    computes for ``clamp(lo, calc((100cqw - gaps) / n), hi)``)."""
    m = re.fullmatch(r"clamp\((\d+)px, calc\(\(100cqw - (\d+)px\) / (\d+)\), (\d+)px\)", expr)
    assert m, expr
    lo, gaps, n, hi = (int(g) for g in m.groups())
    return min(max((container - gaps) / n, lo), hi)


@pytest.mark.parametrize("container", [420.0, 786.0, 1200.0])
def test_cells_share_the_row_and_grow_when_there_are_fewer_draws(container):
    widths = [css_px(cell_width(draws + 1), container) for draws in range(1, 9)]
    assert widths == sorted(widths, reverse=True)
    assert widths[0] > widths[-1]
    for draws, width in enumerate(widths, start=1):
        columns = draws + 1
        fits = columns * width + (columns - 1) * style.CELL_GAP_PX <= container + 1e-6
        assert fits or width == style.TILE_MIN_PX, (draws, width)
        assert style.TILE_MIN_PX <= width <= style.TILE_MAX_PX


def test_tiles_are_letterboxed_by_the_stylesheet_not_forced_into_a_fixed_box(builder):
    """The old grid gave every image an inline 168x168 box, so a 2:1 picture was stretched."""
    grid = builder.preview
    n, draws = grid.shape
    for i in range(n):
        for img in [grid.originals[i], *grid.tiles[i]]:
            assert img.layout.width is None and img.layout.height is None
    cells = [c for row in grid.rows.children if style.PREVIEW_ROW in row._dom_classes
             for c in row.children]
    assert len(cells) == n * (draws + 1)
    assert {c.layout.width for c in cells} == {cell_width(draws + 1)}
    assert all(c.layout.height is None for c in cells)
    css = style.CSS
    assert "img.dg-preview-tile" in css and "aspect-ratio: 1 / 1" in css
    assert "object-fit: contain" in css


def test_captions_say_every_step_that_fired_in_full(builder):
    for op in CHAIN:
        builder.add_step(op)
    settle(builder)
    render, preset = builder.last_result.render, builder.preset
    expected = ", ".join(CHAIN)
    for i in range(builder.preview.shape[0]):
        for d in range(builder.preview.shape[1]):
            caption = builder.preview.captions[i][d]
            assert fired_label(render, preset, i, d) == expected
            assert caption.description == expected
            assert expected in caption.tooltip  # the full list, even where the text wraps
    assert "white-space: normal" in style.CSS.split("button.dg-tile-inspect")[1].split("}")[0]


def test_clicking_a_tile_opens_the_inspector_under_its_row(builder):
    builder.add_step("rotate", angle=30.0)
    settle(builder)
    grid = builder.preview
    rows = [r for r in grid.rows.children if style.PREVIEW_ROW in r._dom_classes]
    box = rows[1].children[1].children[0]  # image 1, draw 0: the tile and its button
    assert style.TILE_BOX in box._dom_classes
    button = box.children[1]
    assert style.TILE_ZOOM in button._dom_classes
    button.click()
    inspector = builder.inspector
    assert inspector.selected == (1, 0) and inspector.widget.layout.display is None
    children = list(grid.rows.children)
    assert children.index(inspector.widget) == children.index(rows[1]) + 1
    assert bytes(inspector.zoom.large.value).startswith(b"\x89PNG")
    assert "cqw" in inspector.zoom.large.layout.width  # twice a cell: see zoom_side
    grid.captions[0][1].click()
    children = list(grid.rows.children)
    assert children.index(inspector.widget) == children.index(rows[0]) + 1
    assert children.count(inspector.widget) == 1


def test_a_relayout_that_drops_the_inspected_tile_closes_the_inspector(builder):
    builder.preview.captions[2][1].click()
    assert builder.inspector.selected == (2, 1)
    builder.set_draws(1)  # draw 1 is gone
    settle(builder)
    assert builder.inspector.selected is None
    assert builder.inspector.widget.layout.display == "none"
    builder.preview.captions[2][0].click()
    builder.set_count(2)  # image 2 is gone
    settle(builder)
    assert builder.inspector.selected is None
    assert builder.inspector.widget not in builder.preview.rows.children


def test_rows_taken_off_the_page_stay_open_a_while_and_inspect_nothing(builder, monkeypatch):
    """A relayout used to close the old rows at once; a page still making their views (a
    notebook output scrolled into view, a Voilà page loading) then fails with "widget model
    not found" (seen once in JupyterLab, the builder's notebook, under the full suite's load).
    They stay open for style.RETIRE_S like retired step cards, and a click on one of them
    (on its way when the rows changed) opens no inspector for the tile now at its index."""
    grid = builder.preview
    old_rows = list(grid._rows)
    old_caption = grid.captions[0][1]
    builder.set_draws(1)
    settle(builder)
    assert all(row.comm is not None for row in old_rows)  # still open: retired, not closed
    old_caption.click()
    assert builder.inspector.selected is None
    grid.captions[0][0].click()
    assert builder.inspector.selected == (0, 0)
    monkeypatch.setattr(style, "RETIRE_S", 0.0)
    builder.set_draws(2)  # the next relayout closes what has been off the page long enough
    settle(builder)
    assert all(row.comm is None for row in old_rows)
