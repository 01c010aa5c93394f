"""Validation: the one check every preset passes, from a JSON document or built in code.

:func:`validate_preset` reports every problem at once; each names the step, the operator, the
parameter, the bad value (quoted, cut to a bounded length) and what is allowed. Values are
literals, ``{"uniform": [lo, hi]}`` (drawn per sample) or ``{"choice": [...]}``. The shape of
the data (depth, key types, number range) is checked first and without recursion, so no later
step (``deepcopy``, a migration, a message) can overflow the stack or a float.
"""

from __future__ import annotations

import copy
import math
import sys
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .catalog import CATALOG, Catalog, OpSpec
from .params import CHOICE, RANGE, Param
from .preset_document import MAX_DEPTH, BadNumber, quote
from .preset_output import validate_output
from .preset_types import (
    DEFAULT_SEED,
    FORMAT,
    VERSION,
    Choice,
    Output,
    Preset,
    PresetError,
    Step,
    Uniform,
    Value,
    is_random,
)

MAX_STEPS = 64
MAX_CHOICES = 32

_PRESET_KEYS = {"format", "version", "seed", "steps", "output", "name"}
_STEP_KEYS = {"op", "params", "probability", "enabled"}
_FLOAT_MAX = sys.float_info.max

Migration = Callable[[dict[str, Any]], dict[str, Any]]
MIGRATIONS: dict[int, Migration] = {}
"""``MIGRATIONS[n]`` turns a version-n dict into version n+1. Version 1 is the first format."""


def validate_preset(source: Preset | Mapping[str, Any], catalog: Catalog = CATALOG) -> Preset:
    """The checked, normalised Preset for a document dict or a Preset built in code."""
    if isinstance(source, Preset):
        return validate_document(_as_document(source), catalog)
    if not isinstance(source, Mapping):
        raise PresetError([f"preset: expected a JSON object, got {type(source).__name__}"])
    return validate_document(source, catalog)


def _as_document(preset: Preset) -> dict[str, Any]:
    """``preset.to_dict()``, tolerating members of the wrong type (they are reported)."""
    steps: Any = preset.steps
    if isinstance(steps, (list, tuple)):
        steps = [s.to_dict() if isinstance(s, Step) else s for s in steps]
    output: Any = preset.output
    if isinstance(output, Output):
        output = output.to_dict()
    doc: dict[str, Any] = {"format": FORMAT, "version": VERSION, "seed": preset.seed,
                           "steps": steps, "output": output}
    if preset.name:
        doc["name"] = preset.name
    return doc


def validate_document(data: Mapping[str, Any], catalog: Catalog = CATALOG) -> Preset:
    """Validate a parsed document (any version): PresetError lists every problem."""
    check_shape(data)
    problems: list[str] = []
    if data.get("format") != FORMAT:
        raise PresetError([f"preset: 'format' must be {FORMAT!r}, got {quote(data.get('format'))}"])
    data = migrate(copy.deepcopy(dict(data)))
    for key in sorted(set(data) - _PRESET_KEYS):
        problems.append(f"preset: unknown key {quote(key)} "
                        f"(allowed: {', '.join(sorted(_PRESET_KEYS))})")

    seed = data.get("seed", DEFAULT_SEED)
    if not _is_int(seed) or not 0 <= seed < 2**31:
        problems.append(f"preset: 'seed' must be an integer in [0, 2147483647], got {quote(seed)}")
        seed = DEFAULT_SEED
    name = data.get("name", "")
    if not isinstance(name, str) or len(name) > 200:
        problems.append("preset: 'name' must be a string of at most 200 characters")
        name = ""

    raw_steps = data.get("steps", [])
    steps: list[Step] = []
    if not isinstance(raw_steps, list):
        problems.append(f"preset: 'steps' must be a list, got {type(raw_steps).__name__}")
        raw_steps = []
    if len(raw_steps) > MAX_STEPS:
        problems.append(f"preset: {len(raw_steps)} steps; at most {MAX_STEPS} are allowed")
        raw_steps = raw_steps[:MAX_STEPS]
    for i, raw in enumerate(raw_steps):
        step = _validate_step(i, raw, catalog, problems)
        if step is not None:
            steps.append(step)

    output = validate_output(data.get("output"), problems)
    if problems:
        raise PresetError(problems)
    return Preset(steps=steps, seed=int(seed), output=output, name=name)


def check_shape(data: Any) -> None:
    """Depth, key types and numbers of the whole document, walked without recursion."""
    problems: list[str] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack and len(problems) < 5:
        value, path = stack.pop()
        if isinstance(value, (dict, list, tuple)) and len(path) >= MAX_DEPTH:
            problems.append(f"{_where(data, path)}: nested more than {MAX_DEPTH} levels deep; a "
                            "preset is a few levels of objects and lists")
        elif isinstance(value, Mapping):
            for key, item in value.items():
                if not isinstance(key, str):
                    problems.append(f"{_where(data, path)}: key {quote(key)} is not allowed; "
                                    "keys are strings")
                else:
                    stack.append((item, (*path, key)))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, (*path, i)) for i, item in enumerate(value))
        elif isinstance(value, BadNumber) or (_is_int(value) and abs(value) > _FLOAT_MAX):
            problems.append(f"{_where(data, path)}: {quote(value)} is not allowed; numbers must "
                            "be finite and at most about 1.8e308")
    if problems:
        raise PresetError(sorted(problems))


def _where(data: Any, path: tuple[Any, ...]) -> str:
    """A location as problems name it: "step 2 (rotate): parameter 'angle'", "output, at
    'mean'[0]", "preset, at 'seed'"."""
    rest: tuple[Any, ...] = path
    if len(path) >= 2 and path[0] == "steps" and isinstance(path[1], int):
        op = data["steps"][path[1]].get("op") if isinstance(data["steps"][path[1]], dict) else None
        head = f"step {path[1]} ({op})" if isinstance(op, str) and len(op) <= 60 else \
            f"step {path[1]}"
        rest = path[2:]
        if len(rest) >= 2 and rest[0] == "params":
            head, rest = f"{head}: parameter {quote(rest[1], 40)}", rest[2:]
    elif path and path[0] == "output":
        head, rest = "output", path[1:]
    else:
        head = "preset"
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{quote(p, 40)}" for p in rest)
    return f"{head}, at {text.lstrip('.')}" if text else head


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a document of an older format version up to ``VERSION``."""
    version = data.get("version")
    if not _is_int(version):
        raise PresetError([f"preset: 'version' must be an integer, got {quote(version)}"])
    if version > VERSION:
        raise PresetError(
            [f"preset: version {quote(version)} is newer than this dali-gallery understands "
             f"(up to {VERSION}); upgrade dali-gallery"]
        )
    if version < 1:
        raise PresetError([f"preset: unknown version {quote(version)}; versions start at 1"])
    while version < VERSION:
        data = MIGRATIONS[version](data)
        version += 1
        data["version"] = version
    return data


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _validate_step(i: int, raw: Any, catalog: Catalog, problems: list[str]) -> Step | None:
    where = f"step {i}"
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected an object with 'op' and 'params', got {quote(raw)}")
        return None
    op = raw.get("op")
    if not isinstance(op, str) or op not in catalog:
        problems.append(f"{where}: unknown operator {quote(op)}{catalog.suggest(op)}")
        return None
    spec = catalog[op]
    where = f"step {i} ({op})"
    for key in sorted(set(raw) - _STEP_KEYS):
        problems.append(f"{where}: unknown key {quote(key)} "
                        f"(allowed: {', '.join(sorted(_STEP_KEYS))})")
    probability = raw.get("probability", 1.0)
    if not _is_num(probability) or not math.isfinite(probability) or not 0 <= probability <= 1:
        problems.append(f"{where}: probability {quote(probability)} is not allowed; "
                        "expected [0, 1]")
        probability = 1.0
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        problems.append(f"{where}: 'enabled' must be true or false, got {quote(enabled)}")
        enabled = True
    raw_params = raw.get("params", {})
    if not isinstance(raw_params, dict):
        problems.append(f"{where}: 'params' must be an object, got {quote(raw_params)}")
        raw_params = {}
    params = spec.defaults()
    for name in raw_params:
        if name not in params:
            allowed = ", ".join(p.name for p in spec.params) or "none"
            problems.append(f"{where}: unknown parameter {quote(name)} (parameters: {allowed})")
    n_before = len(problems)
    for p in spec.params:
        if p.name in raw_params:
            value = _validate_value(where, p, raw_params[p.name], problems)
            if value is not None:
                params[p.name] = value
    if len(problems) == n_before:
        _check_constraints(where, spec, params, problems)
    return Step(op, params, float(probability), enabled)


def _validate_value(where: str, p: Param, raw: Any, problems: list[str]) -> Value | None:
    at = f"{where}: parameter {p.name!r}"
    if isinstance(raw, dict):
        keys = set(raw)
        if keys == {"uniform"}:
            return _validate_uniform(at, p, raw["uniform"], problems)
        if keys == {"choice"}:
            return _validate_choice(at, p, raw["choice"], problems)
        problems.append(f"{at}: {quote(raw, 80)} is not allowed; a value is a literal, "
                        "{'uniform': [lo, hi]} or {'choice': [...]}")
        return None
    why = p.check(raw)
    if why:
        problems.append(f"{at}: value {quote(raw)} is not allowed; {why}")
        return None
    return p.coerce(raw)


def _validate_uniform(at: str, p: Param, raw: Any, problems: list[str]) -> Value | None:
    if RANGE not in p.modes:
        problems.append(f"{at}: cannot be drawn per sample ('uniform'); "
                        f"{_why_not_random(p)}")
        return None
    if not (isinstance(raw, list) and len(raw) == 2 and all(_is_num(v) for v in raw)):
        problems.append(f"{at}: uniform {quote(raw)} is not allowed; expected [lo, hi]")
        return None
    lo, hi = raw
    for v in (lo, hi):
        why = p.check(v)
        if why:
            problems.append(f"{at}: uniform bound {quote(v)} is not allowed; {why}")
            return None
    if not lo < hi:
        problems.append(f"{at}: uniform [{lo!r}, {hi!r}] is empty; lo must be below hi "
                        "(use a literal for a fixed value)")
        return None
    if p.kind == "float" and not np.float32(lo) < np.float32(hi):
        problems.append(f"{at}: uniform [{lo!r}, {hi!r}] is empty once DALI stores it as "
                        "float32; widen the range or use a literal")
        return None
    return Uniform(p.coerce(lo), p.coerce(hi))


def _validate_choice(at: str, p: Param, raw: Any, problems: list[str]) -> Value | None:
    if CHOICE not in p.modes:
        problems.append(f"{at}: cannot be drawn per sample ('choice'); {_why_not_random(p)}")
        return None
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_CHOICES:
        problems.append(f"{at}: choice {quote(raw)} is not allowed; expected a list of 1 to "
                        f"{MAX_CHOICES} values")
        return None
    values = []
    for v in raw:
        why = p.check(v)
        if why:
            problems.append(f"{at}: choice value {quote(v, 40)} is not allowed; {why}")
            return None
        values.append(p.coerce(v))
    return Choice(tuple(values))


def _why_not_random(p: Param) -> str:
    if not p.runtime:
        return "DALI fixes it when the pipeline is built; use a literal"
    if p.odd:
        return "it must be odd; use a literal or a 'choice' of odd values"
    return f"a {p.kind} parameter takes a literal"


def _check_constraints(where: str, spec: OpSpec, params: dict[str, Value],
                       problems: list[str]) -> None:
    for c in spec.constraints:
        vals = {n: params[n] for n in c.params}
        if any(is_random(v) for v in vals.values()):
            continue
        if not c.check(vals):
            shown = ", ".join(f"{k}={quote(v)}" for k, v in vals.items())
            problems.append(f"{where}: {shown} is not allowed; {c.message}")
