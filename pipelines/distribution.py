"""The chain over many draws: collect the pipeline's own records of hundreds of samples.

One tile says what happened once; whether a step set to p = 0.3 fires about 30 % of the time,
whether a range is covered, which operations a policy picks, takes hundreds of draws.
:func:`collect` renders the chain through the preview engine on a small thumbnail of one
image (only the records matter, so 64 px keeps a batch cheap) in batches, and keeps the
engine's per-sample records (:class:`~.render_result.SampleRecord`, the pipeline's own
outputs); :mod:`.distribution_stats` counts them. Nothing is re-simulated.

A preview render restarts the pipeline's random state (so a tile shows the same draw while
sliders move); here only batch 0 does, and every later batch goes on from the state the
previous one left (``render(advance=True)``), as the training pipeline's next iteration
would: one build for the whole run, and batch 0 is exactly what the preview engine renders
for the preset on that thumbnail with that many draws. Every batch is planned against
the pixel budgets (:mod:`.budget`) and the custom operators' time before any DALI work, the
number of draws is bounded (:data:`MAX_DRAWS`), progress is reported after every batch and
a cancel request is honoured between batches. With the image's labels, each moving step's kept
fractions (the pipeline's own outputs) count how many boxes it dropped over all the draws; those
draws render on the image as given, not a thumbnail: a step sized in pixels (``crop``'s window)
keeps a different share of a box on a smaller image, so a thumbnail's counts would not be the
preview's.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .budget import LEDGER, Budget, current
from .catalog import CATALOG, Catalog
from .custom_budget import check_custom_time
from .device import Device, resolve
from .engine import MAX_BATCH, PreviewEngine
from .label_render import SampleLabels
from .labels import DEFAULT_MIN_KEPT
from .preset import Preset, load
from .render_budget import check_plan, plan_render
from .render_result import SampleRecord
from .step_error import StepError

THUMB_SIDE = 64
"""Longer side of the thumbnail the draws are rendered on (records do not depend on it)."""
MAX_DRAWS = 2000
"""The most draws one run collects (its time budget)."""
DEFAULT_DRAWS: dict[str, int] = {"gpu": 1000, "cpu": 400}
"""What a run collects unless asked otherwise: a thousand on the GPU, a few hundred on the
CPU (``dali-gallery bench --only distribution``, 2 shared cores: 400 draws of the six-step
standard chain in 0.6-0.9 s; of the three auto-augment policies 8 s the first time in a
process, tracing included, 0.4 s once built)."""
PROGRESS_STEPS = 8
"""A run is split into about this many batches, so that progress moves and cancel is quick
(all of them run one built pipeline)."""
MIN_BATCH = 25
Progress = Callable[[int, int], None]
"""``on_progress(done, total)``: draws collected so far, out of the draws asked for."""


@dataclass
class Distribution:
    """The records of ``len(records)`` draws of ``preset`` (fewer than ``requested`` when the
    run was cancelled), rendered as ``batches`` renders of ``batch`` draws each (the last one's
    surplus dropped)."""

    preset: Preset
    requested: int
    records: list[SampleRecord] = field(default_factory=list)
    batch: int = 0
    batches: int = 0
    device: Device = "cpu"
    side: int = THUMB_SIDE
    """Longer side of the image the draws rendered on."""
    shrunk: bool = True
    """Whether that image is a thumbnail (False with labels: the image as given)."""
    ms: float = 0.0
    cancelled: bool = False
    boxes: dict[tuple[int, int | None], int] = field(default_factory=dict)
    """(step, child) -> boxes that entered that moving step, over all draws (with labels)."""
    dropped: dict[tuple[int, int | None], int] = field(default_factory=dict)
    """(step, child) -> boxes it dropped (kept less of their area than ``min_kept``)."""
    min_kept: float = DEFAULT_MIN_KEPT

    @property
    def draws(self) -> int:
        return len(self.records)


def thumbnail(image: np.ndarray, side: int = THUMB_SIDE) -> np.ndarray:
    """``image`` at most ``side`` px on its longer side (input preparation only: DALI renders
    every draw)."""
    from PIL import Image

    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected an HxWx3 uint8 image, got {image.dtype} {image.shape}")
    pic = Image.fromarray(image)
    pic.thumbnail((side, side), Image.Resampling.BILINEAR)
    return np.ascontiguousarray(np.asarray(pic.convert("RGB")))


def _as_given(image: np.ndarray) -> np.ndarray:
    """``image`` unchanged (labelled draws render at its size), checked as :func:`thumbnail`
    checks it."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected an HxWx3 uint8 image, got {image.dtype} {image.shape}")
    return np.ascontiguousarray(image)


def check_draws(draws: Any) -> int:
    """The number of draws asked for, or ValueError saying what is allowed."""
    if isinstance(draws, bool) or not isinstance(draws, int) or not 1 <= draws <= MAX_DRAWS:
        raise ValueError(f"draws {draws!r} is not allowed; expected a whole number from 1 to "
                         f"{MAX_DRAWS}")
    return draws


def batch_size(preset: Preset, size: tuple[int, int], draws: int, *, owner: Any = None,
               budget: Budget | None = None, catalog: Catalog = CATALOG) -> int:
    """Draws per batch: about ``draws / PROGRESS_STEPS`` (at least :data:`MIN_BATCH`), at most
    :data:`~.engine.MAX_BATCH` and at most what the pixel budgets allow for one render of
    ``size`` images. Raises :class:`~.render_budget.BudgetError` when not even one draw fits."""
    budget = budget or current()
    one = plan_render(preset, [size], 1, catalog=catalog)
    device = getattr(owner, "device", "cpu")
    check_plan(one, budget, held=LEDGER.held(excluding=owner),  # names the step if none fits
               device=device)
    largest = max((one.moved(k) for k in range(len(one.steps))), default=1)
    fits = min(budget.render_pixels // max(1, largest),
               (budget.kernel_pixels - LEDGER.held(excluding=owner)) // max(1, one.footprint),
               int(budget.work_limit(device) // max(1.0, one.work)))
    wanted = max(MIN_BATCH, math.ceil(draws / PROGRESS_STEPS))
    return max(1, min(draws, wanted, MAX_BATCH, fits))


def collect(preset: Preset | dict | str, image: np.ndarray, draws: int | None = None, *,
            device: str = "cpu", side: int = THUMB_SIDE, batch: int | None = None,
            on_progress: Progress | None = None, cancel: threading.Event | None = None,
            engine: PreviewEngine | None = None, labels: SampleLabels | None = None,
            min_kept: float = DEFAULT_MIN_KEPT, catalog: Catalog = CATALOG) -> Distribution:
    """The records of ``draws`` draws (default :data:`DEFAULT_DRAWS` for the device) of
    ``preset`` on a ``side`` px thumbnail of ``image``.

    With ``labels`` the draws render on ``image`` itself (``side`` is not applied): which boxes a
    step drops can depend on the image's size in pixels.

    ``on_progress(done, total)`` is called before the first batch and after each one (the
    last call has ``done == total`` unless cancelled); setting ``cancel`` stops the run
    between batches and returns what was collected, marked ``cancelled``. ``engine``: an
    engine to render with (default: one of its own, so the live preview's pipelines stay
    untouched, closed at the end). ``labels``: the image's labels (masks are not needed to count
    boxes and are left out); each moving step's dropped boxes are then counted. A render failure
    raises :class:`~.step_error.StepError` naming the step (a step that refuses labels too)."""
    preset = load(preset, catalog)
    dev = resolve(device) if engine is None else engine.device
    total = check_draws(DEFAULT_DRAWS[dev] if draws is None else draws)
    if isinstance(side, bool) or not isinstance(side, int) or not 8 <= side <= 512:
        raise ValueError(f"side {side!r} is not allowed; expected 8 to 512 px")
    small = thumbnail(image, side) if labels is None else _as_given(image)
    own = engine is None
    eng = engine or PreviewEngine(dev, catalog=catalog)
    result = Distribution(preset, total, device=dev, side=max(small.shape[:2]),
                          shrunk=labels is None, min_kept=min_kept)
    try:
        per = batch if batch is not None else batch_size(preset, small.shape[:2], total,
                                                          owner=eng, catalog=catalog)
        if not 1 <= per <= MAX_BATCH:
            raise ValueError(f"batch {per} is not allowed; expected 1 to {MAX_BATCH}")
        check_custom_time(preset, [small], total, catalog=catalog)  # the whole run's time
        eng.set_arrays([small], ["thumbnail"])
        if labels is not None:
            eng.set_labels([SampleLabels(labels.boxes, labels.classes, labels.keypoints)])
            eng.min_kept = min_kept
        result.batch = per
        _run(preset, eng, result, total, per, on_progress, cancel)
    finally:
        if own:
            eng.close()
    return result


def _run(preset: Preset, eng: PreviewEngine, result: Distribution, total: int, per: int,
         on_progress: Progress | None, cancel: threading.Event | None) -> None:
    t0 = time.perf_counter()
    if on_progress is not None:
        on_progress(0, total)
    while result.draws < total:
        if cancel is not None and cancel.is_set():
            result.cancelled = True
            break
        render = eng.render(preset, draws=per, advance=result.batches > 0, stream=True)
        offset, keep = result.draws, min(per, total - result.draws)
        result.records += [SampleRecord(r.image, offset + r.draw, r.fired, r.values, r.children,
                                        r.child_values) for r in render.records[:keep]]
        for out in (render.labels or [])[:keep]:
            for key, kept in out.kept.items():
                result.boxes[key] = result.boxes.get(key, 0) + len(kept)
                result.dropped[key] = result.dropped.get(key, 0) + int((kept < eng.min_kept).sum())
        result.batches += 1
        result.ms = (time.perf_counter() - t0) * 1000
        if on_progress is not None:
            on_progress(result.draws, total)


__all__ = ["DEFAULT_DRAWS", "MAX_DRAWS", "THUMB_SIDE", "Distribution", "StepError",
           "batch_size", "check_draws", "collect", "thumbnail"]
