"""How an operator changes the image canvas: declared once per operator in the catalog.

Each catalog entry's ``canvas`` field says how the output size follows from the input size and
the operator's parameters (:data:`SAME` by default). The render budget
(:mod:`pipelines.budget`) walks a chain with these rules before DALI runs, so a chain that
would grow past the pixel budget is refused up front. The rules return upper bounds, checked
against real DALI outputs by the tests: DALI rounds a rotated bounding box up and may add a
pixel or two to keep the centre, and it rounds other sizes to the nearest or lower integer.
A parameter drawn per sample counts with the largest size it can give.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Size = tuple[int, int]
"""(height, width) in pixels."""


@dataclass(frozen=True)
class Span:
    """The values one parameter can take in a render: ``values`` (a literal, the values of a
    ``choice`` or of a sweep), or with ``continuous`` every value between their min and max
    (a ``uniform`` range)."""

    values: tuple[float, ...]
    continuous: bool = False

    @property
    def hi(self) -> float:
        return max(self.values)

    @property
    def lo(self) -> float:
        return min(self.values)

    def max_of(self, f: Callable[[float], float], critical: Callable[[float, float],
               list[float]] | None = None) -> float:
        """The largest ``f`` over the span; for a range ``critical(lo, hi)`` lists the interior
        points where ``f`` may peak (its ends are always tried)."""
        points = list(self.values)
        if self.continuous and critical is not None:
            points += critical(self.lo, self.hi)
        return max(f(v) for v in points)

    def describe(self, name: str) -> str:
        if len(self.values) == 1:
            return f"{name} {_fmt(self.values[0])}"
        if self.continuous:
            return f"{name} up to {_fmt(self.hi)} (drawn from [{_fmt(self.lo)}, {_fmt(self.hi)}])"
        return f"{name} up to {_fmt(self.hi)} (one of {len(self.values)} values)"


def _fmt(v: float) -> str:
    return f"{v:g}"


Values = Mapping[str, Span]


@dataclass(frozen=True)
class Canvas:
    """The output has the input's size (colour, noise, filters, masks, warps...)."""

    def size(self, hw: Size, values: Values) -> Size:
        return hw

    @property
    def params(self) -> tuple[str, ...]:
        """The parameters the size depends on (named in budget errors)."""
        return ()

    def describe(self, values: Values) -> str:
        """The parameter values that set the size, for an error message."""
        return ", ".join(values[p].describe(p) for p in self.params if p in values)

    @property
    def remedy(self) -> str:
        """What to change to make the output smaller, for an error message ("" if nothing)."""
        return f"lower {' and '.join(self.params)}" if self.params else ""

    def varies(self, params: Mapping[str, object], hw: Size | None) -> str | None:
        """Why samples may come out in different sizes with the step's build-time ``params``
        when every input is ``hw`` (None: inputs of any sizes), beyond what :meth:`size` says
        (a size drawn at run time, a window trimmed to each image); None when :meth:`fit` of
        :meth:`size` is every sample's size. :mod:`pipelines.batch_shape` reads it: an upper
        bound is enough for the render budget, not for saying a batch has one size."""
        return None

    def fit(self, hw: Size, out: Size, params: Mapping[str, object]) -> Size:
        """``out`` (:meth:`size`) as the build-time ``params`` make it for an input of ``hw``."""
        return out


SAME = Canvas()


@dataclass(frozen=True)
class Window(Canvas):
    """A window of the input whose size is drawn at run time: at most the input's size, and
    at least one pixel each way (the graph widens a thinner window: DALI's slice would cut
    an empty image, which later operators crash on)."""

    def varies(self, params: Mapping[str, object], hw: Size | None) -> str | None:
        return "draws each sample's window size"


@dataclass(frozen=True)
class Grow(Canvas):
    """Both sides times a ratio (``paste``: a canvas ``ratio`` times the image)."""

    ratio: str

    def size(self, hw: Size, values: Values) -> Size:
        r = max(1.0, values[self.ratio].hi)
        return math.ceil(hw[0] * r), math.ceil(hw[1] * r)

    @property
    def params(self) -> tuple[str, ...]:
        return (self.ratio,)


@dataclass(frozen=True)
class Rotated(Canvas):
    """The rotated image's bounding box, unless ``keep_size`` (``rotate``)."""

    angle: str
    keep_size: str

    def size(self, hw: Size, values: Values) -> Size:
        if min(values[self.keep_size].values) > 0:  # keep_size is True for every sample
            return hw
        h, w = hw
        span = values[self.angle]

        def out_w(deg: float) -> float:
            a = math.radians(deg)
            return w * abs(math.cos(a)) + h * abs(math.sin(a))

        def out_h(deg: float) -> float:
            a = math.radians(deg)
            return w * abs(math.sin(a)) + h * abs(math.cos(a))

        def peaks(of: float) -> Callable[[float, float], list[float]]:
            """Angles where a side peaks: the side's own angle mod 180, either sign."""
            def points(lo: float, hi: float) -> list[float]:
                out = []
                for base in (of, -of):
                    k = math.ceil((lo - base) / 180)
                    while base + 180 * k <= hi:
                        out.append(base + 180 * k)
                        k += 1
                return out
            return points

        width = span.max_of(out_w, peaks(math.degrees(math.atan2(h, w))))
        height = span.max_of(out_h, peaks(math.degrees(math.atan2(w, h))))
        # DALI rounds up and may add up to 2 px so the centre stays on the pixel grid.
        return math.ceil(height - 1e-6) + 2, math.ceil(width - 1e-6) + 2

    @property
    def params(self) -> tuple[str, ...]:
        return (self.angle, self.keep_size)

    def describe(self, values: Values) -> str:
        return f"{values[self.angle].describe(self.angle)} with {self.keep_size} off"

    @property
    def remedy(self) -> str:
        return f"turn {self.keep_size} on or rotate by less"


@dataclass(frozen=True)
class Shorter(Canvas):
    """The shorter side set to a length, aspect ratio kept (``resize(resize_shorter=...)``)."""

    length: str

    def size(self, hw: Size, values: Values) -> Size:
        s = values[self.length].hi
        h, w = hw
        if h <= w:
            return math.ceil(s), math.ceil(w * s / max(h, 1))
        return math.ceil(h * s / max(w, 1)), math.ceil(s)

    @property
    def params(self) -> tuple[str, ...]:
        return (self.length,)


@dataclass(frozen=True)
class Fixed(Canvas):
    """A window of a set height and width (a crop or a random resized crop)."""

    height: str
    width: str
    policy: str | None = None
    """The enum parameter saying what happens where the window leaves a smaller image
    (``crop``'s ``out_of_bounds_policy``): DALI's ``"trim_to_shape"`` cuts the window to the
    image, whose own size then shows through. None: always the full window (padded)."""

    def size(self, hw: Size, values: Values) -> Size:
        return math.ceil(values[self.height].hi), math.ceil(values[self.width].hi)

    def _trims(self, params: Mapping[str, object]) -> bool:
        return self.policy is not None and params.get(self.policy) == "trim_to_shape"

    def varies(self, params: Mapping[str, object], hw: Size | None) -> str | None:
        if hw is None and self._trims(params):
            return (f"trims its window to images smaller than it ({self.policy} "
                    "trim_to_shape; pad keeps one size)")
        return None

    def fit(self, hw: Size, out: Size, params: Mapping[str, object]) -> Size:
        return (min(out[0], hw[0]), min(out[1], hw[1])) if self._trims(params) else out

    @property
    def params(self) -> tuple[str, ...]:
        return (self.height,) if self.height == self.width else (self.height, self.width)
