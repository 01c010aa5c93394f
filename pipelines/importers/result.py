"""What an import returns: the preset and, transform by transform, how each one fared
(kept apart from the converter that fills them in, which the report pages only read)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ..preset import Preset
from .rules import Args, Rule, Verdict
from .source import Call, Parsed

Status = Literal["imported", "tail", "conversion", "not imported"]


@dataclass
class Imported:
    """How one transform of the original pipeline was imported."""

    call: Call
    status: Status
    verdict: Verdict
    steps: list[int] = field(default_factory=list)
    """Indices of the preset steps it became."""
    tail: list[str] = field(default_factory=list)
    """Output-tail keys it set."""
    notes: list[str] = field(default_factory=list)
    nearest: str = ""
    rule: Rule | None = None
    args: Args | None = None
    inside: str = ""
    """The container it sits in ("RandomApply p=0.5", "OneOf"...), if any."""

    @property
    def label(self) -> str:
        return f"{self.call.name} ({self.call.where})" if self.call.line else self.call.name

    def to_dict(self) -> dict[str, Any]:
        return {"transform": self.call.name, "library": self.call.library, "line": self.call.line,
                "source": self.call.text, "status": self.status, "verdict": self.verdict.line(),
                "verdict_kind": self.verdict.kind, "steps": self.steps, "tail": self.tail,
                "notes": self.notes, "nearest": self.nearest or None, "inside": self.inside or None}


@dataclass
class ImportResult:
    """The imported preset and the per-transform account of the import."""

    preset: Preset
    library: str
    transforms: list[Imported]
    notes: list[str]
    origin: str
    parsed: Parsed

    @property
    def not_imported(self) -> list[Imported]:
        return [t for t in self.transforms if t.status == "not imported"]

    def summary(self) -> str:
        n = len(self.transforms)
        bad = len(self.not_imported)
        return (f"{n - bad} of {n} transforms imported from {self.library} into "
                f"{len(self.preset.steps)} steps" + (f"; {bad} not imported" if bad else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"library": self.library, "origin": self.origin, "summary": self.summary(),
                "notes": self.notes, "transforms": [t.to_dict() for t in self.transforms],
                "preset": self.preset.to_dict()}
