"""The shape of one import rule, and the unit conversions the rules share.

A :class:`Rule` is the one declaration of how a transform of torchvision or Albumentations
becomes preset steps: the library's own parameter names and defaults (a test checks them
against the installed library), the conversion to catalog units, the verdict with its bound
or reason, the fixed-parameter case the parity report compares, and the reverse code.
The rules themselves are data in :mod:`.torchvision_rules` and :mod:`.albumentations_rules`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..labels import Keep
from .source import Call, Opaque, Symbol

if TYPE_CHECKING:
    from ..opspec import OpSpec

Args = dict[str, Any]
REQUIRED = object()
"""Default of a parameter the library requires."""

Kind = Literal["transform", "conversion", "container", "unsupported"]
VerdictKind = Literal["identical", "equivalent", "different", "unsupported", "conversion"]


class Refused(Exception):
    """A transform (or one of its arguments) has no DALI equivalent: why, and what is nearest."""

    def __init__(self, reason: str, nearest: str = "") -> None:
        self.reason = reason
        self.nearest = nearest
        super().__init__(reason)


@dataclass(frozen=True)
class Verdict:
    """How close the DALI steps are to the original, as a claim the parity report checks.

    ``identical``: bit for bit. ``equivalent``: ``share`` of the pixels within ``levels`` grey
    levels (``measure="noise_std"``: the added noise's standard deviation within ``levels``,
    since random numbers cannot match). ``different``: the semantics differ, ``reason`` says
    how. ``unsupported``: not imported. ``conversion``: a type/layout change the output tail
    makes."""

    kind: VerdictKind
    levels: float = 0.0
    share: float = 1.0
    reason: str = ""
    measure: Literal["pixels", "noise_std"] = "pixels"
    size_slack: int = 0
    """Output sizes may differ by this many pixels per side (compared on the common part)."""

    def line(self) -> str:
        """The one-line verdict shown in reports and the README table."""
        if self.kind == "identical":
            return "identical" + (f" ({self.reason})" if self.reason else "")
        if self.kind == "equivalent":
            if self.measure == "noise_std":
                text = f"equivalent in distribution: noise std within {_levels(self.levels)}"
            else:
                text = f"equivalent within {_levels(self.levels)}"
                if self.share < 1:
                    text += f" on {self.share * 100:g}% of pixels"
            return text + (f" ({self.reason})" if self.reason else "")
        if self.kind == "different":
            return f"different semantics: {self.reason}"
        if self.kind == "conversion":
            return f"conversion: {self.reason}" if self.reason else "conversion"
        return f"not imported: {self.reason}"


IDENTICAL = Verdict("identical")


def _levels(n: float) -> str:
    return f"{n:g} level" + ("" if n == 1 else "s")


@dataclass
class Conversion:
    """Preset steps (dicts as in the preset JSON), or the output-tail form, of one transform."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    tail: dict[str, Any] | None = None
    """The same transform as preset ``output`` keys, used when it ends the pipeline."""
    notes: list[str] = field(default_factory=list)
    verdict: Verdict | None = None
    """Overrides the rule's verdict when it depends on the values (e.g. a rounded threshold)."""


@dataclass
class Fixed:
    """One deterministic instance of a transform for the parity report: DALI steps with
    literal values (or a tail) and the original library called with the same values."""

    steps: list[dict[str, Any]]
    reference: Callable[[np.ndarray], np.ndarray]
    label: str
    tail: dict[str, Any] | None = None


@dataclass
class Context:
    """What the transforms before this one did (values after ToTensor are fractions of 1,
    after Normalize they are standardised)."""

    library: str
    scaled: bool | None = None
    """True: fractions of 1 (ToTensor, ToDtype(scale=True)); False: floats in grey levels
    (torchvision's ToDtype(float32) leaves 0-255 unscaled by default); None: no conversion
    seen (uint8 levels; a Normalize there is read as fractions, torchvision's usual form)."""
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    strict: bool = False
    """Inside an Albumentations ``Compose(strict=True)``: the 1.x arguments Albumentations 2
    otherwise ignores make it raise, so the transform that has one is refused."""


@dataclass(frozen=True)
class Rule:
    """One transform of one library and everything dali-gallery knows about it."""

    library: str
    name: str
    params: tuple[str, ...]
    defaults: Mapping[str, Any]
    mapping: str
    """One line for the table: which catalog steps and how the units convert."""
    verdict: Verdict
    convert: Callable[[Args, Context], Conversion] | None = None
    fixed: Callable[[Args, tuple[int, ...]], Fixed | None] | None = None
    reverse: Callable[[dict[str, Any]], str | None] | None = None
    nearest: str = ""
    kind: Kind = "transform"
    aliases: Mapping[str, str] = field(default_factory=dict)
    """Argument names of older releases and what they are called now."""
    varargs: bool = False
    """Every positional argument is one item of the first parameter (torch.nn.Sequential(t1,
    t2, ...) takes its modules so)."""
    module_lists: tuple[str, ...] = ()
    """torch.nn containers the library also takes as a container's transforms argument
    (torchvision's RandomApply iterates a ModuleList as it does a list)."""

    def bind(self, call: Call) -> Args:
        """The call's arguments by name, library defaults filled in, constants unwrapped."""
        args: Args = {}
        if self.varargs and call.args:
            args[self.params[0]] = list(call.args)
        elif len(call.args) > len(self.params):
            raise Refused(f"{self.name} takes at most {len(self.params)} positional arguments; "
                          f"{len(call.args)} were given")
        else:
            args.update(zip(self.params, call.args, strict=False))
        for name, value in call.kwargs.items():
            name = self.aliases.get(name, name)
            if name not in self.params:
                raise Refused(f"{name!r} is not an argument of {self.name} "
                              f"(arguments: {', '.join(self.params) or 'none'})")
            if name in args:
                raise Refused(f"{name!r} is given twice")
            args[name] = value
        for name in self.params:
            if name not in args:
                default = self.defaults.get(name, None)
                if default is REQUIRED:
                    raise Refused(f"{self.name} needs the argument {name!r}")
                args[name] = default
        return {k: plain(v) for k, v in args.items()}


def plain(value: Any) -> Any:
    """Constants by value, tuples as lists, recursively (transform calls stay calls)."""
    if isinstance(value, Symbol):
        return value.value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


# ---- values -----------------------------------------------------------------------------------


def number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise Refused(f"{what} must be a number, got {_show(value)}")
    return float(value)


def pair(value: Any, what: str) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise Refused(f"{what} must be a number or a (min, max) pair, got {_show(value)}")
    lo, hi = number(value[0], what), number(value[1], what)
    if lo > hi:
        raise Refused(f"{what} {_show(value)}: the minimum exceeds the maximum")
    return lo, hi


def symmetric(value: Any, what: str, center: float = 0.0) -> tuple[float, float]:
    """A number d means [center - d, center + d] (torchvision degrees, Albumentations limits);
    a pair is taken as written."""
    if isinstance(value, (list, tuple)):
        return pair(value, what)
    d = number(value, what)
    if d < 0:
        raise Refused(f"{what} {d:g}: a single value must not be negative")
    return center - d, center + d


def jitter(value: Any, what: str, floor: float | None = 0.0) -> tuple[float, float] | None:
    """ColorJitter's factors: b means [max(0, 1 - b), 1 + b]; None or 0 means untouched."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return pair(value, what)
    b = number(value, what)
    if b < 0:
        raise Refused(f"{what} {b:g} must not be negative")
    if b == 0:
        return None
    lo = 1 - b if floor is None else max(floor, 1 - b)
    return lo, 1 + b


def drawn(lo: float, hi: float, integer: bool = False) -> Any:
    """A literal when the range is one value, else a per-sample uniform draw."""
    if integer:
        lo, hi = int(round(lo)), int(round(hi))
    if lo == hi:
        return lo
    return {"uniform": [lo, hi]}


def step(op: str, probability: float = 1.0, **params: Any) -> dict[str, Any]:
    p = number(probability, "p")
    if not 0 <= p <= 1:
        raise Refused(f"p={p:g} is not a probability (expected [0, 1])")
    return {"op": op, "probability": p, "params": params}


def single_fill(fill: Any, what: str = "fill") -> float:
    """One grey level for the catalog's fill parameters (a per-channel fill of equal values
    is accepted; different values are refused rather than averaged)."""
    if fill is None:
        return 0.0
    if isinstance(fill, (list, tuple)):
        if not fill:
            raise Refused(f"{what} {_show(fill)} holds no value; expected one grey level (or "
                          "one per channel, all equal)", nearest=f"{what}=0")
        values = {number(v, what) for v in fill}
        if len(values) != 1:
            raise Refused(f"{what} {_show(fill)} differs per channel; the catalog's fill is one "
                          "grey level", nearest=f"{what}={sum(values) / len(values):g}")
        return values.pop()
    return number(fill, what)


def fill_level(value: Any, ctx: Context, what: str = "fill") -> float:
    """A fill written in the units of this point of the pipeline, as one grey level (DALI's
    steps run before the output tail normalises). After Normalize (or Albumentations' ToFloat)
    a value v stands for the level (v * std + mean) * 255 of each channel: levels that differ
    per channel are refused, as :func:`single_fill` refuses a per-channel fill, rather than
    averaged (the catalog's fill is one grey level)."""
    if ctx.mean is None or ctx.std is None:
        v = single_fill(value, what)
        return round(v * 255, 3) if ctx.scaled else v
    values = [0.0] if value is None else [number(v, what) for v in sequence(value)]
    n = max(len(values), len(ctx.mean), len(ctx.std))
    if any(len(x) not in (1, n) for x in (values, ctx.mean, ctx.std)):
        raise Refused(f"{what}={value!r} has {len(values)} values after Normalize of {n} "
                      "channels; expected 1 or one per channel")
    mean, std = (list(x) * (n // len(x)) for x in (ctx.mean, ctx.std))
    levels = [(v * s + m) * 255 for v, s, m in zip(values * (n // len(values)), std, mean,
                                                   strict=True)]
    if max(levels) - min(levels) > 1e-3:
        grey = round(sum(levels) / n)
        same = [round((grey / 255 - m) / s, 6) for m, s in zip(mean, std, strict=True)]
        raise Refused(f"{what}={value!r} after Normalize is grey levels "
                      f"{[round(x, 3) for x in levels]} per channel; the catalog's fill is one "
                      "grey level", nearest=f"{what}={same} (grey {grey} in every channel), "
                      "or this transform before Normalize")
    return round(sum(levels) / n, 3)


def lit(step_dict: dict[str, Any], name: str) -> Any:
    """A literal parameter of a step dict, or None when it is drawn per sample."""
    v = step_dict.get("params", {}).get(name)
    return None if isinstance(v, dict) else v


def span_of(step_dict: dict[str, Any], name: str) -> tuple[float, float] | None:
    """(lo, hi) of a parameter: a uniform's range or a literal twice."""
    v = step_dict.get("params", {}).get(name)
    if isinstance(v, dict) and "uniform" in v:
        lo, hi = v["uniform"]
        return float(lo), float(hi)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v), float(v)
    return None


def fmt(x: float) -> str:
    """A number as short source text (ints without .0)."""
    x = float(x)
    return str(int(x)) if x.is_integer() else repr(x)


def _show(value: Any) -> str:
    if isinstance(value, Opaque):
        return value.text
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def sequence(value: Any) -> Sequence[Any]:
    return value if isinstance(value, (list, tuple)) else [value]


# ---- after Normalize --------------------------------------------------------------------------

VALUE_CATEGORIES = ("color", "noise")
"""Catalog categories whose steps depend on the pixel values themselves: after a Normalize
they meet standardised values in the library but grey levels in DALI (which normalises last)."""


def standardised(ctx: Context) -> bool:
    """Whether the values here are standardised by a Normalize (not only scaled to 0-1)."""
    return ctx.mean is not None and ctx.std is not None and (
        any(m != 0 for m in ctx.mean) or any(s != 1 for s in ctx.std))


def value_dependent(spec: OpSpec) -> bool:
    """Whether a catalog step's result depends on the values, not only on where pixels go:
    colour and noise steps, the policies, and the auto-augment steps that move no pixel."""
    if spec.category == "auto-augment":
        return spec.policy or isinstance(spec.labels, Keep)  # Keep: pixel values only
    return spec.category in VALUE_CATEGORIES


def refuse_on_standardised(name: str, steps: Sequence[dict[str, Any]], ctx: Context,
                           spec_of: Callable[[str], OpSpec]) -> None:
    """Refused: ``name`` comes after a Normalize and changes values (ColorJitter, Solarize,
    noise...). The library then works on standardised values (and torchvision clamps floats to
    0-1), while DALI's steps run on grey levels before the output tail normalises."""
    if not standardised(ctx):
        return
    ops = [s["op"] for s in steps if value_dependent(spec_of(s["op"]))]
    if ops:
        assert ctx.mean is not None and ctx.std is not None
        raise Refused(f"{name} comes after Normalize (mean {[round(m * 255, 3) for m in ctx.mean]}"
                      f", std {[round(v * 255, 3) for v in ctx.std]} grey levels): there it "
                      "changes standardised values, while DALI's " + ", ".join(ops)
                      + " would change grey levels before the output tail normalises",
                      nearest=f"{name} before Normalize")


# ---- rules that convert nothing ---------------------------------------------------------------


def conversion(library: str, name: str, params: tuple[str, ...], defaults: dict[str, Any],
               what: str, convert: Any) -> Rule:
    return Rule(library, name, params, defaults, f"output tail: {what}",
                Verdict("conversion", reason=what), convert=convert, kind="conversion")


def unsupported(library: str, name: str, params: tuple[str, ...], defaults: dict[str, Any],
                reason: str, nearest: str) -> Rule:
    return Rule(library, name, params, defaults, "not imported",
                Verdict("unsupported", reason=reason), nearest=nearest, kind="unsupported")


def container(library: str, name: str, params: tuple[str, ...], defaults: dict[str, Any],
              what: str, varargs: bool = False, module_lists: tuple[str, ...] = ()) -> Rule:
    return Rule(library, name, params, defaults, what, Verdict("conversion", reason=what),
                kind="container", varargs=varargs, module_lists=module_lists)
