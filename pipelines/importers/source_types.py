"""The values the source reader returns: library constants, opaque code, transform calls.

Kept apart from the reader (:mod:`.source`) so that module stays about reading; every other
importer module takes these from :mod:`.source`, which re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
