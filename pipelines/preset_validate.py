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

from .catalog import CATALOG, Catalog
from .preset_document import MAX_DEPTH, BadNumber, quote
from .preset_output import validate_output
from .preset_types import (
    DEFAULT_SEED,
    FORMAT,
    GROUP_KEY,
    MAX_CHILDREN,
    MIN_CHILDREN,
    VERSION,
    ChainStep,
    Group,
    Output,
    Preset,
    PresetError,
    Step,
)
from .preset_values import check_constraints, is_num, validate_value

MAX_STEPS = 64
MAX_OPERATORS = 128
"""Operators in one chain, counting every child of every group (each is a block of the graph)."""
MAX_WEIGHT = 1e6
MIN_WEIGHT = 1e-6

_PRESET_KEYS = {"format", "version", "seed", "steps", "output", "name"}
_STEP_KEYS = {"op", "params", "probability", "enabled"}
_GROUP_KEYS = {GROUP_KEY, "probability", "enabled", "weights", "pick"}
_FLOAT_MAX = sys.float_info.max

Migration = Callable[[dict[str, Any]], dict[str, Any]]
MIGRATIONS: dict[int, Migration] = {}
"""``MIGRATIONS[n]`` turns a version-n dict into version n+1. Version 1 is the first format."""


def validate_preset(source: Preset | Mapping[str, Any], catalog: Catalog = CATALOG) -> Preset:
    """The checked, normalised Preset for a document dict or a Preset built in code."""
    if isinstance(source, Preset):
        return validate_document(document_of(source), catalog)
    if not isinstance(source, Mapping):
        raise PresetError([f"preset: expected a JSON object, got {type(source).__name__}"])
    return validate_document(source, catalog)


def document_of(preset: Preset) -> dict[str, Any]:
    """``preset.to_dict()``, tolerating members of the wrong type (they are reported)."""
    steps: Any = preset.steps
    if isinstance(steps, (list, tuple)):
        steps = [s.to_dict() if isinstance(s, (Step, Group)) else s for s in steps]
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
    elif not _is_text(name):  # a JSON "\ud800" escape: no UTF-8 file or link can hold it
        problems.append(f"preset: 'name' {quote(name)} is not allowed; it holds a lone "
                        "surrogate (half of a character pair); allowed: Unicode text")
        name = ""

    raw_steps = data.get("steps", [])
    steps: list[ChainStep] = []
    if not isinstance(raw_steps, list):
        problems.append(f"preset: 'steps' must be a list, got {type(raw_steps).__name__}")
        raw_steps = []
    if len(raw_steps) > MAX_STEPS:
        problems.append(f"preset: {len(raw_steps)} steps; at most {MAX_STEPS} are allowed")
        raw_steps = raw_steps[:MAX_STEPS]
    for i, raw in enumerate(raw_steps):
        step = (_validate_group(i, raw, catalog, problems)
                if isinstance(raw, dict) and GROUP_KEY in raw
                else _validate_step(f"step {i}", raw, catalog, problems))
        if step is not None:
            steps.append(step)
    n_ops = sum(len(s.children) if isinstance(s, Group) else 1 for s in steps)
    if n_ops > MAX_OPERATORS:
        problems.append(f"preset: {n_ops} operators (steps and the children of groups); at "
                        f"most {MAX_OPERATORS} are allowed")

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
        step = data["steps"][path[1]]
        head, rest = _named(f"step {path[1]}", step), path[2:]
        if len(rest) >= 2 and rest[0] == GROUP_KEY and isinstance(rest[1], int) and \
                isinstance(step, dict) and isinstance(step[GROUP_KEY], list):
            head = _named(f"{head}, child {rest[1]}", step[GROUP_KEY][rest[1]])
            rest = rest[2:]
        if len(rest) >= 2 and rest[0] == "params":
            head, rest = f"{head}: parameter {quote(rest[1], 40)}", rest[2:]
    elif path and path[0] == "output":
        head, rest = "output", path[1:]
    else:
        head = "preset"
    text = "".join(f"[{p}]" if isinstance(p, int) else f".{quote(p, 40)}" for p in rest)
    return f"{head}, at {text.lstrip('.')}" if text else head


def _named(where: str, step: Any) -> str:
    """``where`` with the operator of ``step`` (a document's step or child) when it has one."""
    if isinstance(step, dict) and GROUP_KEY in step:
        return f"{where} ({GROUP_KEY})"
    op = step.get("op") if isinstance(step, dict) else None
    return f"{where} ({op})" if isinstance(op, str) and len(op) <= 60 else where


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


def _is_text(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (the preset file, the share link and the exported
    module are UTF-8; a lone surrogate is not)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _validate_step(where: str, raw: Any, catalog: Catalog, problems: list[str]) -> Step | None:
    """One operator step (or a group's child: ``where`` then names the group too)."""
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected an object with 'op' and 'params', got {quote(raw)}")
        return None
    op = raw.get("op")
    if not isinstance(op, str) or op not in catalog:
        problems.append(f"{where}: unknown operator {quote(op)}{catalog.suggest(op)}")
        return None
    spec = catalog[op]
    where = f"{where} ({op})"
    for key in sorted(set(raw) - _STEP_KEYS):
        problems.append(f"{where}: unknown key {quote(key)} "
                        f"(allowed: {', '.join(sorted(_STEP_KEYS))})")
    probability, enabled = _probability_enabled(where, raw, problems)
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
            value = validate_value(where, p, raw_params[p.name], problems)
            if value is not None:
                params[p.name] = value
    if len(problems) == n_before:
        check_constraints(where, spec, params, problems)
    return Step(op, params, probability, enabled)


def _probability_enabled(where: str, raw: dict[str, Any],
                         problems: list[str]) -> tuple[float, bool]:
    probability = raw.get("probability", 1.0)
    if not is_num(probability) or not math.isfinite(probability) or not 0 <= probability <= 1:
        problems.append(f"{where}: probability {quote(probability)} is not allowed; "
                        "expected [0, 1]")
        probability = 1.0
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        problems.append(f"{where}: 'enabled' must be true or false, got {quote(enabled)}")
        enabled = True
    return float(probability), enabled


def _validate_group(i: int, raw: dict[str, Any], catalog: Catalog,
                    problems: list[str]) -> Group | None:
    """A group: 2 to 16 ordinary steps (no groups), a pick count and optional weights."""
    where = f"step {i} ({GROUP_KEY})"
    for key in sorted(set(raw) - _GROUP_KEYS):
        problems.append(f"{where}: unknown key {quote(key)} "
                        f"(allowed: {', '.join(sorted(_GROUP_KEYS))})")
    probability, enabled = _probability_enabled(where, raw, problems)
    raw_children = raw[GROUP_KEY]
    if not isinstance(raw_children, list) or not \
            MIN_CHILDREN <= len(raw_children) <= MAX_CHILDREN:
        problems.append(f"{where}: {quote(raw_children)} is not allowed; '{GROUP_KEY}' is a "
                        f"list of {MIN_CHILDREN} to {MAX_CHILDREN} steps")
        return None
    children = []
    for j, c in enumerate(raw_children):
        at = f"{where}, child {j}"
        if isinstance(c, dict) and GROUP_KEY in c:
            problems.append(f"{at}: a group inside a group is not allowed; put its steps in "
                            "this group, or make it a step of its own after this one")
            continue
        child = _validate_step(at, c, catalog, problems)
        if child is not None:
            children.append(child)
    weights = _validate_weights(where, raw.get("weights"), len(raw_children), problems)
    pick = raw.get("pick", 1)
    if not _is_int(pick) or not 1 <= pick <= len(raw_children):
        problems.append(f"{where}: pick {quote(pick)} is not allowed; expected an integer "
                        f"from 1 to {len(raw_children)}, the number of children")
        pick = 1
    if all(isinstance(c, dict) and c.get("enabled") is False for c in raw_children):
        problems.append(f"{where}: every child is disabled; enable one, or disable the group")
    if len(children) < len(raw_children):
        return None
    return Group(children, probability, enabled, weights, int(pick))


def _validate_weights(where: str, raw: Any, n: int, problems: list[str]) -> list[float] | None:
    if raw is None:
        return None
    if not isinstance(raw, list) or len(raw) != n:
        problems.append(f"{where}: weights {quote(raw)} is not allowed; expected a list of "
                        f"{n} numbers, one per child (or no weights: equal)")
        return None
    for w in raw:
        if not is_num(w) or not MIN_WEIGHT <= w <= MAX_WEIGHT:
            problems.append(f"{where}: weight {quote(w)} is not allowed; each weight is a "
                            f"number in [{MIN_WEIGHT:g}, {MAX_WEIGHT:g}] (they are "
                            "normalised: only their ratios count)")
            return None
    return [float(w) for w in raw]
