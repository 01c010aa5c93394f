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

import ast
import inspect
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

from . import graph_helpers
from .catalog import CATALOG, Catalog, OpSpec
from .params import Param
from .preset import Choice, Output, Preset, Step, Uniform

Mode = Literal["export", "preview"]
LINE_LIMIT = 88
"""Generated lines stay within ruff's/black's default width; longer ones are split."""

SLOTS_PER_STEP = 100
OP_SLOT = 99
TAIL_SLOT = 1_000_000

_HELPERS = ("_op_seed", "_vec", "_inputs", "_node", "_center", "_affine", "_perspective",
            "_const", "_bin")
_HELPER_DEPS = {"_affine": ("_vec", "_node", "_center"), "_vec": ("_node",),
                "_inputs": ("_node",)}


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
    conditionals: bool = False
    """Whether the pipeline needs ``enable_conditionals`` (a step that fires with a
    probability, or an operator declared ``conditionals``)."""


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
    call = _fill(spec.call, args, i)
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


_PLACEHOLDER = re.compile(r"\{(\w+)\}")


def _fill(template: str, args: dict[str, str], i: int) -> str:
    def sub(m: re.Match[str]) -> str:
        key = m.group(1)
        if key == "x":
            return "images"
        if key == "seed":
            return f"_op_seed(seed, {seed_slot(i, OP_SLOT)})"
        return args[key]

    return _PLACEHOLDER.sub(sub, template)


# ---- helpers, imports and the module around the chain ------------------------------------------


def used_helpers(code: str) -> list[str]:
    """Names of graph helpers the code calls, dependencies included, in a stable order."""
    used = {h for h in _HELPERS if re.search(rf"\b{h}\(", code)}
    for h in list(used):
        used.update(_HELPER_DEPS.get(h, ()))
    return [h for h in _HELPERS if h in used]


def custom_sources(preset: Preset, catalog: Catalog) -> str:
    """Source of the user-defined functions the chain runs (each once)."""
    from .custom import source_of

    seen: dict[str, str] = {}
    for _, step in preset.active_steps():
        spec = catalog[step.op]
        if spec.function is not None and spec.function.__name__ not in seen:
            seen[spec.function.__name__] = source_of(spec.function)
    return "\n\n\n".join(seen.values())


def helper_source(names: list[str]) -> str:
    return "\n\n\n".join(inspect.getsource(getattr(graph_helpers, n)).rstrip() for n in names)


def imports_for(code: str) -> list[str]:
    """Import lines (isort order) for what the code uses."""
    lines = []
    std = [m for m in ("argparse", "os") if re.search(rf"\b{m}\.", code)]
    if std:
        lines += [f"import {m}" for m in std] + [""]
    if re.search(r"\bnp\.", code):
        lines.append("import numpy as np")
    dali = ["fn"]
    if "@pipeline_def" in code:
        dali.append("pipeline_def")
    dali.append("types")
    lines.append(f"from nvidia.dali import {', '.join(dali)}")
    aa = [m for m in ("augmentations", "auto_augment", "rand_augment", "trivial_augment")
          if re.search(rf"\b{m}\.", code)]
    if aa:
        line = f"from nvidia.dali.auto_aug import {', '.join(aa)}"
        if len(line) > LINE_LIMIT:
            line = "from nvidia.dali.auto_aug import (\n" + "".join(f"    {m},\n" for m in aa) + ")"
        lines.append(line)
    if "signed_bin(" in code:
        lines.append("from nvidia.dali.auto_aug.core import signed_bin")
    if "DataNode" in code:
        lines.append("from nvidia.dali.data_node import DataNode")
    return lines


def tail_lines(output: Output) -> list[str]:
    """Body of ``finish(images, seed)``: the training tail declared in the preset's output."""
    lines = []
    if output.resize_shorter:
        lines.append(f"images = fn.resize(images, resize_shorter={output.resize_shorter!r})")
    args = []
    if output.crop:
        args.append(f"crop=({output.crop[0]}, {output.crop[1]})")
    if output.mean:
        args.append("mean=[" + ", ".join(f"{m!r} * 255" for m in output.mean) + "]")
    if output.std:
        args.append("std=[" + ", ".join(f"{s!r} * 255" for s in output.std) + "]")
    if output.mirror_probability > 0:
        args.append(
            f"mirror=fn.random.coin_flip(probability={output.mirror_probability!r}, "
            f"seed=_op_seed(seed, {TAIL_SLOT}))"
        )
    dtype = {"float32": "FLOAT", "float16": "FLOAT16", "uint8": "UINT8"}[output.dtype]
    args += [f"dtype=types.{dtype}", f'output_layout="{output.layout}"']
    lines.append(f"images = fn.crop_mirror_normalize(images, {', '.join(args)})")
    lines.append("return images")
    return lines


def function(name: str, params: str, doc: str, body: list[str]) -> str:
    lines = [f"def {name}({params}):", f'    """{doc}"""']
    for line in body:
        lines.extend(format_statement(line, "    "))
    return "\n".join(lines)


def preview_module(preset: Preset, *, tail: bool = False, catalog: Catalog = CATALOG) -> tuple[
        str, Chain]:
    """Source of the preview module: ``P``, helpers and ``augment`` returning records.

    Called on every render (the source is the pipeline's structure key), so the formatted
    module is memoised on what it is made of: the chain's unformatted lines (which hold no fed
    value), the tail and the custom functions themselves (a redefined function is a new
    object). Formatting costs ~3 ms a render."""
    chain = chain_source(preset, "preview", catalog)
    finish = tuple(tail_lines(preset.output)) if tail and preset.output is not None else None
    functions = tuple(catalog[s.op].function for _, s in preset.active_steps()
                      if catalog[s.op].custom)
    key = (tuple(chain.body), finish, functions)
    with _MODULES_LOCK:
        code = _MODULES.get(key)
        if code is not None:
            _MODULES.move_to_end(key)
            return code, chain
    code = _preview_source(chain, finish, custom_sources(preset, catalog))
    with _MODULES_LOCK:
        _MODULES[key] = code
        while len(_MODULES) > _MODULES_MAX:
            _MODULES.popitem(last=False)
    return code, chain


_MODULES: OrderedDict[tuple[Any, ...], str] = OrderedDict()
_MODULES_LOCK = threading.Lock()
_MODULES_MAX = 128


def _preview_source(chain: Chain, finish: tuple[str, ...] | None, custom: str) -> str:
    aug = function("augment", "images, seed", "The chain, with run-time values fed by name.",
                   chain.body)
    parts = [aug]
    if finish is not None:
        parts.append(function("finish", "images, seed", "The training tail.", list(finish)))
    feed = ('def P(name, dtype):\n    """A value fed by the preview at run time."""\n'
            "    return fn.external_source(name=name, dtype=dtype)")
    code = "\n\n\n".join(parts)
    helpers = helper_source(used_helpers(code))
    body = "\n\n\n".join(x for x in (feed, helpers, custom, code) if x)
    header = '"""Preview chain generated by dali-gallery."""\n\n' + "\n".join(imports_for(body))
    return header + "\n\n\n" + body + "\n"


# ---- formatting --------------------------------------------------------------------------------


def format_statement(line: str, indent: str) -> list[str]:
    """Split one statement that is too long the way ruff/black do (one item per line, trailing
    comma), recursing into nested calls and lists. Comments and short lines pass through."""
    stripped = line.lstrip(" ")
    inner = indent + " " * (len(line) - len(stripped))
    if len(inner) + len(stripped) <= LINE_LIMIT or stripped.startswith("#"):
        return [inner + stripped]
    tree = ast.parse(stripped)
    stmt = tree.body[0]
    if isinstance(stmt, ast.Assign):
        target = ast.get_source_segment(stripped, stmt.targets[0])
        return _fmt(stripped, stmt.value, inner, f"{target} = ", "")
    if isinstance(stmt, ast.Return) and stmt.value is not None:
        return _fmt(stripped, stmt.value, inner, "return ", "")
    if isinstance(stmt, ast.Expr):
        return _fmt(stripped, stmt.value, inner, "", "")
    return [inner + stripped]


def _fmt(src: str, node: ast.expr, indent: str, prefix: str, suffix: str) -> list[str]:
    text = ast.get_source_segment(src, node) or ""
    one = indent + prefix + text + suffix
    if len(one) <= LINE_LIMIT:
        return [one]
    items: list[tuple[str, ast.expr]]
    if isinstance(node, ast.Call):
        head = (ast.get_source_segment(src, node.func) or "") + "("
        close = ")"
        pos = [("", a) for a in node.args]
        kws = [(f"{k.arg}=" if k.arg else "**", k.value) for k in node.keywords]
        items = sorted(pos + kws, key=lambda t: (t[1].lineno, t[1].col_offset))
    elif isinstance(node, ast.List):
        head, close, items = "[", "]", [("", e) for e in node.elts]
    elif isinstance(node, ast.Tuple) and text.startswith("("):
        head, close, items = "(", ")", [("", e) for e in node.elts]
    else:
        return [one]
    if not items:
        return [one]
    out = [indent + prefix + head]
    for kw, value in items:
        out.extend(_fmt(src, value, indent + "    ", kw, ","))
    out.append(indent + close + suffix)
    return out


def split_string(text: str, indent: str, width: int = LINE_LIMIT) -> list[str]:
    """A long string constant as implicitly concatenated chunks, each quoted the way ruff
    prefers (double quotes unless the chunk holds more double than single quotes)."""
    room = width - len(indent) - 8
    chunks: list[str] = []
    while text:
        cut = room
        piece = text[:cut]
        while _quote(piece)[1] > room and cut > 8:
            cut -= 4
            piece = text[:cut]
        chunks.append(_quote(piece)[0])
        text = text[len(piece):]
    return [indent + c for c in chunks] or [indent + '""']


def _quote(s: str) -> tuple[str, int]:
    body = s.replace("\\", "\\\\").replace("\n", "\\n")
    if s.count('"') > s.count("'"):
        q = "'" + body.replace("'", "\\'") + "'"
    else:
        q = '"' + body.replace('"', '\\"') + '"'
    return q, len(q)
