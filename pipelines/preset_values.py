"""Validation of one parameter value: a literal, a `uniform` range or a `choice` list.

Kept apart from the validation of steps and groups (:mod:`.preset_validate`), which calls it
for every parameter; every problem names where it is, the value and what is allowed.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from .catalog import OpSpec
from .params import CHOICE, RANGE, Param
from .preset_document import quote
from .preset_types import Choice, Uniform, Value, is_random

MAX_CHOICES = 32
_MAX_COMBOS = 4096
"""Combinations of ``choice`` values a rule across parameters is checked on."""


def is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def validate_value(where: str, p: Param, raw: Any, problems: list[str]) -> Value | None:
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
    if not (isinstance(raw, list) and len(raw) == 2 and all(is_num(v) for v in raw)):
        problems.append(f"{at}: uniform {quote(raw)} is not allowed; expected [lo, hi]")
        return None
    lo, hi = raw
    for v in (lo, hi):
        why = p.check(v)
        if why:
            problems.append(f"{at}: uniform bound {quote(v)} is not allowed; {why}")
            return None
    if p.kind == "int" and lo == hi:  # inclusive: one value, which a literal says plainly
        problems.append(f"{at}: uniform [{lo!r}, {hi!r}] holds one integer; a range needs "
                        f"lo below hi: use the literal {p.coerce(lo)!r} for a fixed value")
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


def check_constraints(where: str, spec: OpSpec, params: dict[str, Value],
                       problems: list[str]) -> None:
    """Each rule on the literals, and on every combination a ``choice`` can draw (a range
    drawn from is not checked: it would refuse whole ranges for a point in them)."""
    for c in spec.constraints:
        vals = {n: params[n] for n in c.params}
        if any(isinstance(v, Uniform) for v in vals.values()):
            continue
        lists = [v.values if isinstance(v, Choice) else (v,) for v in vals.values()]
        for combo in itertools.islice(itertools.product(*lists), _MAX_COMBOS):
            drawn = dict(zip(vals, combo, strict=True))
            if not c.check(drawn):
                shown = ", ".join(f"{k}={quote(v)}" for k, v in drawn.items())
                if any(is_random(v) for v in vals.values()):
                    shown += " (a combination the choices can draw)"
                problems.append(f"{where}: {shown} is not allowed; {c.message}")
                break
