"""Planning a render against the pixel budgets (:mod:`pipelines.budget`) before DALI runs.

Each active step's output size follows from its input size and the operator's ``canvas``
declaration (:mod:`pipelines.canvas`); a value drawn per sample counts with its largest size,
and so do the values a sweep feeds. :func:`check_render`, called by the preview engine at the
start of every render, refuses a plan over a budget with a :class:`BudgetError` naming the
step, the parameter, the size and what is allowed; nothing is built or run, so the chain stays
as it was and the user can lower the value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .budget import LEDGER, Budget, current, mp
from .canvas import Canvas, Fixed, Shorter, Size, Span
from .catalog import CATALOG, Catalog
from .codegen import feed_name
from .kept_pipelines import KEPT
from .params import Param
from .preset import GROUP_KEY, Choice, Group, Preset, Step, Uniform
from .step_error import StepError
from .work import ONE_PASS, Work


class BudgetError(StepError):
    """A render refused by a budget before DALI ran; ``param`` names what to lower (None when
    no parameter can help), ``pixels`` the size refused and ``limit`` the budget."""

    def __init__(self, message: str, step: int | None, op: str | None, *, param: str | None,
                 pixels: int, limit: int) -> None:
        super().__init__(message, step, op)
        self.param = param
        self.pixels = pixels
        self.limit = limit


class WorkError(BudgetError):
    """A render refused before DALI ran because its steps would cost more than the device's
    work budget (:mod:`pipelines.work`): ``taps`` is what it would cost, ``limit`` the budget,
    ``fits`` the largest value of ``param`` that would pass (None when lowering none helps)."""

    def __init__(self, message: str, step: int | None, op: str | None, *, param: str | None,
                 taps: float, limit: int, fits: float | None) -> None:
        super().__init__(message, step, op, param=param, pixels=0, limit=limit)
        self.taps = taps
        self.fits = fits


@dataclass
class PlannedStep:
    """One step of a render plan: the output size of every image (an upper bound)."""

    index: int | None  # the step's index in the preset; None for the training tail
    op: str
    canvas: Canvas
    values: dict[str, Span]
    sizes: list[Size]
    child: int | None = None
    """The child of the group at ``index`` this is (None: a step of its own)."""
    work: Work = ONE_PASS
    work_params: tuple[Param, ...] = ()
    """The catalog's declarations of ``work.params`` (for the value a refusal suggests)."""

    def taps(self, draws: int, values: dict[str, Span] | None = None) -> float:
        """What the step costs over the batch, in taps (``values`` instead of its own)."""
        return draws * sum(map(_px, self.sizes)) * self.work.taps(values or self.values)

    def where(self) -> tuple[int | None, str | None, str]:
        """(step, op, prefix) for an error: the tail has no step index; a group's child is
        named after its group."""
        if self.index is None:
            return None, self.op, f"training tail ({self.op}): "
        if self.child is not None:
            return self.index, GROUP_KEY, f"child {self.child} ({self.op}): "
        return self.index, self.op, ""


@dataclass
class RenderPlan:
    """Every step's output sizes for ``inputs`` (one size per image) and ``draws`` draws."""

    inputs: list[Size]
    draws: int
    steps: list[PlannedStep] = field(default_factory=list)
    passed: tuple[Budget, int] | None = field(default=None, repr=False, compare=False)
    """The budget whose image and step limits this (finished) plan met, and its footprint:
    an engine renders one remembered plan again and again (a slider drag), and these limits
    depend on nothing else; :func:`check_plan` then checks only what the kernel holds."""

    def moved(self, k: int) -> int:
        """Pixels step ``k`` takes in plus puts out over the batch."""
        before = self.inputs if k == 0 else self.steps[k - 1].sizes
        now = self.steps[k].sizes
        return self.draws * sum(_px(a) + _px(b) for a, b in zip(before, now, strict=True))

    @property
    def outputs(self) -> list[Size]:
        return self.steps[-1].sizes if self.steps else self.inputs

    @property
    def footprint(self) -> int:
        """Pixels the render holds at its peak: its largest step plus the outputs' host copies."""
        largest = max((self.moved(k) for k in range(len(self.steps))),
                      default=self.draws * sum(map(_px, self.inputs)))
        return largest + self.draws * sum(map(_px, self.outputs))

    @property
    def work(self) -> float:
        """What every step costs over the batch, in taps (:mod:`pipelines.work`)."""
        return sum(step.taps(self.draws) for step in self.steps)


def _px(size: Size) -> int:
    return size[0] * size[1]


def _span(value: Any) -> Span:
    if isinstance(value, Uniform):
        return Span((float(value.lo), float(value.hi)), continuous=True)
    if isinstance(value, Choice):
        return Span(tuple(float(v) for v in value.values))
    return Span((float(value),))


def plan_render(preset: Preset, inputs: Sequence[Size], draws: int, *, tail: bool = False,
                overrides: Mapping[str, np.ndarray] | None = None,
                catalog: Catalog = CATALOG) -> RenderPlan:
    """The output size of every active step for every input (``tail``: the preset's output
    resize and crop too). ``overrides`` are per-sample values fed instead of a parameter
    (sweeps), by feed name; they count with their largest value."""
    plan = RenderPlan([(int(h), int(w)) for h, w in inputs], draws)
    sizes = list(plan.inputs)
    for i, step in preset.active_steps():
        if not isinstance(step, Group):
            sizes = _plan_step(plan, i, None, step, sizes, overrides, catalog)
            continue
        for j, child in step.active_children():  # each may run or not: keep the larger size
            after = _plan_step(plan, i, j, child, sizes, overrides, catalog)
            sizes = [(max(a[0], b[0]), max(a[1], b[1])) for a, b in zip(sizes, after,
                                                                          strict=True)]
            plan.steps[-1].sizes = sizes
    out = preset.output if tail else None
    if out is not None and out.resize_shorter:
        values = {"resize_shorter": Span((float(out.resize_shorter),))}
        canvas = Shorter("resize_shorter")
        sizes = [canvas.size(s, values) for s in sizes]
        plan.steps.append(PlannedStep(None, "output.resize_shorter", canvas, values, sizes))
    if out is not None and out.crop:
        values = {"crop_h": Span((float(out.crop[0]),)), "crop_w": Span((float(out.crop[1]),))}
        canvas = Fixed("crop_h", "crop_w")
        sizes = [canvas.size(s, values) for s in sizes]
        plan.steps.append(PlannedStep(None, "output.crop", canvas, values, sizes))
    return plan


def _plan_step(plan: RenderPlan, i: int, child: int | None, step: Step, sizes: list[Size],
               overrides: Mapping[str, np.ndarray] | None, catalog: Catalog) -> list[Size]:
    """Plans one operator (a step, or child ``child`` of the group at ``i``); its sizes.

    A group's child is planned as if it ran on the larger of the sizes its group may hand
    it: every canvas grows with its input, so that bounds any pick of the children."""
    spec = catalog[step.op]
    canvas, work = spec.canvas, spec.work
    values = {}
    for name in dict.fromkeys((*canvas.params, *work.params)):
        fed = (overrides or {}).get(feed_name(i, name, child=child))
        values[name] = (Span(tuple(float(v) for v in np.unique(fed))) if fed is not None
                        else _span(step.params[name]))
    sizes = [canvas.size(s, values) for s in sizes]
    plan.steps.append(PlannedStep(i, step.op, canvas, values, sizes, child, work,
                                  tuple(spec.param(n) for n in work.params)))
    return sizes


def check_plan(plan: RenderPlan, budget: Budget, *, held: int = 0, device: str = "cpu",
               work_before: float = 0.0) -> None:
    """Raises :class:`BudgetError` for the first step over a budget; ``held`` is what the
    kernel holds besides this render, ``work_before`` the taps of renders run with it (a
    fused pipeline's earlier members) on ``device``. A step over the render or kernel budget
    because of the size an earlier step made (a colour step after a ``paste``) is blamed on
    that step."""
    if plan.passed is None or plan.passed[0] != budget:
        _check_steps(plan, budget)
        plan.passed = (budget, plan.footprint)  # never set when a limit is exceeded
    check_work(plan, budget.work_limit(device), device, before=work_before)
    need = plan.passed[1]
    if held + need > budget.kernel_pixels:
        if plan.steps:
            k = max(range(len(plan.steps)), key=plan.moved)
            blamed = _culprit(plan, k)
            made = f"{_made(blamed, plan.steps[k])}; "
        else:
            blamed, made = None, ""
        raise _error(blamed, f"{made}this render needs {mp(need)} while the kernel already "
                     f"holds {mp(held)} in loaded images and other renders, and at most "
                     f"{mp(budget.kernel_pixels)} per kernel is allowed",
                     "preview fewer images, fewer draws or a smaller size", held + need,
                     budget.kernel_pixels)


def _check_steps(plan: RenderPlan, budget: Budget) -> None:
    """The limits that depend on the plan and the budget only: each image, each step."""
    for i, (h, w) in enumerate(plan.inputs):
        if h * w > budget.image_pixels:
            index, op, prefix = plan.steps[0].where() if plan.steps else (None, None, "")
            raise BudgetError(
                f"{prefix}image {i} is {w}x{h} px ({mp(h * w)}); at most "
                f"{mp(budget.image_pixels)} per image is allowed: preview a smaller size",
                index, op, param=None, pixels=h * w, limit=budget.image_pixels)
    for k, step in enumerate(plan.steps):
        before = plan.inputs if k == 0 else plan.steps[k - 1].sizes
        _check_not_empty(step, before)
        big = max(range(len(step.sizes)), key=lambda j: _px(step.sizes[j]))
        (h, w), (ih, iw) = step.sizes[big], before[big]
        if h * w > budget.image_pixels:
            what = step.canvas.describe(step.values) or "this step"
            raise _error(step, f"{what} makes an image of up to "
                         f"{w}x{h} px ({mp(h * w)}) from {iw}x{ih}; at most "
                         f"{mp(budget.image_pixels)} per image is allowed",
                         "preview a smaller size", h * w, budget.image_pixels)
        moved = plan.moved(k)
        if moved > budget.render_pixels:
            blamed = _culprit(plan, k)
            label = ("this step" if blamed is step else f"step {step.index} ({step.op})"
                     if step.index is not None else step.op)
            raise _error(blamed, f"{_made(blamed, step)}; over {len(plan.inputs)} image(s) x "
                         f"{plan.draws} draw(s), {label} takes in and puts out {mp(moved)}, "
                         "and at most "
                         f"{mp(budget.render_pixels)} per step of a render is allowed",
                         "preview fewer images, fewer draws or a smaller size", moved,
                         budget.render_pixels)


def check_work(plan: RenderPlan, limit: int, device: str, *, before: float = 0.0) -> None:
    """Raises :class:`WorkError` when the plan's steps (plus ``before``) would cost more
    than ``limit`` taps, naming the step that costs most and the largest value of its work
    parameter that would fit (:mod:`pipelines.work`)."""
    total = before + plan.work
    if total <= limit or not plan.steps:
        return
    step = max(plan.steps, key=lambda s: s.taps(plan.draws))
    index, op, prefix = step.where()
    fits = _fitting_value(step, plan.draws, limit - (total - step.taps(plan.draws)))
    big = max(step.sizes, key=_px)
    what = (f"{', '.join(step.values[p].describe(p) for p in step.work.params)} reads "
            f"{step.work.taps(step.values):g} pixels for each it writes; "
            if step.work.params else "")
    param = step.work.params[0] if step.work.params else None
    lower = (f"lower {param} to at most {fits:g}, or " if param is not None and fits is not None
             else f"lower {param}, or " if param is not None else "")
    raise WorkError(f"{prefix}{what}over {len(plan.inputs)} image(s) of up to {big[1]}x{big[0]} "
                    f"px x {plan.draws} draw(s), this render would cost {total / 1e9:,.3g} G "
                    f"taps, and at most {limit / 1e9:,.3g} G per render is allowed on the "
                    f"{device.upper()}: {lower}preview fewer images, fewer draws or a smaller "
                    "size", index, op, param=param, taps=total, limit=limit, fits=fits)


def _fitting_value(step: PlannedStep, draws: int, room: float) -> float | None:
    """The largest value of the step's first work parameter (its others as they are) whose
    taps fit in ``room``, as the parameter allows it (whole, odd); None when none does."""
    if not step.work_params:
        return None
    p = step.work_params[0]
    bottom = lo = p.bounds[0] if p.bounds is not None else 0.0
    hi = step.values[p.name].hi

    def fits(v: float) -> bool:
        return step.taps(draws, {**step.values, p.name: Span((v,))}) <= room

    if not fits(lo):
        return None
    for _ in range(60):  # the taps never fall as the value grows
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    unit = 10.0 ** -p.decimals  # a value the parameter can be set to, rounded down
    v = math.floor(lo / unit + 1e-9) * unit
    if p.odd and int(v) % 2 == 0:
        v -= 1
    return round(v, p.decimals) if v >= bottom and fits(v) else None


def _check_not_empty(step: PlannedStep, before: list[Size]) -> None:
    """Refuses a step planned to make an image without rows or columns: DALI would run it,
    and a later operator crash the process on the empty image (a blur segfaults)."""
    empty = next((j for j, size in enumerate(step.sizes) if min(size) < 1), None)
    if empty is None:
        return
    (h, w), (ih, iw) = step.sizes[empty], before[empty]
    index, op, prefix = step.where()
    what = step.canvas.describe(step.values) or "this step"
    raise BudgetError(f"{prefix}{what} makes image {empty} {w}x{h} px from {iw}x{ih}; an "
                      "image needs at least 1 px each way: change "
                      f"{' or '.join(step.canvas.params) or 'the step'}", index, op,
                      param=step.canvas.params[0] if step.canvas.params else None,
                      pixels=0, limit=1)


def _culprit(plan: RenderPlan, k: int) -> PlannedStep:
    """The last step up to ``k`` that sets the image size (step ``k`` itself if none does)."""
    for j in range(k, -1, -1):
        if plan.steps[j].canvas.params:
            return plan.steps[j]
    return plan.steps[k]


def _made(blamed: PlannedStep, step: PlannedStep) -> str:
    """What made the images as large as ``step``'s output, for a message."""
    big = max(step.sizes, key=_px)
    if blamed.canvas.params:
        return f"{blamed.canvas.describe(blamed.values)} gives images of up to {big[1]}x{big[0]} px"
    return f"the images are up to {big[1]}x{big[0]} px"


def _error(step: PlannedStep | None, what: str, hint: str, pixels: int,
           limit: int) -> BudgetError:
    if step is None:
        return BudgetError(f"{what}: {hint}", None, None, param=None, pixels=pixels,
                           limit=limit)
    index, op, prefix = step.where()
    remedy = f"{step.canvas.remedy}, or " if step.canvas.remedy else ""
    param = step.canvas.params[0] if step.canvas.params else None
    return BudgetError(f"{prefix}{what}: {remedy}{hint}", index, op, param=param,
                       pixels=pixels, limit=limit)


def check_render(owner: Any, preset: Preset, arrays: Sequence[np.ndarray], draws: int, *,
                 tail: bool = False, overrides: Mapping[str, np.ndarray] | None = None,
                 catalog: Catalog = CATALOG, budget: Budget | None = None,
                 plan: RenderPlan | None = None) -> RenderPlan:
    """Plans the render ``owner`` (an engine) is about to run (or takes ``plan``, that
    render's :func:`plan_render`) and checks it against the budgets; raises
    :class:`BudgetError` (a :class:`StepError`) before any DALI work. On success the plan's
    footprint becomes ``owner``'s render in the kernel's ledger, and the pipelines kept built
    (:mod:`.kept_pipelines`) are cut to what the kernel's budget leaves beside it."""
    budget = budget or current()
    if plan is None:
        plan = plan_render(preset, [a.shape[:2] for a in arrays], draws, tail=tail,
                           overrides=overrides, catalog=catalog)
    held = LEDGER.held(excluding=owner)
    check_plan(plan, budget, held=held, device=getattr(owner, "device", "cpu"))
    assert plan.passed is not None  # check_plan sets it or raises
    hold_render(owner, plan.passed[1], held, budget)
    return plan


def hold_render(owner: Any, pixels: int, held: int, budget: Budget) -> None:
    """``owner``'s checked render of ``pixels`` enters the kernel's ledger (beside ``held``,
    the rest of it), and the pipelines kept built are cut to what the budget leaves."""
    LEDGER.hold_render(owner, pixels)
    KEPT.fit(budget.kernel_pixels - held - pixels)
