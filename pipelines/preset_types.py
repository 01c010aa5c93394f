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
from typing import Any, ClassVar

from .catalog import CATALOG, Catalog

FORMAT = "dali-gallery/preset"
VERSION = 1
DEFAULT_SEED = 42
MAX_PROBLEMS = 20
"""Problems listed in one error; the rest are counted ("... and N more")."""
MAX_PROBLEM_CHARS = 400
"""Longest problem line; values quoted in it are cut well before that (see ``quote``)."""
GROUP_KEY = "one_of"
"""The key that makes a step of the preset a group, and the name a group goes by in messages."""
MIN_CHILDREN = 2
MAX_CHILDREN = 16


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
class Group:
    """A step that applies ``pick`` distinct children per sample, drawn by ``weights`` (None:
    equal), in list order; a ``pick`` of all the enabled children (or more: some are
    disabled) applies them together on one coin.

    The group fires with ``probability``; a picked child then fires with its own probability
    (Albumentations' SomeOf; its OneOf force-applies the child: the importer sets those to 1).
    Disabled children are never picked. Groups do not nest."""

    children: list[Step]
    probability: float = 1.0
    enabled: bool = True
    weights: list[float] | None = None
    pick: int = 1
    op: ClassVar[str] = GROUP_KEY
    """What a group is called where a step names its operator (messages, card titles)."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {GROUP_KEY: [c.to_dict() for c in self.children],
                             "probability": self.probability, "enabled": self.enabled,
                             "pick": self.pick}
        if self.weights is not None:
            d["weights"] = list(self.weights)
        return d

    def active_children(self) -> list[tuple[int, Step]]:
        """Enabled children with their index in the group (indices name them and seed them)."""
        return [(j, c) for j, c in enumerate(self.children) if c.enabled]

    def picks_all(self) -> bool:
        """Whether every enabled child is applied (nothing to draw but the coins)."""
        return self.pick >= len(self.active_children())

    def normalised_weights(self) -> list[float]:
        """The enabled children's weights, summing to 1 (what a draw of one child uses)."""
        active = self.active_children()
        raw = [self.weights[j] if self.weights is not None else 1.0 for j, _ in active]
        total = sum(raw)
        return [w / total for w in raw]

    def key_scales(self) -> dict[int, float]:
        """Each enabled child's factor on ``log(u)`` in a draw of several children (largest
        key wins): the largest weight over its own, so only ratios count and every key stays
        finite in float32 (``u ** (1 / w)`` underflows to 0 for small weights)."""
        active = self.active_children()
        raw = {j: self.weights[j] if self.weights is not None else 1.0 for j, _ in active}
        top = max(raw.values())
        return {j: top / w for j, w in raw.items()}


ChainStep = Step | Group
"""A step of the chain: one operator, or a group of them."""


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

    steps: list[ChainStep] = field(default_factory=list)
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

    def active_steps(self) -> list[tuple[int, ChainStep]]:
        """Enabled steps (operators and groups) with their index in the chain (indices name
        steps in errors)."""
        return [(i, s) for i, s in enumerate(self.steps) if s.enabled]

    def active_ops(self) -> list[tuple[int, Step]]:
        """Every operator the chain runs: enabled steps and the enabled children of enabled
        groups, each with the index of its step in the chain (for what needs the operators,
        not the chain's structure: devices, custom code, checkpoints)."""
        out: list[tuple[int, Step]] = []
        for i, s in self.active_steps():
            if isinstance(s, Group):
                out += [(i, c) for _, c in s.active_children()]
            else:
                out.append((i, s))
        return out

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")


def new_step(op: str, catalog: Catalog = CATALOG, **params: Value) -> Step:
    """A step with every parameter at its default, overridden by ``params``."""
    spec = catalog[op]
    values = spec.defaults()
    values.update(params)
    return Step(op, values)
