"""Parameter declarations: the one place that states a parameter's type, bounds and slider range.

Validation, widgets, the preview graph, the preset format and the exported code all read these
fields, so a range is never written twice (compare ``param.Number(bounds, softbounds, step)``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

Kind = Literal["float", "int", "bool", "enum"]
Mode = Literal["fixed", "range", "choice"]
FIXED: Mode = "fixed"
RANGE: Mode = "range"
CHOICE: Mode = "choice"
"""How a value may be given: a literal, drawn per sample from a range (``{"uniform": ...}`` in a
preset) or drawn per sample from a list (``{"choice": ...}``)."""


@dataclass(frozen=True)
class Param:
    """One operator parameter as the user sees it.

    ``runtime`` says whether DALI takes the value as a per-sample argument input: only such
    parameters can be drawn per sample (``uniform``/``choice``) and changed without a rebuild.
    ``dali_arg`` names the DALI argument it maps to one-to-one (checked against DALI's schema);
    ``None`` for derived parameters (e.g. a shear that becomes a matrix).
    ``codes`` maps enum values to the Python expression written into generated code.
    """

    name: str
    kind: Kind
    default: Any
    doc: str
    bounds: tuple[float, float] | None = None
    slider: tuple[float, float] | None = None
    step: float | None = None
    neutral: Any = None
    unit: str = ""
    runtime: bool = False
    dali_arg: str | None = None
    choices: tuple[Any, ...] = ()
    codes: dict[Any, str] = field(default_factory=dict)
    odd: bool = False
    random_default: tuple[float, float] | None = None
    dali_int: bool = False

    @property
    def modes(self) -> tuple[Mode, ...]:
        """How a value may be given (:data:`FIXED` always). Only run-time parameters, which DALI
        takes as per-sample argument inputs, can be drawn per sample: from a range when they
        are numbers that need not be odd, from a list when they are numbers or booleans DALI
        reads as integers. Preset validation, the widgets and the engine all read this."""
        modes: list[Mode] = [FIXED]
        if self.runtime and self.kind in ("float", "int") and not self.odd:
            modes.append(RANGE)
        if self.runtime and (self.kind in ("float", "int") or (self.kind == "bool"
                                                                and self.dali_int)):
            modes.append(CHOICE)
        return tuple(modes)

    @property
    def per_sample(self) -> bool:
        """Whether the value can differ from sample to sample in one built pipeline."""
        return len(self.modes) > 1

    @property
    def decimals(self) -> int:
        """Digits a value of this parameter is shown with (from its step)."""
        return decimals(self.step) if self.kind == "float" else 0

    @property
    def dtype(self) -> str:
        """DALI scalar type of the value fed at run time ("FLOAT" or "INT32")."""
        if self.kind == "float":
            return "FLOAT"
        return "INT32"

    def check(self, value: Any) -> str | None:
        """Return why ``value`` is not a valid literal for this parameter, or None if it is."""
        if self.kind == "bool":
            return None if isinstance(value, bool) else "expected true or false"
        if self.kind == "enum":
            if value in self.choices:
                return None
            return f"expected one of {', '.join(map(repr, self.choices))}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"expected a {self.kind} number"
        if not math.isfinite(value):
            return "expected a finite number"
        if self.kind == "int" and (isinstance(value, float) and not value.is_integer()):
            return "expected an integer"
        if self.bounds is not None:
            lo, hi = self.bounds
            if not lo <= value <= hi:
                return f"allowed range is [{_fmt(lo)}, {_fmt(hi)}]{_unit(self.unit)}"
        if self.odd and int(value) % 2 != 1:
            return "must be odd"
        return None

    def coerce(self, value: Any) -> Any:
        """Normalise a checked literal (an int written as 3.0 becomes 3; floats stay float)."""
        if self.kind == "int":
            return int(value)
        if self.kind == "float":
            return float(value)
        return value

    def describe(self) -> str:
        """One line for tooltips and `dali-gallery ops`."""
        parts = [self.doc]
        if self.bounds is not None:
            lo, hi = self.bounds
            parts.append(f"bounds [{_fmt(lo)}, {_fmt(hi)}]{_unit(self.unit)}")
        if self.choices:
            parts.append("one of " + ", ".join(map(str, self.choices)))
        parts.append("per-sample (run time)" if self.runtime else "build time")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """The declaration as plain data (for `ops --json` and the widgets)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "default": self.default,
            "doc": self.doc,
            "bounds": list(self.bounds) if self.bounds else None,
            "slider": list(self.slider) if self.slider else None,
            "step": self.step,
            "neutral": self.neutral,
            "unit": self.unit,
            "runtime": self.runtime,
            "dali_arg": self.dali_arg,
            "choices": list(self.choices) or None,
            "odd": self.odd,
            "random_default": list(self.random_default) if self.random_default else None,
        }


def decimals(step: float | None) -> int:
    """Digits a value on a grid of ``step`` needs (0.005 -> 3, 0.1 -> 1, 1 -> 0; at most 6)."""
    if not step or step >= 1:
        return 0
    return min(6, max(0, math.ceil(-math.log10(step) - 1e-9)))


def _fmt(x: float) -> str:
    return f"{x:g}"


def _unit(unit: str) -> str:
    return f" {unit}" if unit else ""


# ---- factories for parameters shared by many operators (declared once) -------------------------

INTERP_CODES = {
    "linear": "types.INTERP_LINEAR",
    "nn": "types.INTERP_NN",
    "cubic": "types.INTERP_CUBIC",
}


def interp(default: str = "linear", runtime: bool = False, cubic: bool = False) -> Param:
    """The interpolation enum of geometric operators (DALI's warps take only nn and linear)."""
    choices = tuple(INTERP_CODES) if cubic else ("linear", "nn")
    return Param(
        "interp_type",
        "enum",
        default,
        "Interpolation used when resampling",
        choices=choices,
        codes={c: INTERP_CODES[c] for c in choices},
        runtime=runtime,
        dali_arg="interp_type",
    )


def fill(default: float = 0.0, runtime: bool = False, name: str = "fill_value",
         doc: str = "Grey level for uncovered pixels") -> Param:
    """Grey level (0-255) written where the transform uncovers pixels (or, with ``doc``, that
    an operator paints, e.g. erase's box)."""
    return Param(
        name,
        "float",
        default,
        doc,
        bounds=(0, 255),
        slider=(0, 255),
        step=1,
        unit="level",
        runtime=runtime,
        dali_arg=name,
    )


def unit_interval(name: str, default: float, doc: str, runtime: bool = True, **kw: Any) -> Param:
    """A float in [0, 1] (positions, ratios, probabilities)."""
    return Param(
        name,
        "float",
        default,
        doc,
        bounds=(0, 1),
        slider=kw.pop("slider", (0, 1)),
        step=kw.pop("step", 0.01),
        runtime=runtime,
        dali_arg=kw.pop("dali_arg", name),
        **kw,
    )


def factor(name: str, doc: str, slider: tuple[float, float] = (0, 2), **kw: Any) -> Param:
    """A multiplicative factor whose neutral value is 1 (brightness, contrast, saturation...)."""
    return Param(
        name,
        "float",
        kw.pop("default", 1.0),
        doc,
        bounds=kw.pop("bounds", (0, 10)),
        slider=slider,
        step=0.01,
        neutral=1.0,
        unit="x",
        runtime=True,
        dali_arg=kw.pop("dali_arg", name),
        random_default=kw.pop("random_default", (0.7, 1.3)),
        **kw,
    )


def hue_shift(name: str = "hue") -> Param:
    """An additive hue rotation in degrees."""
    return Param(
        name,
        "float",
        0.0,
        "Hue rotation",
        bounds=(-360, 360),
        slider=(-180, 180),
        step=1,
        neutral=0.0,
        unit="deg",
        runtime=True,
        dali_arg=name,
        random_default=(-20, 20),
    )


def magnitude_bin(bins: int = 31) -> Param:
    """auto_aug's magnitude bin: an index into ``linspace(*mag_range, bins)``."""
    return Param(
        "magnitude_bin",
        "int",
        bins // 2,
        "Magnitude bin of the auto_aug augmentation (0 = weakest)",
        bounds=(0, bins - 1),
        slider=(0, bins - 1),
        step=1,
        neutral=0,
        unit="bin",
        runtime=True,
        random_default=(0, bins - 1),
    )
