"""The data a generated chain carries beside its source: the values the preview feeds, the
records it returns, the chain's lines and labels, and the seed slot of every random node
(:mod:`pipelines.codegen` writes them; the engine, the inspector and the export read them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from .label_code import LabelSet
from .preset import MAX_CHILDREN

SLOTS_PER_STEP = 100
OP_SLOT = 99
CHILD_SLOTS = 100_000
"""Seed slots of groups' children start here: above every step's (64 x 100), below the tail's
(:data:`pipelines.module_parts.TAIL_SLOT`)."""
PICK_SLOT = 1
KEY_SLOTS = 2
"""A group's slots: 0 its coin, 1 its draw of one child, 2 + j the key of child j."""


@dataclass(frozen=True)
class Feed:
    """A value the preview feeds at run time: a step parameter, a range or a probability."""

    name: str
    step: int
    param: str  # parameter name, "probability", "weights" or "key_scale"
    dtype: str  # "FLOAT" or "INT32"
    kind: Literal["value", "range", "probability", "weights", "key_scale"]
    child: int | None = None
    """The child of group ``step`` whose value this is (None: the step's, or the group's)."""
    width: int = 0  # 0: one number per sample, else a vector (a range, a group's weights)


@dataclass(frozen=True)
class Record:
    """A pipeline output that says what happened to each sample (fired flag or drawn value)."""

    step: int
    param: str  # parameter name, or "fired" (for a group's child: it ran on the sample)
    child: int | None = None
    expr: str | None = None
    """The expression the chain returns for it, when that is not the variable named after
    it (one level of a draw of several values per sample: ``op_3[1]``)."""


@dataclass
class Chain:
    """Generated chain source plus what the preview must feed and what it gets back."""

    body: list[str]
    feeds: list[Feed] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    step_lines: dict[int, tuple[int, int]] = field(default_factory=dict)  # step -> body range
    child_lines: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    """(group's step index, child) -> (first, end) indices of the child's block in ``body``."""
    conditionals: bool = False
    """Whether the pipeline needs ``enable_conditionals`` (a step that fires with a
    probability, or an operator declared ``conditionals``)."""
    checkpoints: bool = True  # whether DALI can checkpoint every operator (OpSpec.checkpoints)
    random: bool = False
    """Whether the chain draws random numbers (a sampled value, a probability, a group's pick,
    a seeded operator, the preview's training tail): one that draws none gives the same images
    every run, so it needs no RNG state put back (a chain DALI cannot checkpoint is then not
    built again, and may be kept: ``engine._Built.restorable``)."""
    module_lines: dict[int, range] = field(default_factory=dict)
    """Step index -> the lines (1-based) its block occupies in the preview module; set by
    :func:`preview_module`, read to name the step behind a line DALI reports."""
    child_module_lines: dict[tuple[int, int], range] = field(default_factory=dict)
    """(group's step index, child) -> the lines its block occupies in the preview module."""
    labels: LabelSet | None = None  # the labels the chain carries (None: images only)
    kept: list[tuple[int, int | None]] = field(default_factory=list)
    """(step, child) of each block that records the kept fraction of every box (``kept_<tag>``),
    in chain order: the preview returns them after the labels."""
    moves: list[Any] = field(default_factory=list)  # label moves not written yet (label_code)
    after_run_kinds: list[tuple[Any, ...]] = field(default_factory=list)
    """The kinds of the moves the preview applies after the run (``labels.after_run``), in
    order: the chain's, then the tail's."""
    at_source: bool = True  # the next step reads the chain's input images (the first one)
    uses_source: bool = False
    """Whether a step reads ``source``, the input images' shape as the host knows it (the
    JPEG headers, the fed batch): ``augment`` then takes ``source=None``."""

    def child_at(self, line: int) -> tuple[int, int] | None:
        """(step, child) whose block holds ``line`` (None: no group's child's)."""
        return next((k for k, lines in self.child_module_lines.items() if line in lines), None)

    def step_at(self, line: int) -> int | None:
        """The step whose block holds ``line`` of the preview module (None: no step's)."""
        return next((s for s, lines in self.module_lines.items() if line in lines), None)


def seed_slot(step: int, k: int) -> int:
    """Seed slot of the k-th random node of a step (0 = its coin flip, 99 = the op itself)."""
    return step * SLOTS_PER_STEP + k


def child_slot(step: int, child: int, k: int) -> int:
    """Seed slot of the k-th random node of child ``child`` of the group at ``step``."""
    return CHILD_SLOTS + (step * MAX_CHILDREN + child) * SLOTS_PER_STEP + k


def feed_name(step: int, param: str, kind: str = "value", child: int | None = None) -> str:
    where = f"s{step}" if child is None else f"s{step}c{child}"
    return f"{where}_{param}" + ("_range" if kind == "range" else "")


@dataclass(frozen=True)
class _At:
    """Where a block of generated code belongs: step ``step`` or child ``child`` of it."""

    step: int
    child: int | None = None

    @property
    def tag(self) -> str:
        """The suffix of the block's variables."""
        return f"{self.step}" if self.child is None else f"{self.step}_{self.child}"

    def slot(self, k: int) -> int:
        return seed_slot(self.step, k) if self.child is None else \
            child_slot(self.step, self.child, k)
