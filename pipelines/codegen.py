"""Render a preset into the Python source of its DALI augmentation chain.

One generator serves both the preview and the export, so they cannot drift apart:
* ``mode="export"`` writes every value as a literal: the training code a user reads.
* ``mode="preview"`` replaces run-time parameters and probabilities by fed values (``P(name,
  dtype)``, :mod:`pipelines.fed_values`), so moving a slider changes fed values, not the source
  text. The source text is the preview's structure key: same text, same pipeline.
Every random node has an explicit seed derived from the chain seed and the step's position
(``_op_seed``), so adding, removing or re-weighting one step never changes another step's draws.
A group (``one_of``) draws which children run from its own slots and each child draws from
slots of its own (:func:`child_slot`), so a group changes no other step's draws either."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any, Literal

from .catalog import CATALOG, Catalog, OpSpec
from .chain_parts import (
    KEY_SLOTS,
    OP_SLOT,
    PICK_SLOT,
    Chain,
    Feed,
    Record,
    _At,
    feed_name,
    seed_slot,
)
from .code_format import LINE_LIMIT, function, function_lines, literal
from .code_format import number_literal as _num
from .draws import FIRST_SLOT as DRAW_SLOT
from .fed_values import layout, module_source
from .label_code import (
    TAIL_KEPT,
    LabelSet,
    after_run_possible,
    flush_into,
    hoisted,
    return_line,
    step_label_lines,
    unfired_kept,
    waits_for_labels,
)
from .module_parts import (
    custom_imports,
    custom_sources,
    helper_source,
    imports_for,
    tail_lines,
    used_helpers,
)
from .preset import Choice, Group, Preset, Step, Uniform

Mode = Literal["export", "preview"]


def chain_source(preset: Preset, mode: Mode, catalog: Catalog = CATALOG,
                 labels: LabelSet | None = None) -> Chain:
    """The body lines of ``augment(images, seed)`` (``augment(images, seed, labels)`` with
    ``labels``), one commented block per enabled step."""
    body: list[str] = []
    chain = Chain(body, labels=labels)
    if labels is not None:
        body.extend(labels.unpack())
    for i, step in preset.active_steps():
        if chain.moves and waits_for_labels(step, catalog):
            flush_into(chain)
        start = len(body)
        if isinstance(step, Group):
            body.extend(_group_lines(i, step, mode, chain, catalog, start))
        else:
            spec = catalog[step.op]
            body.extend(_step_lines(_At(i), step, spec, mode, chain))
            chain.conditionals |= spec.conditionals or step.probability < 1
            chain.checkpoints &= spec.checkpoints
        chain.at_source = False
        chain.step_lines[i] = (start, len(body))
    flush_into(chain)
    chain.random = bool(chain.records) or any(catalog[s.op].seeded
                                              for _, s in preset.active_ops())
    body.append(return_line(labels, [_record_var(r) for r in chain.records] if mode == "preview"
                            else None, [_At(s, c).tag for s, c in chain.kept],
                            bool(chain.after_run_kinds)))
    return chain


def _comment(text: str) -> str:
    """A comment that fits the line limit inside ``augment`` (4 spaces of indent)."""
    return text if len(text) <= LINE_LIMIT - 4 else text[: LINE_LIMIT - 7] + "..."


def _record_var(r: Record) -> str:
    if r.expr is not None:
        return r.expr
    tag = f"{r.step}" if r.child is None else f"{r.step}_{r.child}"
    if r.param == "fired":
        return f"fired_{tag}" if r.child is None else f"ran_{tag}"
    return f"{r.param}_{tag}"


def _p_note(probability: float, mode: Mode) -> str:
    # the preview's source is its structure key: a fed probability must not appear in it
    return "" if probability >= 1 else (
        f", p={probability:g}" if mode == "export" else ", random")


def _step_lines(at: _At, step: Step, spec: OpSpec, mode: Mode, chain: Chain,
                when: list[str] | None = None) -> list[str]:
    """A step's block, or a group's child's (``when``: the group's conditions for it)."""
    head = f"step {at.step}" if at.child is None else f"step {at.step}, child {at.child}"
    lines = [_comment(f"# {head}: {spec.name}{_p_note(step.probability, mode)}: {spec.doc}")]
    args: dict[str, str] = {}
    first_record = len(chain.records)
    for k, p in enumerate(spec.params, start=1):
        value = step.params[p.name]
        var = f"{p.name}_{at.tag}"
        if isinstance(value, Uniform):
            if mode == "preview":
                name = feed_name(at.step, p.name, "range", at.child)
                chain.feeds.append(Feed(name, at.step, p.name, "FLOAT", "range", at.child, 2))
                rng = f'P("{name}", types.FLOAT)'
            else:
                rng = f"[{_num(p, value.lo)}, {_num(p, value.hi)}]"
            seed = f"_op_seed(seed, {at.slot(k)})"
            lines.append(f"{var} = _uniform_int({rng}, {seed})" if p.kind == "int" else
                         f"{var} = fn.random.uniform(range={rng}, seed={seed})")
            chain.records.append(Record(at.step, p.name, at.child))
            args[p.name] = var
        elif isinstance(value, Choice):
            vals = ", ".join(_num(p, v) for v in value.values)
            lines.append(
                f"{var} = fn.random.uniform(values=[{vals}], dtype=types.{p.dtype}, "
                f"seed=_op_seed(seed, {at.slot(k)}))"
            )
            chain.records.append(Record(at.step, p.name, at.child))
            args[p.name] = var
        elif mode == "preview" and p.runtime:
            name = feed_name(at.step, p.name, child=at.child)
            chain.feeds.append(Feed(name, at.step, p.name, p.dtype, "value", at.child))
            args[p.name] = f'P("{name}", types.{p.dtype})'
        else:
            args[p.name] = literal(p, value)
    op_seed = f"_op_seed(seed, {at.slot(OP_SLOT)})"
    for n, d in enumerate(spec.draws):  # the operator's choices, drawn here to be recorded,
        var = f"{d.name}_{at.tag}"  # each from a slot of its own (independent of the others)
        d_seed = f"_op_seed(seed, {at.slot(DRAW_SLOT + n)})"
        lines.append(f"{var} = {spec.draw_source(d, {**args, 'seed': d_seed})}")
        for name, k in d.records(step.params):
            chain.records.append(Record(at.step, name, at.child,
                                        None if k is None else f"{var}[{k}]"))
        args[d.name] = var
    lines.extend(hoisted(spec, args, at.tag, chain.labels.masks)
                 if chain.labels is not None else [])
    source = "source" if chain.at_source and at.child is None else "None"
    full = {"x": "images", "seed": op_seed, "source": source, **args}
    call = spec.call_source(full)
    templates = (spec.call, *(spec.labels.templates if spec.labels is not None else ()))
    chain.uses_source |= source != "None" and any("{source}" in t for t in templates)
    body, kept = ([f"images = {call}"], False) if chain.labels is None else \
        step_label_lines(spec, call, full, at.tag, chain.labels,
                         None if when or step.probability < 1 else chain.moves)
    chain.kept.extend([(at.step, at.child)] if kept else [])
    conditions = list(when or [])
    if step.probability < 1:
        lines.append(_coin(at, step.probability, mode, chain))
        conditions.append(f"fired_{at.tag}")
        if at.child is None:
            chain.records.insert(first_record, Record(at.step, "fired"))
    if not conditions:
        lines.extend(body)
        return lines
    if at.child is not None:  # whether the child ran: the group's conditions and its own coin
        lines.append(f"ran_{at.tag} = " + " & ".join(
            f"({c})" if "==" in c and len(conditions) > 1 else c for c in conditions))
        chain.records.append(Record(at.step, "fired", at.child))
        conditions = [f"ran_{at.tag}"]
    chain.conditionals = True
    if chain.kept and chain.kept[-1] == (at.step, at.child):
        lines.append(unfired_kept(at.tag))  # defined on both branches of the condition
    lines.append(f"if {conditions[0]}:")
    lines.extend(f"    {line}" for line in body)
    return lines


def _coin(at: _At, probability: float, mode: Mode, chain: Chain) -> str:
    """``fired_<tag> = <coin flip>`` for a step, a group or a child that fires with a
    probability (fed in the preview, a literal in the export)."""
    if mode == "preview":
        name = feed_name(at.step, "probability", child=at.child)
        chain.feeds.append(Feed(name, at.step, "probability", "FLOAT", "probability", at.child))
        prob = f'P("{name}", types.FLOAT)'
    else:
        prob = repr(float(probability))
    return (f"fired_{at.tag} = fn.random.coin_flip(probability={prob}, dtype=types.BOOL, "
            f"seed=_op_seed(seed, {at.slot(0)}))")


def _group_lines(i: int, group: Group, mode: Mode, chain: Chain, catalog: Catalog,
                 start: int) -> list[str]:
    """A group: its coin, the draw of which children run, then each enabled child's block,
    in list order, under ``if ran_<i>_<j>:`` (draws of every child are made for every sample,
    so the records say what each child drew, and a child's draws never depend on the pick)."""
    active = group.active_children()
    weighted = group.weights is not None
    what = "every child" if group.picks_all() else f"pick {group.pick} of {len(active)}"
    w_note = ""
    if weighted and not group.picks_all():
        w_note = (", weights " + ":".join(f"{group.weights[j]:g}" for j, _ in active)
                  if mode == "export" else ", weighted")
    lines = [_comment(f"# step {i}: {group.op} ({what}{w_note}){_p_note(group.probability, mode)}"
                      ": the children below, in order")]
    when: dict[int, list[str]] = {j: [] for j, _ in active}
    if group.probability < 1:
        lines.append(_coin(_At(i), group.probability, mode, chain))
        chain.records.append(Record(i, "fired"))
        for j in when:
            when[j].append(f"fired_{i}")
    if group.picks_all():
        pass
    elif group.pick == 1:
        p = ""
        if weighted and mode == "preview":
            name = feed_name(i, "weights")
            chain.feeds.append(Feed(name, i, "weights", "FLOAT", "weights", None, len(active)))
            p = f', p=P("{name}", types.FLOAT)'
        elif weighted:
            p = ", p=[" + ", ".join(repr(w) for w in group.normalised_weights()) + "]"
        lines.append(f"pick_{i} = fn.random.choice({len(active)}{p}, "
                     f"seed=_op_seed(seed, {seed_slot(i, PICK_SLOT)}))")
        for m, (j, _) in enumerate(active):
            when[j].append(f"pick_{i} == {m}")
    else:
        scales = group.key_scales()
        for j, _ in active:  # weighted draws without replacement: the largest log(u) / w
            lines.append(f"key_{i}_{j} = fn.random.uniform(range=[0.0, 1.0], "
                         f"seed=_op_seed(seed, {seed_slot(i, KEY_SLOTS + j)}))")
            if weighted and mode == "preview":
                name = feed_name(i, "key_scale", child=j)
                chain.feeds.append(Feed(name, i, "key_scale", "FLOAT", "key_scale", j))
                lines.append(f'key_{i}_{j} = _log_key(key_{i}_{j}, P("{name}", types.FLOAT))')
            elif weighted:
                lines.append(f"key_{i}_{j} = _log_key(key_{i}_{j}, {scales[j]!r})")
        lines.append(f"keys_{i} = [{', '.join(f'key_{i}_{j}' for j, _ in active)}]")
        for m, (j, _) in enumerate(active):
            when[j].append(f"_picked(keys_{i}, {m}, {group.pick})")
    for j, child in active:
        spec = catalog[child.op]
        first = start + len(lines)
        lines.extend(_step_lines(_At(i, j), child, spec, mode, chain, when[j]))
        chain.child_lines[(i, j)] = (first, start + len(lines))
        chain.conditionals |= spec.conditionals
        chain.checkpoints &= spec.checkpoints
    return lines


def preview_module(preset: Preset, *, tail: bool = False, catalog: Catalog = CATALOG,
                   labels: LabelSet | None = None, after_run: bool = True) -> tuple[str, Chain]:
    """Source of the preview module: ``P``, helpers and ``augment`` returning records. Made
    for every render (the source is the pipeline's key) and memoised on its parts (formatting
    costs ~3 ms): the chain's unformatted lines (no fed value), the tail, the custom code.
    Boxes move after the run where the chain allows (``after_run``; False: in the graph, as
    the export moves them: the tests compare the two)."""
    if labels is not None and after_run and after_run_possible(preset, catalog):
        labels = replace(labels, after_run=True)
    chain = chain_source(preset, "preview", catalog, labels)
    output = preset.output if tail else None
    tail_kinds: list[tuple[Any, ...]] = []  # the tail's moves after the run, last
    finish = tuple(tail_lines(output, labels, True, tail_kinds)) if output else None
    chain.after_run_kinds += tail_kinds
    chain.random |= output is not None  # the training tail may draw (a random crop, a mirror)
    chain.kept += [TAIL_KEPT] if output and output.crop and labels else []  # finish's, last
    functions = tuple(catalog[s.op].custom_code for _, s in preset.active_ops()
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
    chain.child_module_lines = {k: range(lines[a], lines[b])
                                for k, (a, b) in chain.child_lines.items()}


_MODULES: OrderedDict[tuple[Any, ...], tuple[str, list[int]]] = OrderedDict()
_MODULES_LOCK, _MODULES_MAX = threading.Lock(), 128


def _preview_source(chain: Chain, finish: tuple[str, ...] | None,
                    custom: str, extra: list[str]) -> tuple[str, list[int]]:
    """The module source, and the module line of each statement of ``augment``."""
    aug_lines, starts = function_lines(
        "augment", ("images, seed" if chain.labels is None else "images, seed, labels")
        + (", source=None" if chain.uses_source else ""),
        "The chain, with run-time values fed by name.", chain.body)
    parts = ["\n".join(aug_lines)]
    if finish is not None:
        parts.append(function("finish", "images, seed" + (", labels" if chain.labels else ""),
                              "The training tail.", list(finish)))
    feed = module_source(layout(chain.feeds))
    if chain.uses_source:  # build_pipeline passes the fed batch's shape
        feed += '\n\n\nSOURCE = True\n"""augment reads the input images\' shape (source=)."""'
    code = "\n\n\n".join(parts)
    helpers = helper_source(used_helpers(code))
    before = "\n\n\n".join(x for x in (feed, helpers, custom) if x)
    header = ('"""Preview chain generated by dali-gallery."""\n\n'
              + "\n".join(imports_for(before + "\n" + code, extra)))
    prefix = header + "\n\n\n" + before + "\n\n\n"
    first = prefix.count("\n") + 1  # the line of ``def augment``
    return prefix + code + "\n", [first + k for k in starts]


