"""The preset's data types: steps, random values, the output tail and the error that lists problems.

Kept apart from parsing and validation so code that only reads a preset (codegen, the engine,
the widgets) needs none of the document machinery. A :class:`Preset` built in code is checked
with :func:`~.preset_validate.validate_preset` (the same validation a JSON document goes through).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .catalog import CATALOG, Catalog

FORMAT = "dali-gallery/preset"
VERSION = 1
DEFAULT_SEED = 42
MAX_PROBLEMS = 20
"""Problems listed in one error; the rest are counted ("... and N more")."""
MAX_PROBLEM_CHARS = 400
"""Longest problem line; values quoted in it are cut well before that (see ``quote``)."""


class PresetError(ValueError):
    """Every problem found in a preset, one per line (at most ``MAX_PROBLEMS``, each bounded)."""

    def __init__(self, problems: list[str]) -> None:
        shown = [cut(p, MAX_PROBLEM_CHARS) for p in problems[:MAX_PROBLEMS]]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"preset: ... and {len(problems) - MAX_PROBLEMS} more problems")
        self.problems = shown
        super().__init__("\n".join(shown))


def cut(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters long, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Uniform:
    """A value drawn per sample from [lo, hi) (floats) or [lo, hi] (integers)."""

    lo: float
    hi: float

    def to_json(self) -> dict[str, list[float]]:
        return {"uniform": [self.lo, self.hi]}


@dataclass(frozen=True)
class Choice:
    """A value drawn per sample, uniformly from a list."""

    values: tuple[Any, ...]

    def to_json(self) -> dict[str, list[Any]]:
        return {"choice": list(self.values)}


Value = Any  # literal | Uniform | Choice


def is_random(value: Value) -> bool:
    return isinstance(value, (Uniform, Choice))


def value_to_json(value: Value) -> Any:
    return value.to_json() if is_random(value) else value


@dataclass
class Step:
    """One operator in the chain."""

    op: str
    params: dict[str, Value] = field(default_factory=dict)
    probability: float = 1.0
    enabled: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "probability": self.probability,
            "enabled": self.enabled,
            "params": {k: value_to_json(v) for k, v in self.params.items()},
        }


@dataclass
class Output:
    """The training tail: resize, crop, normalisation, layout and dtype."""

    resize_shorter: float | None = None
    crop: tuple[int, int] | None = None
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    layout: str = "CHW"
    dtype: str = "float32"
    mirror_probability: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "resize_shorter": self.resize_shorter,
            "crop": list(self.crop) if self.crop else None,
            "mean": list(self.mean) if self.mean else None,
            "std": list(self.std) if self.std else None,
            "layout": self.layout,
            "dtype": self.dtype,
            "mirror_probability": self.mirror_probability,
        }


IMAGENET_OUTPUT = Output(
    resize_shorter=256,
    crop=(224, 224),
    mean=(0.485, 0.456, 0.406),
    std=(0.229, 0.224, 0.225),
)


@dataclass
class Preset:
    """The user's pipeline. Objects made in code are unchecked until
    :func:`~.preset_validate.validate_preset` (the engine and the export call it)."""

    steps: list[Step] = field(default_factory=list)
    seed: int = DEFAULT_SEED
    output: Output | None = None
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        if self.name:
            d["name"] = self.name
        d["seed"] = self.seed
        d["steps"] = [s.to_dict() for s in self.steps]
        d["output"] = self.output.to_dict() if self.output else None
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def copy(self) -> Preset:
        return copy.deepcopy(self)

    def active_steps(self) -> list[tuple[int, Step]]:
        """Enabled steps with their index in the chain (indices name steps in errors)."""
        return [(i, s) for i, s in enumerate(self.steps) if s.enabled]

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")


def new_step(op: str, catalog: Catalog = CATALOG, **params: Value) -> Step:
    """A step with every parameter at its default, overridden by ``params``."""
    spec = catalog[op]
    values = spec.defaults()
    values.update(params)
    return Step(op, values)
