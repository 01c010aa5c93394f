"""The gallery's controls and page layout: filters, size, progress, status and the cards' box.

Kept apart from :mod:`.view`, which holds the behaviour (generations, the worker, labels), as
:mod:`widgets.builder_layout` is for the builder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import ipywidgets as W

from dali_gallery.pipelines.catalog import CATEGORIES, Catalog
from dali_gallery.pipelines.images import PREVIEW_SIZES
from dali_gallery.pipelines.op_search import no_match
from dali_gallery.widgets.style import shared_layout

from .row import CSS
from .sweep import RowResult

if TYPE_CHECKING:
    from .view import GalleryView


def build_controls(view: GalleryView, size: int) -> None:
    """Create the view's controls and its top-level ``widget`` (attributes set on ``view``);
    a filter change starts a new generation, a size change one on new images."""
    view.category = W.Dropdown(options=[("all categories", "")] + [(c, c) for c in CATEGORIES],
                               value="", description="category",
                               layout=shared_layout(width="260px"))
    view.category.add_class("dg-gallery-category")
    view.search = W.Text(placeholder="search operators", description="search",
                         continuous_update=True, layout=shared_layout(width="260px"))
    view.search.add_class("dg-gallery-search")
    view.size = W.Dropdown(options=[(f"{s} px", s) for s in PREVIEW_SIZES], value=size,
                           description="size", layout=shared_layout(width="170px"),
                           tooltip="the size images are decoded to and tiles shown at")
    view.size.add_class("dg-gallery-size")
    view.progress = W.IntProgress(value=0, min=0, max=1, description="rendering",
                                  layout=shared_layout(width="360px"))
    view.progress.add_class("dg-gallery-progress")
    view.status = W.HTML("")
    view.status.add_class("dg-gallery-status")
    view.rows_box = W.Box(layout=shared_layout(flex_flow="row wrap", align_items="flex-start"))
    view.rows_box.add_class("dg-gallery-rows")
    view.category.observe(lambda _c: view._restart(), names="value")
    view.search.observe(lambda _c: view._restart(), names="value")
    view.size.observe(lambda _c: view._restart(new_images=True), names="value")
    view.widget = W.VBox([
        W.HTML(CSS),
        W.HBox([view.category, view.search, view.size]),
        W.HBox([view.progress, view.status]),
        view.rows_box,
    ])
    view.widget.add_class("dg-gallery")


def finished_text(rows: int, rendered: int, first: float | None, total: float, device: str,
                  failed: list[str], refused: int, held: float = 0.0) -> str:
    """The status line of a finished gallery: how many cards it shows in how long (of them,
    how many it rendered now: a filter change shows rows rendered before), on what, and
    which failed or were not label-aware. ``total`` and ``first`` leave out the ``held``
    seconds the render waited for its page (a pooled kernel waits for a visitor): they are
    said apart."""
    if rendered >= rows:
        how = f" (first in {first:.2f} s)" if first is not None else ""
    elif rendered:
        how = f" ({rendered} rendered now, first in {first or 0.0:.2f} s)"
    else:
        how = " (rendered before)"
    msg = f"{rows} operators in {total:.1f} s{how} on {device}"
    if held >= 0.05:
        msg += f", not counting {held:.1f} s waiting for the page"
    if failed:
        msg += f"; failed: {', '.join(failed)}"
    if refused:
        msg += f"; {refused} not label-aware (their cards say why)"
    return msg


def summary(results: dict[str, RowResult], visible: list[str], stats: dict[str, Any],
            catalog: Catalog, filters: tuple[str, str], device: str,
            problems: str) -> tuple[str, bool]:
    """The status line of a finished generation and whether it is an error: its cards (those
    rendered before it too: a filter change) and ``problems`` (the files skipped), or why the
    filters (category, search) show nothing."""
    category, search = filters
    if not visible and search.strip():  # not "0 operators in 0.0 s": what may match
        found = [s.name for s in catalog.search(search)]
        if category and found:  # not "no operator matches 'flip'; did you mean flip?"
            where = sorted({catalog[n].category for n in found})
            return (f"no {category} operator matches {search.strip()[:40]!r}; it matches "
                    f"{', '.join(found[:4])}{' ...' if len(found) > 4 else ''} in "
                    f"{', '.join(where)} (choose all categories)"), False
        return no_match(catalog.values(), search), True
    shown = [results[op] for op in visible if op in results]
    failed = [r.op for r in shown if r.error]
    return finished_text(len(shown), stats.get("rendered", 0), stats.get("first_row_s"),
                         stats.get("total_s", 0.0), device, failed,
                         sum(1 for r in shown if r.refused),
                         stats.get("held_s", 0.0)) + problems, bool(failed)
