"""The time budget of Python operators in a preview render, checked before DALI runs.

A custom operator runs Python once per sample, one sample after another; a slow one would
freeze the preview with no sign of life. Registration measured what a call costs
(:class:`~pipelines.custom_code.CallCost`); before a render the engine multiplies that by the
pixels every sample has at the step (from the render plan, :mod:`pipelines.render_budget`) and
refuses a render whose Python time would pass :data:`CUSTOM_SECONDS`, naming the operator, the
estimate and the budget. Nothing is built or run, so the user can lower the number of images,
draws or the size. The builder shows a busy line for a render estimated over
:data:`NOTICE_SECONDS` (:mod:`widgets.live`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .catalog import CATALOG, Catalog
from .preset import Preset
from .render_budget import plan_render
from .step_error import StepError

CUSTOM_SECONDS = 10.0
"""Longest estimated time custom (Python) operators may take in one preview render."""
NOTICE_SECONDS = 0.5
"""A render whose Python operators are estimated to take longer shows a busy line first."""


class CustomTimeError(StepError):
    """A render refused before DALI ran because its Python operators would take too long;
    ``seconds`` is the estimate, ``limit`` the budget."""

    def __init__(self, message: str, step: int | None, op: str | None, *, seconds: float,
                 limit: float) -> None:
        super().__init__(message, step, op)
        self.seconds = seconds
        self.limit = limit


@dataclass(frozen=True)
class StepTime:
    """The estimated time of one custom step over a whole render."""

    step: int
    op: str
    function: str
    seconds: float
    samples: int


def estimate(preset: Preset, sizes: Sequence[tuple[int, int]], draws: int, *,
             overrides: Mapping[str, np.ndarray] | None = None,
             catalog: Catalog = CATALOG) -> list[StepTime]:
    """Each active custom step's time over a render of images of ``sizes`` x ``draws``
    (every sample counts, a step that fires with a probability too)."""
    steps = {(i, s.op): s for i, s in preset.active_ops()  # a group's children share its i
             if (code := catalog[s.op].custom_code) is not None and code.cost is not None}
    if not steps:
        return []
    plan = plan_render(preset, sizes, draws, overrides=overrides, catalog=catalog)
    out = []
    for k, planned in enumerate(plan.steps):
        step = steps.get((planned.index, planned.op)) if planned.index is not None else None
        if step is None:
            continue
        code = catalog[step.op].custom_code
        assert code is not None and code.cost is not None and planned.index is not None
        before = plan.inputs if k == 0 else plan.steps[k - 1].sizes
        pixels = [h * w for h, w in before] * draws
        out.append(StepTime(planned.index, step.op, code.function_name,
                            code.cost.seconds(pixels), len(pixels)))
    return out


def check_custom_time(preset: Preset, arrays: Sequence[np.ndarray], draws: int, *,
                      overrides: Mapping[str, np.ndarray] | None = None,
                      catalog: Catalog = CATALOG, limit: float | None = None) -> list[StepTime]:
    """Raises :class:`CustomTimeError` when the render's custom steps would take longer than
    ``limit`` (default :data:`CUSTOM_SECONDS`), blaming the slowest; returns the estimates."""
    limit = CUSTOM_SECONDS if limit is None else limit
    times = estimate(preset, [a.shape[:2] for a in arrays], draws, overrides=overrides,
                     catalog=catalog)
    total = sum(t.seconds for t in times)
    if total <= limit:
        return times
    worst = max(times, key=lambda t: t.seconds)
    code = catalog[worst.op].custom_code
    assert code is not None and code.cost is not None
    others = (f" ({total:.1f} s with the other Python steps)"
              if len(times) > 1 else "")
    raise CustomTimeError(
        f"the Python function {worst.function} would take about {worst.seconds:.1f} s in this "
        f"render{others}: {worst.samples} sample(s) of {len(arrays)} image(s) x {draws} "
        f"draw(s), at {code.cost.describe()} (measured at registration); at most "
        f"{limit:g} s of Python operators per render is allowed: preview fewer images, fewer "
        "draws or a smaller size", worst.step, worst.op, seconds=total, limit=limit)
