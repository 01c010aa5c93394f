"""One step at several values of one parameter, as one render: the gallery's rows and the
builder's thumbnails (``PreviewEngine.render_sweep``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .codegen import feed_name
from .preset import Preset, Step, load
from .render_result import Render, stack_renders

if TYPE_CHECKING:
    from .engine import PreviewEngine


def render_sweep(engine: PreviewEngine, step: Step, param: str, values: Sequence[Any],
                 seed: int, images: Sequence[int] | None) -> Render:
    """``tile(i, k)`` is image i at ``values[k]``. A parameter that can differ per sample is fed
    per sample into one pipeline (one run for the whole row); any other costs one pipeline per
    value."""
    spec = engine.catalog[step.op]
    p = spec.param(param)
    base = Step(step.op, dict(step.params), 1.0, True)
    if not p.per_sample:
        parts = []
        for v in values:
            base.params[param] = v
            parts.append(engine.render(Preset([base], seed=seed), images=images))
        return stack_renders(parts)
    for v in values[1:]:  # fed past the preset's checks: each one checked as its step
        load(Preset([Step(step.op, {**base.params, param: v}, 1.0, True)]), engine.catalog)
    base.params[param] = values[0]
    preset = Preset([base], seed=seed)
    n = len(engine.images) if images is None else len(images)
    per_sample = np.repeat(np.asarray(values, dtype=np.float64), n)
    return engine.render(preset, draws=len(values), images=images,
                         _override={feed_name(0, param): per_sample})
