"""Render a preset into the Python source of its DALI augmentation chain.

One generator serves both the preview and the export, so they cannot drift apart:

* ``mode="export"`` writes every value as a literal: the training code a user reads.
* ``mode="preview"`` replaces run-time parameters and probabilities by named
  ``fn.external_source`` feeds (``P(name, dtype)``), so moving a slider changes fed values, not the
  source text. The source text is the preview's structure key: same text, same pipeline.

Every random node has an explicit seed derived from the chain seed and the step's position
(``_op_seed``), so adding, removing or re-weighting one step never changes another step's draws.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from .catalog import CATALOG, Catalog, OpSpec
from .code_format import LINE_LIMIT, function, function_lines
from .module_parts import (
    custom_imports,
    custom_sources,
    helper_source,
    imports_for,
    tail_lines,
    used_helpers,
)
from .params import Param
from .preset import Choice, Preset, Step, Uniform

Mode = Literal["export", "preview"]

SLOTS_PER_STEP = 100
OP_SLOT = 99


@dataclass(frozen=True)
class Feed:
    """A value the preview feeds at run time: a step parameter, a range or a probability."""

    name: str
    step: int
    param: str  # parameter name, or "probability"
    dtype: str  # "FLOAT" or "INT32"
    kind: Literal["value", "range", "probability"]


@dataclass(frozen=True)
class Record:
    """A pipeline output that says what happened to each sample (fired flag or drawn value)."""

    step: int
    param: str  # parameter name, or "fired"


@dataclass
class Chain:
    """Generated chain source plus what the preview must feed and what it gets back."""

    body: list[str]
    feeds: list[Feed] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    step_lines: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Step index -> (first, end) indices of its statements in ``body``."""
    conditionals: bool = False
    """Whether the pipeline needs ``enable_conditionals`` (a step that fires with a
    probability, or an operator declared ``conditionals``)."""
    checkpoints: bool = True
    """Whether DALI can checkpoint every operator of the chain (see ``OpSpec.checkpoints``)."""
    module_lines: dict[int, range] = field(default_factory=dict)
    """Step index -> the lines (1-based) its block occupies in the preview module; set by
    :func:`preview_module`, read to name the step behind a line DALI reports."""

    def step_at(self, line: int) -> int | None:
        """The step whose block holds ``line`` of the preview module (None: no step's)."""
        for step, lines in self.module_lines.items():
            if line in lines:
                return step
        return None


def seed_slot(step: int, k: int) -> int:
    """Seed slot of the k-th random node of a step (0 = its coin flip, 99 = the op itself)."""
    return step * SLOTS_PER_STEP + k


def feed_name(step: int, param: str, kind: str = "value") -> str:
    return f"s{step}_{param}" + ("_range" if kind == "range" else "")


def literal(p: Param, value: Any) -> str:
    """Python source of a literal parameter value (the value is validated already)."""
    if p.kind == "enum":
        return p.codes[value] if value in p.codes else _str(value)
    if p.kind == "bool":
        if p.dali_int:
            return "1" if value else "0"
        return "True" if value else "False"
    if p.kind == "int":
        return str(int(value))
    return repr(float(value))


def _str(s: str) -> str:
    """A double-quoted string literal (ruff's preferred quotes), safely escaped."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"' if _plain(s) else repr(s)


def _plain(s: str) -> bool:
    return s.isascii() and s.isprintable()


def _dtype(p: Param) -> str:
    return f"types.{p.dtype}"


def _num(p: Param, v: Any) -> str:
    return str(int(v)) if p.kind in ("int", "bool") else repr(float(v))


def chain_source(preset: Preset, mode: Mode, catalog: Catalog = CATALOG) -> Chain:
    """The body lines of ``augment(images, seed)``, one commented block per enabled step."""
    body: list[str] = []
    chain = Chain(body)
    for i, step in preset.active_steps():
        spec = catalog[step.op]
        start = len(body)
        body.extend(_step_lines(i, step, spec, mode, chain))
        chain.step_lines[i] = (start, len(body))
        chain.conditionals |= spec.conditionals or step.probability < 1
        chain.checkpoints &= spec.checkpoints
    if mode == "preview":
        recs = ", ".join(_record_var(r) for r in chain.records)
        body.append(f"return images, [{recs}]")
    else:
        body.append("return images")
    return chain


def _comment(text: str) -> str:
    """A comment that fits the line limit inside ``augment`` (4 spaces of indent)."""
    return text if len(text) <= LINE_LIMIT - 4 else text[: LINE_LIMIT - 7] + "..."


def _record_var(r: Record) -> str:
    return f"fired_{r.step}" if r.param == "fired" else f"{r.param}_{r.step}"


def _step_lines(i: int, step: Step, spec: OpSpec, mode: Mode, chain: Chain) -> list[str]:
    # the preview's source is its structure key: a fed probability must not appear in it
    p_note = "" if step.probability >= 1 else (
        f", p={step.probability:g}" if mode == "export" else ", random")
    lines = [_comment(f"# step {i}: {spec.name}{p_note}: {spec.doc}")]
    args: dict[str, str] = {}
    for k, p in enumerate(spec.params, start=1):
        value = step.params[p.name]
        var = f"{p.name}_{i}"
        if isinstance(value, Uniform):
            if mode == "preview":
                name = feed_name(i, p.name, "range")
                chain.feeds.append(Feed(name, i, p.name, "FLOAT", "range"))
                rng = f'P("{name}", types.FLOAT)'
            else:
                rng = f"[{_num(p, value.lo)}, {_num(p, value.hi)}]"
            dt = ", dtype=types.INT32" if p.kind == "int" else ""
            seed = f"seed=_op_seed(seed, {seed_slot(i, k)})"
            lines.append(f"{var} = fn.random.uniform(range={rng}{dt}, {seed})")
            chain.records.append(Record(i, p.name))
            args[p.name] = var
        elif isinstance(value, Choice):
            vals = ", ".join(_num(p, v) for v in value.values)
            lines.append(
                f"{var} = fn.random.uniform(values=[{vals}], dtype={_dtype(p)}, "
                f"seed=_op_seed(seed, {seed_slot(i, k)}))"
            )
            chain.records.append(Record(i, p.name))
            args[p.name] = var
        elif mode == "preview" and p.runtime:
            name = feed_name(i, p.name)
            chain.feeds.append(Feed(name, i, p.name, p.dtype, "value"))
            args[p.name] = f'P("{name}", {_dtype(p)})'
        else:
            args[p.name] = literal(p, value)
    call = spec.call_source({"x": "images", "seed": f"_op_seed(seed, {seed_slot(i, OP_SLOT)})",
                             **args})
    if step.probability >= 1:
        lines.append(f"images = {call}")
        return lines
    if mode == "preview":
        name = feed_name(i, "probability")
        chain.feeds.append(Feed(name, i, "probability", "FLOAT", "probability"))
        prob = f'P("{name}", types.FLOAT)'
    else:
        prob = repr(float(step.probability))
    lines.append(
        f"fired_{i} = fn.random.coin_flip(probability={prob}, dtype=types.BOOL, "
        f"seed=_op_seed(seed, {seed_slot(i, 0)}))"
    )
    chain.records.insert(len(chain.records) - _n_random(step), Record(i, "fired"))
    lines.append(f"if fired_{i}:")
    lines.append(f"    images = {call}")
    return lines


def _n_random(step: Step) -> int:
    return sum(isinstance(v, (Uniform, Choice)) for v in step.params.values())


def preview_module(preset: Preset, *, tail: bool = False, catalog: Catalog = CATALOG) -> tuple[
        str, Chain]:
    """Source of the preview module: ``P``, helpers and ``augment`` returning records.

    Called on every render (the source is the pipeline's structure key), so the formatted
    module is memoised on what it is made of: the chain's unformatted lines (which hold no fed
    value), the tail and the custom functions themselves (a redefined function is a new
    object). Formatting costs ~3 ms a render."""
    chain = chain_source(preset, "preview", catalog)
    finish = tuple(tail_lines(preset.output)) if tail and preset.output is not None else None
    functions = tuple(catalog[s.op].custom_code for _, s in preset.active_steps()
                      if catalog[s.op].custom)
    key = (tuple(chain.body), finish, functions)
    with _MODULES_LOCK:
        memo = _MODULES.get(key)
        if memo is not None:
            _MODULES.move_to_end(key)
            _set_module_lines(chain, memo[1])
            return memo[0], chain
    code, lines = _preview_source(chain, finish, custom_sources(preset, catalog),
                                  custom_imports(preset, catalog))
    with _MODULES_LOCK:
        _MODULES[key] = (code, lines)
        while len(_MODULES) > _MODULES_MAX:
            _MODULES.popitem(last=False)
    _set_module_lines(chain, lines)
    return code, chain


def _set_module_lines(chain: Chain, lines: list[int]) -> None:
    """``lines[k]``: module line of statement k of the body (plus the line after the last)."""
    chain.module_lines = {i: range(lines[a], lines[b]) for i, (a, b) in chain.step_lines.items()}


_MODULES: OrderedDict[tuple[Any, ...], tuple[str, list[int]]] = OrderedDict()
_MODULES_LOCK = threading.Lock()
_MODULES_MAX = 128


def _preview_source(chain: Chain, finish: tuple[str, ...] | None,
                    custom: str, extra: list[str]) -> tuple[str, list[int]]:
    """The module source, and the module line of each statement of ``augment``."""
    aug_lines, starts = function_lines("augment", "images, seed",
                                       "The chain, with run-time values fed by name.", chain.body)
    parts = ["\n".join(aug_lines)]
    if finish is not None:
        parts.append(function("finish", "images, seed", "The training tail.", list(finish)))
    feed = ('def P(name, dtype):\n    """A value fed by the preview at run time."""\n'
            "    return fn.external_source(name=name, dtype=dtype)")
    code = "\n\n\n".join(parts)
    helpers = helper_source(used_helpers(code))
    before = "\n\n\n".join(x for x in (feed, helpers, custom) if x)
    header = ('"""Preview chain generated by dali-gallery."""\n\n'
              + "\n".join(imports_for(before + "\n" + code, extra)))
    prefix = header + "\n\n\n" + before + "\n\n\n"
    first = prefix.count("\n") + 1  # the line of ``def augment``
    return prefix + code + "\n", [first + k for k in starts]


