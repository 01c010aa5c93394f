"""What the gallery shows for each operator, derived from its catalog declaration only.

An operator with a magnitude parameter is swept from its neutral value (or the slider's low end)
to the slider's far end. One without a magnitude walks the values of its choice parameters
(enums and booleans: filter kernels, flip axes, colour spaces, policies), so every choice is
seen; when it has none it shows several random draws if it draws random numbers (seeded ops)
and its defaults otherwise. ``render_row`` renders a row through the preview engine: a run-time
magnitude is fed per sample, so the whole row is one DALI run; choices cost one run each.
On labelled images (``engine.set_labels``) each tile's moved labels come back with it, and an
operator that cannot move labels is not rendered: its row says why (its catalog rule).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from dali_gallery.pipelines.catalog import CATALOG, Catalog, OpSpec
from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.label_render import LabelOutput
from dali_gallery.pipelines.labels import Refuse
from dali_gallery.pipelines.params import Param
from dali_gallery.pipelines.preset import Preset, PresetError, Step, load, new_step
from dali_gallery.pipelines.render_result import stack_renders

Mode = Literal["sweep", "draws", "defaults", "choices"]
STEPS = 4
MAX_COMBINATIONS = 8
"""Choice parameters are combined (every combination a column) up to this many columns; past
it each parameter is walked on its own, the others at their defaults (filter: 5 kernels, then
the 4 other borders)."""


@dataclass(frozen=True)
class Column:
    """One magnitude (or draw) of a row: its label and the parameters "add" puts in a step."""

    label: str
    params: dict[str, Any] = field(default_factory=dict)
    short: str = ""

    @property
    def button(self) -> str:
        """The text of the column's add button (the value alone; the row names the param)."""
        return self.short or self.label


@dataclass(frozen=True)
class RowPlan:
    """The columns of one operator's row and how they are rendered."""

    op: str
    mode: Mode
    param: str | None
    columns: tuple[Column, ...]
    walks: tuple[str, ...] = ()
    """The parameters the columns vary (the swept one, or the choice parameters)."""

    @property
    def values(self) -> list[Any]:
        return [c.params[self.param] for c in self.columns] if self.param else []


@dataclass
class RowResult:
    """A rendered row: ``tiles[k][i]`` is image i in column k (pixels straight from DALI).

    ``unavailable`` explains an operator this device cannot run; ``error`` a failed render;
    ``refused`` why an operator that cannot move labels is not rendered on labelled images.
    ``labels[k][i]``: what the chain did to image i's labels in column k (labelled images).
    """

    plan: RowPlan
    tiles: list[list[np.ndarray]] = field(default_factory=list)
    ms: float = 0.0
    error: str | None = None
    unavailable: str | None = None
    refused: str | None = None
    labels: list[list[LabelOutput]] | None = None

    @property
    def op(self) -> str:
        return self.plan.op

    @property
    def ok(self) -> bool:
        return (self.error is None and self.unavailable is None and self.refused is None
                and bool(self.tiles))


def _snap(p: Param, v: float) -> Any:
    """A sweep value as the slider would give it: on the step grid, odd when required."""
    if p.kind == "int":
        n = int(round(v))
        if p.odd and n % 2 == 0:
            n = n + 1 if p.slider is None or n + 1 <= p.slider[1] else n - 1
        return n
    if p.step:
        v = round(v / p.step) * p.step
    if p.slider is not None:
        v = min(max(v, p.slider[0]), p.slider[1])
    return round(float(v), p.decimals)


def sweep_values(p: Param, signed: bool = False, steps: int = STEPS) -> list[Any]:
    """``steps`` values of ``p`` from neutral (or the slider's low end) to its far end.

    Signed parameters go from neutral towards the slider's maximum; a neutral value sitting at
    the maximum sweeps down to the minimum instead. Enums and booleans list their choices.
    """
    if p.kind == "bool":
        return [False, True]
    if p.kind == "enum":
        return list(p.choices[:steps])
    lo, hi = p.slider or p.bounds or (0.0, 1.0)
    start = p.neutral if p.neutral is not None else lo
    end = hi if (signed or start < hi) else lo
    if start == end:
        end = lo if start == hi else hi
    raw = [start + (end - start) * k / (steps - 1) for k in range(steps)] if steps > 1 else [end]
    values: list[Any] = []
    for v in raw:
        s = _snap(p, v)
        if s not in values:
            values.append(s)
    return values


def short_value(p: Param, value: Any) -> str:
    """``30 deg``: a value with its unit (from the declaration)."""
    if isinstance(value, bool) or p.kind in ("enum", "bool"):
        shown = str(value)
    elif p.kind == "int":
        shown = str(int(value))
    else:
        shown = f"{float(value):.{p.decimals}f}"
    unit = f" {p.unit}" if p.unit and p.unit not in p.name else ""
    return shown + unit


def format_value(p: Param, value: Any) -> str:
    """``angle=30 deg``: how a column is labelled."""
    return f"{p.name}={short_value(p, value)}"


def choice_values(p: Param) -> list[Any]:
    """Every value a choice parameter (enum or bool) can take, in declaration order."""
    return [False, True] if p.kind == "bool" else list(p.choices)


def choice_params(spec: OpSpec) -> list[Param]:
    """The parameters of ``spec`` whose value is one of a few choices."""
    return [p for p in spec.params if p.kind == "bool" or (p.kind == "enum" and p.choices)]


def _choice_column(params: list[Param], values: tuple[Any, ...]) -> Column:
    """A column setting ``params`` to ``values``; its button names the choices (booleans by
    the names of those that are on, ``none`` when all are off)."""
    label = ", ".join(format_value(p, v) for p, v in zip(params, values, strict=True))
    if all(p.kind == "bool" for p in params):
        short = "+".join(p.name for p, v in zip(params, values, strict=True) if v) or "none"
    else:
        short = " ".join(short_value(p, v) for p, v in zip(params, values, strict=True))
    return Column(label, {p.name: v for p, v in zip(params, values, strict=True)}, short)


def choice_columns(params: list[Param]) -> tuple[Column, ...]:
    """Every combination of the choices when there are at most :data:`MAX_COMBINATIONS`;
    otherwise every choice of each parameter in turn (the others at their defaults)."""
    values = [choice_values(p) for p in params]
    if math.prod(len(v) for v in values) <= MAX_COMBINATIONS:
        return tuple(_choice_column(params, combo) for combo in itertools.product(*values))
    cols = [_choice_column([params[0]], (v,)) for v in values[0]]
    for p, vs in zip(params[1:], values[1:], strict=True):
        cols += [_choice_column([p], (v,)) for v in vs if v != p.default]
    return tuple(cols)


def plan_row(spec: OpSpec, steps: int = STEPS) -> RowPlan:
    """The row of one operator, from its declaration alone."""
    if spec.magnitude is not None:
        p = spec.param(spec.magnitude)
        cols = tuple(Column(format_value(p, v), {p.name: v}, short_value(p, v))
                     for v in sweep_values(p, spec.signed, steps))
        return RowPlan(spec.name, "sweep", p.name, cols, (p.name,))
    choices = choice_params(spec)
    if choices:
        return RowPlan(spec.name, "choices", None, choice_columns(choices),
                       tuple(p.name for p in choices))
    if spec.seeded or spec.policy:
        return RowPlan(spec.name, "draws", None,
                       tuple(Column(f"draw {k + 1}") for k in range(steps)))
    return RowPlan(spec.name, "defaults", None, (Column("defaults"),))


def validate_plan(plan: RowPlan, catalog: Catalog) -> None:
    """Every column must be a valid step (constraints between parameters included)."""
    for col in plan.columns:
        step = new_step(plan.op, catalog, **col.params)
        load(Preset([step]).to_dict(), catalog)


def row_renders(plan: RowPlan, seed: int = 42,
                catalog: Catalog = CATALOG) -> list[tuple[Preset, int]]:
    """The ``(preset, draws)`` of each DALI render :func:`render_row` makes for ``plan``, so
    their pipelines can be traced ahead (``PreviewEngine.trace_ahead``)."""
    step = new_step(plan.op, catalog)
    if plan.mode == "sweep":
        assert plan.param is not None
        if catalog[plan.op].param(plan.param).per_sample:  # values fed per sample
            draws = 1 if catalog[plan.op].seeded else len(plan.values)  # see render_row
            return [(Preset([Step(plan.op, {**step.params, plan.param: plan.values[0]})],
                            seed=seed), draws)]
        return [(Preset([Step(plan.op, {**step.params, plan.param: v})], seed=seed), 1)
                for v in plan.values]
    if plan.mode == "choices":
        return [(Preset([new_step(plan.op, catalog, **c.params)], seed=seed), 1)
                for c in plan.columns]
    return [(Preset([step], seed=seed), len(plan.columns))]


def column_presets(plan: RowPlan, seed: int = 42,
                   catalog: Catalog = CATALOG) -> list[Preset]:
    """One preset per column: the step "add" puts in the builder for it (fused rows render
    each once: :mod:`.fused_rows`). Not for a "draws" row, whose columns are draws of one."""
    return [Preset([new_step(plan.op, catalog, **col.params)], seed=seed)
            for col in plan.columns]


def render_row(engine: PreviewEngine, plan: RowPlan, *, seed: int = 42,
               images: Sequence[int] | None = None,
               catalog: Catalog = CATALOG) -> RowResult:
    """Render one row with ``engine``; failures become ``error`` (naming op, parameter, values),
    never exceptions, so one bad operator does not stop the gallery."""
    spec = catalog[plan.op]
    why = spec.unavailable_on(engine.device)
    if why is not None:
        return RowResult(plan, unavailable=f"{why}, so it is not rendered here. It can still "
                                            "be added to the pipeline and exported.")
    if engine.labels is not None:
        refused = label_refusal(spec)
        if refused is not None:  # the engine would refuse it: say why, render nothing
            return RowResult(plan, refused=refused)
    t0 = time.perf_counter()
    what = f" at {plan.param}={plan.values}" if plan.param else ""
    try:
        validate_plan(plan, catalog)
        step = new_step(plan.op, catalog)
        if plan.mode == "sweep":
            assert plan.param is not None
            if spec.seeded:  # each value from the first draw, as the builder renders the step
                # "add" makes (values fed in one batch drew column k's numbers from draw k)
                render = stack_renders([engine.render_sweep(step, plan.param, [v], seed=seed,
                                                            images=images)
                                        for v in plan.values])
            else:
                render = engine.render_sweep(step, plan.param, plan.values, seed=seed,
                                             images=images)
        elif plan.mode == "choices":  # build-time values: one run per column
            parts = []
            for col in plan.columns:
                what = f" with {col.label}"
                parts.append(engine.render(Preset([new_step(plan.op, catalog, **col.params)],
                                                  seed=seed), images=images))
            render = stack_renders(parts)
        else:
            render = engine.render(Preset([step], seed=seed), draws=len(plan.columns),
                                   images=images)
    except (StepError, PresetError) as e:
        if isinstance(e, StepError) and plan.mode == "sweep" and len(plan.values) > 1:
            what = _failing_value(engine, plan, seed, images, catalog) or what
        return RowResult(plan, error=f"{plan.op}{what}: {e}",
                         ms=(time.perf_counter() - t0) * 1000)
    n = render.n_images
    tiles = [[render.tile(i, k) for i in range(n)] for k in range(render.draws)]
    moved = render.labels
    labels = None if moved is None else [moved[k * n:(k + 1) * n] for k in range(render.draws)]
    return RowResult(plan, tiles, (time.perf_counter() - t0) * 1000, labels=labels)


def _failing_value(engine: PreviewEngine, plan: RowPlan, seed: int,
                   images: Sequence[int] | None, catalog: Catalog) -> str | None:
    """`` at p=v`` for the first value of a failed sweep that fails alone: the sweep's error
    named every value, not the one to avoid."""
    assert plan.param is not None
    step = new_step(plan.op, catalog)
    for v in plan.values:
        try:
            engine.render_sweep(step, plan.param, [v], seed=seed, images=images)
        except (StepError, PresetError):
            return f" at {plan.param}={v}"
    return None


def ahead_order(engine: PreviewEngine, catalog: Catalog, ops: list[str], todo: list[str],
                steps: int, seed: int) -> tuple[list[str], dict[str, list[tuple[Preset, int]]]]:
    """The gallery's rows (``ops``) in the order to render them, and the renders of those
    traced ahead (by operator). Of the rows still to render (``todo``), those whose pipelines
    trace slowly (conditionals, not cached) start tracing in worker processes, and custom
    operators on the GPU have CuPy warmed (:meth:`PreviewEngine.warm_custom`): both go last,
    so the work runs beside the other rows (the cards keep catalog order)."""
    ahead: dict[str, list[tuple[Preset, int]]] = {}
    for spec in (catalog[op] for op in todo):
        if not spec.conditionals or spec.unavailable_on(engine.device):
            continue
        try:
            renders = row_renders(plan_row(spec, steps), seed, catalog)
            if engine.trace_ahead(renders):
                ahead[spec.name] = renders
        except PresetError:  # an invalid column: its row says so when rendered
            continue
    warmed = engine.warm_custom(todo)
    last = list(ahead) + [op for op in warmed if op not in ahead]
    return [op for op in ops if op not in last] + last, ahead


def label_refusal(spec: OpSpec) -> str | None:
    """Why ``spec`` cannot run on labelled images (its catalog rule), None when it can."""
    rule = spec.labels
    if rule is None:
        return "not label-aware: its catalog entry does not declare what it does to labels"
    return rule.describe() if isinstance(rule, Refuse) else None


def gallery_ops(catalog: Catalog = CATALOG, category: str = "", search: str = "") -> list[str]:
    """Operators shown for a category ("" = all) and a search text (name, description or a
    declared alias: the picker's search, :meth:`Catalog.search`), in catalog order."""
    found = {s.name for s in catalog.search(search)} if search.strip() else set(catalog)
    return [name for name, spec in catalog.items()
            if (not category or spec.category == category) and name in found]
