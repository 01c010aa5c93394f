"""What happened to one tile: which steps fired and the exact values they used.

The values come from the engine's per-sample record (the pipeline's own outputs: coin flips
and drawn values), and fixed values from the preset that rendered the tile, so the inspector
never guesses. Histograms compare the tile with the image it started from. With annotations,
the large view draws the labels and a table says what each moving step clipped or dropped
(:mod:`.label_report`, from the render's own kept fractions).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape
from typing import Any

import ipywidgets as w
import numpy as np

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.display import display_size
from dali_gallery.pipelines.engine import SampleRecord
from dali_gallery.pipelines.preset import GROUP_KEY, Group, Preset, is_random

from . import style
from .encode import histogram_png
from .label_report import labels_html
from .label_tiles import TileLabelView
from .zoom import ZOOM_PX, ZoomView


@dataclass
class StepReport:
    """One step as applied to one sample. ``fired`` is None for disabled steps."""

    index: int
    op: str
    enabled: bool
    probability: float
    fired: bool | None
    values: list[tuple[str, Any, bool]] = field(default_factory=list)
    """(parameter, value, drawn per sample?)"""
    child: int | None = None
    """This is child ``child`` of the group at ``index`` (``fired``: it ran on the sample)."""


def tile_report(preset: Preset, record: SampleRecord,
                catalog: Catalog = CATALOG) -> list[StepReport]:
    """Every step of ``preset`` for the sample behind ``record``."""
    out = []
    for i, step in enumerate(preset.steps):
        fired = record.fired.get(i, True) if step.enabled else None
        if isinstance(step, Group):  # the group's row, then one row per child
            ran = [c.op for j, c in step.active_children() if record.child_ran(i, j)]
            out.append(StepReport(i, GROUP_KEY, step.enabled, step.probability, fired,
                                  [("ran", ", ".join(ran) or "none", True)]))
            for j, c in enumerate(step.children):
                on = step.enabled and c.enabled
                drawn = record.child_values.get(i, {}).get(j, {})
                out.append(StepReport(i, c.op, on, c.probability, record.child_ran(i, j)
                                      if on else None, _values(catalog, c, drawn), j))
            continue
        out.append(StepReport(i, step.op, step.enabled, step.probability, fired,
                              _values(catalog, step, record.values.get(i, {}))))
    return out


def _values(catalog: Catalog, step: Any, drawn: dict[str, Any]) -> list[tuple[str, Any, bool]]:
    """(parameter, value, drawn?) of a step: what the sample drew, or the fixed value; then
    what a policy drew itself (its operation by name, magnitude bin, sign, sub-policy), which
    the pipeline records for this report as it does for the distribution view."""
    spec = catalog[step.op]
    values = []
    for p in spec.params:
        v = step.params[p.name]
        if p.name in drawn:
            value = drawn[p.name]
            if p.kind == "bool":
                value = bool(value)
            values.append((p.name, value, True))
        elif not is_random(v):
            values.append((p.name, v, False))
    for d in spec.draws:
        names = d.labels(step.params) if d.labels is not None else None
        for name, _ in d.records(step.params):
            if name in drawn:
                k = int(drawn[name])
                shown = names[k] if names is not None and 0 <= k < len(names) else drawn[name]
                values.append((name, shown, True))
    return values


def report_html(reports: list[StepReport]) -> str:
    """The report as an HTML table (user-visible strings escaped)."""
    if not reports:
        return "<i>no steps: the tile is the original image</i>"
    rows = []
    for r in reports:
        if r.fired is None:
            state, colour = "disabled", "#888"
        elif r.child is not None:
            state, colour = (("ran", "#2e7d32") if r.fired else
                             ("not applied (not picked, or its own p)", "#c62828"))
        elif r.fired:
            state = "fired" if r.probability < 1 else "always"
            colour = "#2e7d32"
        else:
            state, colour = "skipped (values drawn, not applied)", "#c62828"
        vals = ", ".join(
            f"{escape(n)}=<b>{escape(_fmt(v))}</b>{'*' if drawn else ''}"
            for n, v, drawn in r.values) or "&ndash;"
        prob = "" if r.probability >= 1 else f" (p={r.probability:g})"
        index, op = (r.index, escape(r.op)) if r.child is None else (
            f"{r.index}.{r.child}", f"&#8627; {escape(r.op)}")
        rows.append(f"<tr><td>{index}</td><td>{op}{prob}</td>"
                    f'<td style="color:{colour}">{state}</td><td>{vals}</td></tr>')
    return ('<table style="font-size:12px;border-collapse:collapse" cellpadding="3">'
            "<tr><th>#</th><th>step</th><th>on this tile</th><th>values "
            "(* drawn for this sample)</th></tr>" + "".join(rows) + "</table>")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


class Inspector:
    """The panel opened under the row of the clicked tile; hidden until a tile is clicked.

    ``on_show(image)`` lets the grid put the panel next to that image's row (it is called
    before the panel is shown). :meth:`hide` also drops the images, so a panel about images
    that were replaced never lingers (the live preview hides it when the images change).
    """

    def __init__(self, on_show: Callable[[int], None] | None = None) -> None:
        self.on_show = on_show
        self.title = w.HTML()
        self.zoom = ZoomView(fmt="png", header=False)
        self.table = w.HTML()
        self.labels = style.classed(w.HTML(), style.INSPECTOR_LABELS)
        self.histogram = style.classed(w.Image(format="png", layout=w.Layout(
            width="540px")), style.HISTOGRAM)
        self.close_button = w.Button(description="\u2715", tooltip="close the inspector",
                                     layout=w.Layout(width="36px"))
        self.close_button.on_click(lambda _: self.hide())
        self.zoom_side = f"{ZOOM_PX}px"
        """CSS length of the large view's longer side (the grid sets twice its tile width)."""
        self.selected: tuple[int, int] | None = None
        self.reports: list[StepReport] = []
        self.widget = style.classed(w.VBox([
            w.HBox([self.title, self.close_button], layout=w.Layout(
                justify_content="space-between")),
            self.zoom.widget, self.table, self.labels, self.histogram,
        ], layout=w.Layout(display="none", border="1px solid #bbb", padding="4px",
                           margin="4px 0")),
            style.INSPECTOR)

    def show(self, image: int, draw: int, name: str, seed: int, preset: Preset,
             record: SampleRecord, original: np.ndarray, tile: np.ndarray, *,
             labels: TileLabelView | None = None, catalog: Catalog = CATALOG) -> None:
        """Show one tile; ``labels``: its labels (drawn when ``labels.overlay``); ``catalog``:
        the one the preset's operators are in (a builder's own, with a notebook's operators)."""
        self.selected = (image, draw)
        self.reports = tile_report(preset, record, catalog)
        height, width = display_size(tile)  # the tail's CHW layout: not shape[:2]
        self.title.value = (f"<b>{escape(name)}</b> &middot; draw {draw} &middot; seed {seed}"
                            f" &middot; {width}x{height}")
        shown, sizes = (tile, original), None
        if labels is not None and labels.overlay:  # enlarged to draw on: their own sizes
            shown, sizes = labels.drawn(tile, original), ((height, width), original.shape)
        self.zoom.show(*shown, side=self.zoom_side, key=(name, str(draw)), sizes=sizes)
        self.table.value = report_html(self.reports)
        self.labels.value = "" if labels is None else labels_html(
            labels.before, original.shape, labels.after, (height, width), labels.names, preset,
            labels.min_kept)
        self.histogram.value = histogram_png(original, tile)
        if self.on_show is not None:
            self.on_show(image)
        self.widget.layout.display = None

    def hide(self) -> None:
        """Close the panel and forget the tile (its images and values are dropped)."""
        self.selected = None
        self.reports = []
        self.widget.layout.display = "none"
        self.zoom.hide()
        self.title.value = self.table.value = self.labels.value = ""
        self.histogram.value = b""
