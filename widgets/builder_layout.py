"""The builder's layout: toolbar, picker and images tabs, the chain, the live preview and the
export / import tabs. Kept apart from :mod:`.builder`, which holds the behaviour, so that adding a
panel is a change here only."""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

import ipywidgets as w

from dali_gallery.pipelines.device import describe
from dali_gallery.pipelines.label_render import SampleLabels

from . import style
from .distribution_panel import DistributionPanel
from .export_panel import ExportPanel
from .images_panel import SAMPLES_DIR, ImagesPanel
from .import_panel import ImportPanel
from .labels_panel import LabelsPanel
from .output_panel import OutputPanel
from .style import shared_layout

if TYPE_CHECKING:
    from .builder import Builder


def build_layout(b: Builder, samples: str | Path | None) -> None:
    """Create the builder's panels and its top-level ``widget`` (attributes set on ``b``)."""
    b.images_panel = ImagesPanel(b._load_source, allowed_root=b.allowed_root,
                                 samples=Path(samples) if samples else None,
                                 max_selected=b.live.max_images)
    bundled = samples is not None and _same(Path(samples), SAMPLES_DIR)
    b.labels = LabelsPanel(b.live.renderer, on_change=b.live.request,
                           source=lambda: b.live.source, allowed_root=b.allowed_root,
                           samples=b.images_panel.load_samples if bundled else None)
    b.export = ExportPanel(on_name=b._set_name, on_preset_file=b._preset_file,
                           current=lambda: b.model.preset)
    b.export_panel = b.export.widget
    b.output_panel = OutputPanel(b.model, catalog=b.catalog, on_show=lambda on: _show_tail(b, on),
                                 on_warning=b.export.set_warning)
    b.undo_button = style.classed(w.Button(
        description="\u21b6 undo", tooltip="undo the last edit", disabled=True,
        layout=shared_layout(width="80px")), style.UNDO)
    b.redo_button = style.classed(w.Button(
        description="redo \u21b7", tooltip="redo", disabled=True,
        layout=shared_layout(width="80px")), style.REDO)
    b.undo_button.on_click(lambda _: b.undo())
    b.redo_button.on_click(lambda _: b.redo())
    b.restore_button = style.classed(w.Button(
        description="restore autosaved pipeline",
        layout=w.Layout(width="auto", display="none")), style.RESTORE)
    b.restore_button.on_click(lambda _: b.restore_autosave())
    b.notice = style.classed(w.HTML(), style.ERROR)
    b.chain = style.classed(w.VBox(), style.CHAIN)
    title = w.HTML(f"<b>DALI pipeline builder</b> <span style='opacity:.7'>&middot; "
                   f"preview on {escape(describe(b.device))}</span>")
    toolbar = style.classed(w.HBox([title, b.undo_button, b.redo_button,
                                    b.shards.widget, b.restore_button,
                                    b.notice, b.status],
                                   layout=shared_layout(align_items="center")), style.TOOLBAR)
    images_tab = w.VBox([b.images_panel.widget, b.labels.widget])
    left_tabs = w.Tab(children=[b.picker.widget, images_tab])
    left_tabs.titles = ("Add a step", "Images")
    left = w.VBox([left_tabs, w.HTML("<b>Chain</b> (top to bottom)"), b.chain,
                   b.output_panel.widget],
                  layout=shared_layout(flex="0 0 540px", width="540px", margin="0 8px 0 0"))

    b.importer = ImportPanel(on_preset=b.load_preset, images=lambda: b.engine.images,
                             current=lambda: b.model.preset, device=b.device)
    b.distribution = DistributionPanel(current=lambda: b.model.preset.copy(),
                                       images=lambda: b.engine.images, device=b.device,
                                       labels=lambda: _first_labels(b), catalog=b.catalog)
    bottom = w.Tab(children=[b.export_panel, b.importer.widget, b.distribution.widget])
    bottom.titles = ("Export", "Import", "Distribution")
    b.widget = style.classed(w.VBox([style.stylesheet(), toolbar,
                                     w.HBox([left, b.live.widget]), bottom]),
                             style.BUILDER)


def _show_tail(b: Builder, on: bool) -> None:
    """"show training output": the preview (and its CLI command) go through the tail."""
    b.live.tail = on
    b._on_view_change()


def _first_labels(b: Builder) -> tuple[SampleLabels | None, float]:
    """The distribution's labels: the first image's, and the builder's drop threshold."""
    labels = b.engine.labels
    return (labels[0] if labels else None), b.engine.min_kept


def _same(a: Path, b: Path) -> bool:
    """Whether ``samples`` is the bundled folder (whose annotations "detection" loads)."""
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
