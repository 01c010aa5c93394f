"""What a parameter value may be, derived from its :class:`Param` declaration (no widgets).

How a value may be given (fixed, a per-sample range or list) is :attr:`Param.modes`, the rule
preset validation applies too; the widgets read the mode of a value here. Slider ranges come from
the catalog and widen to show any value a preset holds, never beyond the bounds.
"""

from __future__ import annotations

import math
from typing import Any

from dali_gallery.pipelines.params import CHOICE, FIXED, RANGE, Param, decimals
from dali_gallery.pipelines.preset import Choice, Uniform


def mode_of(value: Any) -> str:
    if isinstance(value, Uniform):
        return RANGE
    if isinstance(value, Choice):
        return CHOICE
    return FIXED


def is_fill(p: Param) -> bool:
    """A grey level written into uncovered pixels (declared by the shared ``fill`` factory)."""
    return p.kind in ("float", "int") and p.unit == "level" and "fill" in p.name


def tooltip(p: Param) -> str:
    """Description, bounds, slider range, neutral value and run time / build time."""
    parts = [f"{p.name}: {p.describe()}"]
    if p.slider is not None:
        parts.append(f"slider {fmt_number(p.slider[0])} to {fmt_number(p.slider[1])}")
    if p.neutral is not None:
        parts.append(f"no effect at {fmt_number(p.neutral)}")
    if p.odd:
        parts.append("odd values only")
    if p.per_sample:
        parts.append("fixed or drawn per sample")
    return "; ".join(parts)


def slider_range(p: Param, values: tuple[float, ...] = ()) -> tuple[float, float]:
    """The catalog's slider range, widened to show ``values`` (never beyond the bounds)."""
    if p.slider is not None:
        lo, hi = p.slider
    elif p.bounds is not None:
        lo, hi = p.bounds
    else:
        span = max(1.0, abs(float(p.default))) * 2
        lo, hi = float(p.default) - span, float(p.default) + span
    for v in values:
        lo, hi = min(lo, v), max(hi, v)
    if p.bounds is not None:
        lo, hi = max(lo, p.bounds[0]), min(hi, p.bounds[1])
    if p.kind == "int":
        return math.floor(lo), math.ceil(hi)
    return float(lo), float(hi)


def default_range(p: Param, value: float, symmetric_about: float | None) -> tuple[float, float]:
    """The range offered when a fixed value becomes per-sample: symmetric about the neutral
    value for signed operators, the catalog's ``random_default`` otherwise, else +-10%."""
    lo_s, hi_s = slider_range(p, (value,))
    if symmetric_about is not None:
        n = symmetric_about
        d = abs(value - n)
        if d == 0:
            d = abs(p.random_default[1] - n) if p.random_default else (hi_s - lo_s) / 8
        lo, hi = n - d, n + d
    elif p.random_default is not None:
        lo, hi = p.random_default
    else:
        span = (hi_s - lo_s) / 10
        lo, hi = value - span, value + span
    lo, hi = max(lo, lo_s), min(hi, hi_s)
    if p.kind == "int":
        lo, hi = math.floor(lo), math.ceil(hi)
    if hi <= lo:
        unit = p.step or (1 if p.kind == "int" else (hi_s - lo_s) / 100)
        lo, hi = (lo, lo + unit) if lo + unit <= hi_s else (hi - unit, hi)
    return p.coerce(lo), p.coerce(hi)


def fixed_from_range(p: Param, lo: float, hi: float, symmetric_about: float | None) -> Any:
    """The fixed value offered for a range: its upper end for signed operators (the
    magnitude), its middle otherwise."""
    v = hi if symmetric_about is not None else (lo + hi) / 2
    if p.kind == "int":
        v = round(v)
        if p.odd and v % 2 == 0:
            v += 1
    return p.coerce(v)


def is_symmetric(value: Any, about: float | None) -> bool:
    """Whether ``value`` is a range symmetric about ``about``."""
    return (isinstance(value, Uniform) and about is not None
            and math.isclose(value.lo + value.hi, 2 * about, abs_tol=1e-6))


def symmetric_range(p: Param, about: float | None, d: float) -> Uniform | None:
    """``Uniform(about - d, about + d)`` (the whole numbers inside it for an int parameter),
    or None when that is empty."""
    assert about is not None
    lo, hi = about - d, about + d
    if p.kind == "int":
        lo, hi = math.ceil(lo), math.floor(hi)
    if hi <= lo:
        return None
    return Uniform(clean(p, lo), clean(p, hi))


def half_width_reach(p: Param, about: float | None, bounds: tuple[float, float]) -> float:
    """The largest half-width ``d`` that keeps ``about - d`` and ``about + d`` in ``bounds``."""
    assert about is not None
    d = max(0.0, min(about - bounds[0], bounds[1] - about))
    return math.floor(d) if p.kind == "int" else d


def clean(p: Param, value: float) -> Any:
    """A value from a browser slider without binary noise (0.9999999999999999 -> 1.0): the
    slider cannot be finer than its step, so a few digits past the step are enough."""
    if p.kind != "float":
        return p.coerce(value)
    return round(float(value), decimals(p.step or 0.001) + 4)


def parse_choice(p: Param, text: str) -> tuple[Any, ...]:
    """``"3, 5, 7"`` -> (3, 5, 7); raises ValueError naming the bad item."""
    items = [t.strip() for t in text.replace(";", ",").split(",") if t.strip()]
    if not items:
        raise ValueError("enter one or more values separated by commas")
    out = []
    for t in items:
        try:
            out.append(int(t) if p.kind == "int" else float(t))
        except ValueError:
            raise ValueError(f"{t!r} is not a{'n integer' if p.kind == 'int' else ' number'}") \
                from None
    return tuple(out)


def describe_value(p: Param, value: Any) -> str:
    """Short text of a value for summaries: ``-15 to 15 deg``, ``one of 3, 5``, ``on``."""
    unit = f" {p.unit}" if p.unit else ""
    if isinstance(value, Uniform):
        return f"{fmt_number(value.lo)} to {fmt_number(value.hi)}{unit}"
    if isinstance(value, Choice):
        shown = ", ".join(_fmt(v) for v in value.values[:6])
        return f"one of {shown}{', ...' if len(value.values) > 6 else ''}{unit}"
    return f"{_fmt(value)}{unit if p.kind in ('float', 'int') else ''}"


def _fmt(v: Any) -> str:
    if isinstance(v, bool):
        return "on" if v else "off"
    if isinstance(v, (int, float)):
        return fmt_number(v)
    return str(v)


def fmt_number(x: float) -> str:
    return f"{x:g}"


def exact_number(x: float) -> str:
    """``x`` as a field the user edits shows it: short, and exact (a field's text is sent
    back whole, so a rounded one would change values nobody touched)."""
    if isinstance(x, int):  # 10000000, not 1e+07 (an int parameter's list refuses that)
        return str(x)
    short = f"{x:g}"
    return short if float(short) == x else repr(x)
