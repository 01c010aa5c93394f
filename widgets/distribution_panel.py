"""The builder's Distribution tab: the chain over hundreds of draws, not one tile.

"Run N draws" renders the current chain N times through a preview engine of its own, on a small
thumbnail of the first image (only the records matter; with labels on the image itself, as the
boxes a step drops depend on its size), off the UI thread with a progress bar
and a cancel button (:func:`dali_gallery.pipelines.distribution.collect`). It then shows, from
the pipeline's own per-sample records: each step's observed firing rate against its configured
probability with the binomial range, a histogram of every sampled parameter, for the
auto-augment policies which operations were picked how often, and with annotations how many
boxes each moving step dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from html import escape
from typing import Any

import ipywidgets as w
import numpy as np

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.distribution import (
    DEFAULT_DRAWS,
    MAX_DRAWS,
    Distribution,
    check_draws,
    collect,
)
from dali_gallery.pipelines.distribution_stats import Picks, Rate, Sampled, picks, rates, sampled
from dali_gallery.pipelines.label_render import SampleLabels
from dali_gallery.pipelines.labels import DEFAULT_MIN_KEPT
from dali_gallery.pipelines.preset import Preset, PresetError
from dali_gallery.pipelines.step_error import StepError

from . import style
from .distribution_charts import MAX_HISTOGRAMS, histograms_png, picks_html, rates_html
from .label_report import step_name
from .style import shared_layout
from .ui_thread import on_ui_thread

DISTRIBUTION = "dg-distribution"
DIST_DRAWS = "dg-dist-draws"
DIST_RUN = "dg-dist-run"
DIST_CANCEL = "dg-dist-cancel"
DIST_PROGRESS = "dg-dist-progress"
DIST_STATUS = "dg-dist-status"
DIST_RATES = "dg-dist-rates"
DIST_HISTOGRAMS = "dg-dist-histograms"
DIST_PICKS = "dg-dist-picks"
DIST_DROPPED = "dg-dist-dropped"
"""CSS hooks of this panel (browser tests find the widgets by them)."""
_log = logging.getLogger(__name__)
LabelsOf = Callable[[], tuple[SampleLabels | None, float]]
"""The first image's labels (None: none) and the drop threshold."""


class DistributionPanel:
    """Run the chain over many draws and show what its records say.

    ``current`` gives the builder's preset, ``images`` its decoded images (HWC uint8; the
    first one is used), ``labels`` its labels and the drop threshold (boxes dropped per step are
    counted), ``device`` where to render. ``sync=True`` runs in the calling thread (tests,
    scripts)."""

    def __init__(self, *, current: Callable[[], Preset], images: Callable[[], list[np.ndarray]],
                 device: str = "cpu", draws: int | None = None, sync: bool = False,
                 labels: LabelsOf | None = None, catalog: Catalog = CATALOG) -> None:
        self.current = current
        self.images = images
        self.labels = labels
        self.device = device
        self.sync = sync
        self.catalog = catalog
        self.result: Distribution | None = None
        self.rates: list[Rate] = []
        self.sampled: list[Sampled] = []
        self.picks: list[Picks] = []
        self.error: str | None = None
        self._cancel = threading.Event()
        self._thread: threading.Thread | None = None
        self._generation = 0
        default = check_draws(draws if draws is not None else DEFAULT_DRAWS.get(device, 400))
        self.draws = style.classed(w.BoundedIntText(
            value=default, min=1, max=MAX_DRAWS, step=100, description="draws",
            tooltip=f"how many draws of the chain to collect (1 to {MAX_DRAWS})",
            layout=shared_layout(width="150px")), DIST_DRAWS)
        self.run_button = style.classed(w.Button(
            description=_run_label(default), button_style="primary",
            tooltip="render the chain this many times and count what its records say"),
            DIST_RUN)
        self.cancel_button = style.classed(w.Button(
            description="cancel", disabled=True, layout=shared_layout(width="80px")), DIST_CANCEL)
        self.progress = style.classed(w.IntProgress(
            value=0, min=0, max=default, description="", layout=shared_layout(width="220px")),
            DIST_PROGRESS)
        self.status = style.classed(w.HTML(), DIST_STATUS)
        self.table = style.classed(w.HTML(), DIST_RATES)
        self.histograms = style.classed(w.Image(format="png", layout=shared_layout(
            max_width="100%")), DIST_HISTOGRAMS)
        self.pick_table = style.classed(w.HTML(), DIST_PICKS)
        self.dropped = style.classed(w.HTML(), DIST_DROPPED)
        self.draws.observe(lambda c: setattr(self.run_button, "description",
                                             _run_label(c["new"])), "value")
        self.run_button.on_click(lambda _: self.run())
        self.cancel_button.on_click(lambda _: self.cancel())
        intro = w.HTML(
            "<b>The chain over many draws</b>: how often each step fires against its "
            "probability, what every random parameter drew, and which operations the "
            "auto-augment policies picked. The values are the pipeline's own records, rendered "
            "by DALI on a small thumbnail of the first image (with labels, on the image "
            "itself: the boxes a step drops depend on its size).")
        self.widget = style.classed(w.VBox([
            intro,
            w.HBox([self.draws, self.run_button, self.cancel_button, self.progress,
                    self.status], layout=shared_layout(align_items="center")),
            self.table, self.dropped, self.histograms, self.pick_table]), DISTRIBUTION)

    # ---- public API ---------------------------------------------------------------------------

    def run(self, draws: int | None = None) -> bool:
        """Start collecting ``draws`` draws (default: the draws field); False (and the reason
        shown) when it cannot start: no images, a bad count, or a run already going."""
        if self._thread is not None and self._thread.is_alive():
            return self._refuse("a run is going; cancel it or wait for it to finish")
        try:
            n = check_draws(self.draws.value if draws is None else draws)
        except ValueError as e:
            return self._refuse(str(e))
        images = self.images()
        if not images:
            return self._refuse("no images to render: add images first")
        self._generation += 1
        self._cancel = threading.Event()
        self.error = None
        self.result = None
        self.progress.max, self.progress.value, self.progress.bar_style = n, 0, "info"
        self.run_button.disabled, self.cancel_button.disabled = True, False
        self.status.value = (f"collecting {n} draws on the {escape(self.device.upper())}"
                             "&hellip;")
        labels, min_kept = self.labels() if self.labels is not None else (None, DEFAULT_MIN_KEPT)
        args = (self.current(), np.ascontiguousarray(images[0]), n, self._generation,
                self._cancel, labels, min_kept)
        if self.sync:
            self._collect(*args)
            return True
        self._thread = threading.Thread(target=self._collect, args=args, daemon=True,
                                        name="dali-gallery-distribution")
        self._thread.start()
        return True

    def cancel(self) -> None:
        """Stop the run after the batch in progress (what was collected is shown)."""
        self._cancel.set()
        self.status.value = "cancelling after the batch in progress&hellip;"

    def wait(self, timeout: float = 300.0) -> bool:
        """Block until the run is done (tests, notebooks)."""
        t = self._thread
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True

    def close(self) -> None:
        """Cancel a run in flight and drop its results (its engine closes when it ends)."""
        self._generation += 1
        self._cancel.set()
        self.wait(30)

    # ---- internals ----------------------------------------------------------------------------

    def _refuse(self, message: str) -> bool:
        self.error = message
        self.status.value = style.error_html([message])
        return False

    def _collect(self, preset: Preset, image: np.ndarray, n: int, generation: int,
                 cancel: threading.Event, labels: SampleLabels | None = None,
                 min_kept: float = DEFAULT_MIN_KEPT) -> None:
        t0 = time.perf_counter()
        try:
            result = collect(preset, image, n, device=self.device, cancel=cancel,
                             catalog=self.catalog, labels=labels, min_kept=min_kept,
                             on_progress=lambda done, _: self._progress(done, generation))
            found = (rates(preset, result.records), sampled(preset, result.records,
                                                            self.catalog),
                     picks(preset, result.records, self.catalog))
            png = histograms_png(found[1])
        except (StepError, PresetError, ValueError) as e:  # names the step or the value
            message = f"the distribution could not be collected: {e}"
            on_ui_thread(lambda: self._failed(message, generation))
            return
        except Exception as e:  # noqa: BLE001 - a bug: logged and shown, the panel stays usable
            _log.exception("distribution run failed")
            message = f"the distribution run failed ({type(e).__name__}: {e})"
            on_ui_thread(lambda: self._failed(message, generation))
            return
        seconds = time.perf_counter() - t0
        on_ui_thread(lambda: self._show(result, found, png, seconds, generation))

    def _progress(self, done: int, generation: int) -> None:
        def update() -> None:
            if generation == self._generation:
                self.progress.value = done
        on_ui_thread(update)

    def _failed(self, message: str, generation: int) -> None:
        if generation != self._generation:
            return
        self.progress.bar_style = "danger"
        self.run_button.disabled, self.cancel_button.disabled = False, True
        self._refuse(message)

    def _show(self, result: Distribution, found: tuple[list[Rate], list[Sampled], list[Picks]],
              png: bytes, seconds: float, generation: int) -> None:
        if generation != self._generation:
            return  # closed, or a newer run started
        self.result = result
        self.rates, self.sampled, self.picks = found
        self.run_button.disabled, self.cancel_button.disabled = False, True
        self.progress.value = result.draws
        self.progress.bar_style = "warning" if result.cancelled else "success"
        done = (f"cancelled after {result.draws} of {result.requested} draws"
                if result.cancelled else f"{result.draws} draws")
        self.status.value = (f"{done} in {seconds:.1f} s on the {escape(result.device.upper())}"
                             f" ({result.batches} batches of {result.batch}, "
                             f"{_rendered_on(result)})")
        self.table.value = rates_html(self.rates, result.draws)
        self.histograms.value = png
        more = len(self.sampled) - MAX_HISTOGRAMS
        note = (f"<i>the first {MAX_HISTOGRAMS} of {len(self.sampled)} sampled values are "
                "drawn</i><br>" if more > 0 else "")
        if not self.sampled:
            note = "<i>no parameter is drawn per sample (no range or choice in the chain)</i><br>"
        self.pick_table.value = note + picks_html(self.picks)
        self.dropped.value = dropped_html(result)


def dropped_html(result: Distribution) -> str:
    """Boxes each moving step dropped over the run ("" without labels)."""
    if not result.boxes:
        return ""
    rows = "".join(
        f"<tr><td>{escape(step_name(result.preset, key))}</td><td>{result.dropped.get(key, 0)}"
        f"</td><td>{n}</td><td>{100 * result.dropped.get(key, 0) / max(1, n):.1f} %</td></tr>"
        for key, n in result.boxes.items())
    return ("<b>boxes dropped</b> (keeping less than "
            f"{result.min_kept * 100:.0f} % of their area), first image's labels:"
            '<table style="font-size:12px;border-collapse:collapse" cellpadding="3">'
            "<tr><th>step</th><th>dropped</th><th>of boxes entering</th><th></th></tr>"
            f"{rows}</table>")


def _rendered_on(result: Distribution) -> str:
    """What the draws rendered on: a thumbnail, or with labels the image at its preview size
    (the boxes a step drops depend on it)."""
    if result.shrunk:
        return f"{result.side} px thumbnail"
    return f"the image at {result.side} px, as the preview renders it, for its labels"


def _run_label(n: Any) -> str:
    return f"Run {n} draws"
