"""Choices an operator makes per sample that the chain draws itself, so that they are recorded.

DALI's auto-augment policies pick their augmentations inside DALI's own functions, where the
preview cannot read the pick back. An operator that declares a :class:`Draw` has it drawn in
the chain instead, on a line of its own before the step's coin, and handed to its ``call`` by
name (``{<draw>}``); the preview returns it as a record, like a value drawn from a range. What a
policy applies is then read from the pipeline's outputs, never re-simulated.

Each draw has a seed slot of its own (draw k of an operator: slot :data:`FIRST_SLOT` + k of its
step). DALI 2.4's policy functions give the same explicit seed to every random node they make
(the operation, the magnitude bin, the sign, the stage coins), and DALI's random operators with
one seed draw one stream: those choices come out tied (TrivialAugment applies translate_x only
at bins 0-2 and always with the same sign). Separate slots make them independent, and still
set only by the chain seed and the step's position.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Labels = Callable[[Mapping[str, Any]], tuple[str, ...]]
Levels = Callable[[Mapping[str, Any]], int]

FIRST_SLOT = 90
"""Seed slot (within its step's) of an operator's first draw; its parameters' ranges use slots
from 1 up and the operator itself 99 (:mod:`pipelines.codegen`)."""
MAX_PER_OPERATOR = 9
"""The most draws one operator declares (slots 90 to 98)."""


@dataclass(frozen=True)
class Draw:
    """One per-sample choice. ``source`` is the draw's expression template (``{seed}``, the
    operator's seed, and ``{<param>}``); ``labels`` says what each drawn value means for given
    parameter values (value k is ``labels(params)[k]``; None: the value is a number, such as
    a magnitude bin); ``levels`` says how many values one sample draws, each recorded on its
    own: the name of the parameter that holds the number (RandAugment's ``n``: the operations
    applied one after the other) or a function of the parameter values (AutoAugment's stages).
    ``source`` may name an earlier draw of the operator (``{sub_policy}``)."""

    name: str
    source: str
    doc: str
    labels: Labels | None = None
    levels: str | Levels | None = None

    def count(self, params: Mapping[str, Any]) -> int:
        """How many values a sample draws with these (literal) parameter values."""
        if self.levels is None:
            return 1
        if callable(self.levels):
            return int(self.levels(params))
        return int(params[self.levels])

    def records(self, params: Mapping[str, Any]) -> list[tuple[str, int | None]]:
        """(record name, index into the drawn node or None for a scalar) of each value."""
        n = self.count(params)
        if n == 1:
            return [(self.name, None)]
        return [(level_name(self.name, k), k) for k in range(n)]


def level_name(name: str, k: int) -> str:
    """The record name of level ``k`` (0-based) of a draw of several values per sample."""
    return f"{name}_{k + 1}"
