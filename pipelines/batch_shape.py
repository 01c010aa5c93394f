"""Whether every batch of a preset has one image size, as training needs.

DALI's PyTorch iterator hands a batch over as one tensor, so every sample of a batch must have
the same shape; a chain that keeps each image's own size fails with "The batch must be
representable as a tensor" as soon as the training folder's images differ in size. This module
says so before anyone trains, from the catalog's ``canvas`` declarations
(:mod:`pipelines.canvas`) and the output tail, never from operator names: a step whose output
size does not depend on the input fixes the size; one whose size depends on a value drawn per
sample, or that runs with a probability below 1, makes sizes differ again.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .canvas import Canvas, Size, Span
from .catalog import CATALOG, Catalog
from .preset_types import Choice, Preset, Step, Uniform

PROBES: tuple[Size, Size] = ((97, 211), (331, 59))
"""Two input sizes of different aspect: a canvas that maps both to one size ignores its input."""
RANGE_POINTS = 5
"""Values tried across a ``uniform`` range (its ends and three points between)."""


@dataclass(frozen=True)
class BatchShape:
    """``size``: the (height, width) of every sample, or None when samples may differ;
    ``reason``: what set it or what makes sizes differ (for the user)."""

    size: Size | None
    reason: str

    @property
    def fixed(self) -> bool:
        return self.size is not None


def _points(value: object) -> tuple[float, ...]:
    if isinstance(value, Uniform):
        n = RANGE_POINTS - 1
        return tuple(value.lo + (value.hi - value.lo) * k / n for k in range(n + 1))
    if isinstance(value, Choice):
        return tuple(float(v) for v in value.values)
    return (float(value),)  # type: ignore[arg-type]


def _sizes(canvas: Canvas, step: Step, hw: Size) -> set[Size]:
    """Every output size the step can give for an input of ``hw`` (the input itself too when
    the step may be skipped)."""
    names = canvas.params
    choices = [_points(step.params[p]) for p in names]
    out = set()
    for combo in itertools.product(*choices):
        values = {p: Span((v,)) for p, v in zip(names, combo, strict=True)}
        out.add(canvas.fit(hw, canvas.size(hw, values), step.params))
    if step.probability < 1:
        out.add(hw)
    return out


def _step_sizes(step: Any, hw: Size, catalog: Catalog) -> set[Size]:
    """:func:`_sizes` of an operator step, or of a group of them (a step with ``children``:
    its picks, one after another; a union of what any child may do, so never too few)."""
    children = getattr(step, "children", None)
    if children is None:
        return _sizes(catalog[step.op].canvas, step, hw)
    active = [c for c in children if c.enabled]
    every = getattr(step, "pick", 1) >= len(active)
    out = {hw}
    for k, child in enumerate(active):
        if every:  # all children in list order
            out = {s for size in out for s in _sizes(catalog[child.op].canvas, child, size)}
        elif k < getattr(step, "pick", 1):  # ``pick`` of them, any of them each time
            out = {s for size in out for c in active
                   for s in _sizes(catalog[c.op].canvas, c, size)}
    if step.probability < 1:
        out.add(hw)
    return out


def _operators(step: Any) -> list[Step]:
    """The step itself, or a group's enabled children."""
    children = getattr(step, "children", None)
    return [c for c in children if c.enabled] if children is not None else [step]


def _keeps_size(step: Any, catalog: Catalog) -> bool:
    return all(not catalog[s.op].canvas.params
               and catalog[s.op].canvas.varies(s.params, None) is None
               for s in _operators(step))


def _varies(step: Any, catalog: Catalog, hw: Size | None) -> str | None:
    """Why the step's output sizes differ when every input is ``hw`` (None: any sizes), which
    its canvas's :meth:`~pipelines.canvas.Canvas.size` cannot tell (its ``varies``), or None."""
    for s in _operators(step):
        why = catalog[s.op].canvas.varies(s.params, hw)
        if why is not None:
            return why if s is step else f"may pick {s.op}, which {why}"
    return None


def batch_shape(preset: Preset, catalog: Catalog = CATALOG) -> BatchShape:
    """The size every sample of a batch has after the chain and the tail, if there is one."""
    size: Size | None = None
    reason = "each image keeps its own size"
    for i, step in preset.active_steps():
        if _keeps_size(step, catalog):
            continue
        where = f"step {i} ({step.op})"
        why = _varies(step, catalog, size)
        if why is not None:
            size, reason = None, f"{where} {why}"
            continue
        if size is not None:
            outs = _step_sizes(step, size, catalog)
            if len(outs) == 1:
                size = outs.pop()
            else:
                size, reason = None, _why(where, step)
            continue
        first, second = (_step_sizes(step, hw, catalog) for hw in PROBES)
        if len(first) == 1 and first == second:
            size, reason = first.pop(), f"{where} sets it"
        elif len(first) > 1 or len(second) > 1:
            reason = _why(where, step)
    out = preset.output
    if out is not None and out.crop is not None:
        return BatchShape((out.crop[0], out.crop[1]), "the training output crops it")
    if out is not None and out.resize_shorter is not None and size is None:
        reason += "; the training output resizes the shorter side only"
    return BatchShape(size, reason if size is None else reason)


def _why(where: str, step: Step) -> str:
    if step.probability < 1:
        return f"{where} changes the size on {step.probability:.0%} of the samples only"
    return f"{where} gives each sample its own size"


def size_fixing_ops(catalog: Catalog = CATALOG) -> list[str]:
    """Operators whose output size never depends on the input (at their defaults)."""
    found = []
    for name, spec in catalog.items():
        if spec.canvas.params:
            step = Step(name, spec.defaults())
            a, b = (_sizes(spec.canvas, step, hw) for hw in PROBES)
            if len(a) == 1 and a == b:
                found.append(name)
    return found


def mixed_size_warning(preset: Preset, catalog: Catalog = CATALOG) -> str | None:
    """What to tell a user whose batches would mix sizes (None when they cannot)."""
    shape = batch_shape(preset, catalog)
    if shape.fixed:
        return None
    return (f"Batches will mix image sizes ({shape.reason}): DALI's PyTorch iterator then fails "
            "with \"The batch must be representable as a tensor\" as soon as the training "
            "images differ in size. Turn on the training output with a crop, or end the chain "
            f"with a step that sets the size ({_listed(size_fixing_ops(catalog))}).")


def _listed(names: Iterable[str]) -> str:
    return ", ".join(names) or "none in this catalog"
