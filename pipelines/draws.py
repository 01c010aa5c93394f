"""Choices an operator makes per sample that the chain draws itself, so that they are recorded.

DALI's auto-augment policies pick their augmentations inside DALI's own functions, where the
preview cannot read the pick back. An operator that declares a :class:`Draw` has it drawn in
the chain instead, on a line of its own before the step's coin and with the operator's own
seed (so it is the draw DALI's function would make), and handed to its ``call`` by name
(``{<draw>}``); the preview returns it as a record, like a value drawn from a range. What a
policy applies is then read from the pipeline's outputs, never re-simulated.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

Labels = Callable[[Mapping[str, Any]], tuple[str, ...]]


@dataclass(frozen=True)
class Draw:
    """One per-sample choice. ``source`` is the draw's expression template (``{seed}``, the
    operator's seed, and ``{<param>}``); ``labels`` says what each drawn value means for given
    parameter values (value k is ``labels(params)[k]``; None: the value is a number, such as
    a magnitude bin); ``levels`` names the parameter that says how many values one sample
    draws (RandAugment's ``n``: the operations applied one after the other), each recorded
    on its own."""

    name: str
    source: str
    doc: str
    labels: Labels | None = None
    levels: str | None = None

    def count(self, params: Mapping[str, Any]) -> int:
        """How many values a sample draws with these (literal) parameter values."""
        return 1 if self.levels is None else int(params[self.levels])

    def records(self, params: Mapping[str, Any]) -> list[tuple[str, int | None]]:
        """(record name, index into the drawn node or None for a scalar) of each value."""
        n = self.count(params)
        if n == 1:
            return [(self.name, None)]
        return [(level_name(self.name, k), k) for k in range(n)]


def level_name(name: str, k: int) -> str:
    """The record name of level ``k`` (0-based) of a draw of several values per sample."""
    return f"{name}_{k + 1}"
