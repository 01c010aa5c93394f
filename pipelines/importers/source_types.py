"""The values the source reader returns: library constants, opaque code, transform calls, and
the checks on their size (numbers, repeated values) that both readers share.

Kept apart from the reader (:mod:`.source`) so that module stays about reading; every other
importer module takes these from :mod:`.source`, which re-exports them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

MAX_NUMBER = 1e9
"""Largest magnitude of a numeric literal (pixel sizes and factors are far below)."""


@dataclass(frozen=True)
class Symbol:
    """A library constant named in the source (``InterpolationMode.BILINEAR``, ``cv2.INTER_AREA``,
    ``torch.float32``): its dotted path and its plain value."""

    path: str
    value: Any


@dataclass(frozen=True)
class Opaque:
    """Code that would have to run to mean anything (a lambda); kept as text, never evaluated."""

    text: str


@dataclass(frozen=True)
class Call:
    """One transform (or container) call as written, with literal arguments."""

    library: str  # "torchvision", "albumentations" or "custom"
    module: str  # where the name resolved, e.g. "torchvision.transforms.v2"
    name: str  # the class name, e.g. "RandomRotation"
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    line: int = 0
    col: int = 0
    text: str = ""

    @property
    def where(self) -> str:
        return f"line {self.line}" if self.line else "the pipeline"


@dataclass
class Parsed:
    """The pipeline found in the input, and what else was seen."""

    root: Call | list[Any]
    target: str
    notes: list[str] = field(default_factory=list)


def number_problem(v: int | float) -> str | None:
    """Why a numeric literal is refused, or None. Integers are compared exactly: ``float()``
    of a 400-digit integer overflows, and ``repr`` refuses beyond 4300 digits."""
    if isinstance(v, int) and abs(v) > MAX_NUMBER:
        shown = f"the number {v!r:.30}" if v.bit_length() < 100 else \
            f"an integer of about {int(v.bit_length() * math.log10(2)) + 1} digits"
        return f"{shown} is outside +-{MAX_NUMBER:g}"
    if isinstance(v, float) and not (math.isfinite(v) and abs(v) <= MAX_NUMBER):
        return f"the number {v!r:.30} is outside +-{MAX_NUMBER:g}"
    return None


def expanded_size(value: Any, limit: int) -> int:
    """How many values ``value`` holds, itself and everything inside (a call's arguments
    too), counted up to just past ``limit``; walked without recursion."""
    count, stack = 0, [value]
    while stack and count <= limit:
        v = stack.pop()
        count += 1
        if isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, Call):
            stack.extend(v.args)
            stack.extend(v.kwargs.values())
    return count


TV_TENSOR_MODULES = ("torchvision.tv_tensors.", "torchvision.datapoints.")


def tv_tensor_key(path: str) -> str | None:
    """The dict key a torchvision tv_tensors class stands for (v2's per-type fill,
    ``{tv_tensors.Image: (123, 117, 104), "others": 0}``), as its name "tv_tensors.Image";
    None for any other name (only string keys are read otherwise)."""
    for module in TV_TENSOR_MODULES:
        if path.startswith(module) and path[len(module):].isidentifier():
            return "tv_tensors." + path[len(module):]
    return None
