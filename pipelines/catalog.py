"""The operator catalog: one declarative entry per operator, and the registry that holds them.

An entry (:class:`~pipelines.opspec.OpSpec`) says which DALI function it calls (``call``, a code
template), every parameter, the devices DALI implements it on and a one-line description. The
entries are declared in :mod:`pipelines.ops`, one module per category; the preview graph and
the exported code are both rendered from ``call``; nothing else in the project knows an
operator by name.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from .op_search import search, suggestions
from .ops import all_ops
from .opspec import CATEGORIES, Constraint, OpSpec

__all__ = ["AUTO_AUG_MODULES", "CATALOG", "CATEGORIES", "Catalog", "Constraint", "OpSpec",
           "unregister"]

AUTO_AUG_MODULES = ("augmentations", "auto_augment", "rand_augment", "trivial_augment")
"""Modules of ``nvidia.dali.auto_aug`` that ``call`` templates use (the generated code imports
those it calls)."""


class Catalog(Mapping[str, OpSpec]):
    """Ordered registry of operators by their DALI path (``rotate``, ``noise.gaussian``...)."""

    def __init__(self, ops: list[OpSpec]) -> None:
        self._ops: dict[str, OpSpec] = {}
        for op in ops:
            if op.name in self._ops:
                raise ValueError(f"operator {op.name!r} declared twice")
            self._ops[op.name] = op

    def __getitem__(self, name: str) -> OpSpec:
        return self._ops[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def register(self, op: OpSpec) -> None:
        """Add an operator (custom user operators use this)."""
        if op.name in self._ops:
            raise ValueError(f"operator {op.name!r} is already in the catalog")
        self._ops[op.name] = op

    def by_category(self, category: str) -> list[OpSpec]:
        return [op for op in self._ops.values() if op.category == category]

    def search(self, text: str) -> list[OpSpec]:
        """Operators matching ``text`` by name, description or alias, best first."""
        return search(self._ops.values(), text)

    def suggest(self, op: object) -> str:
        """The hint after "unknown operator ...": the names ``op`` may have meant."""
        if not isinstance(op, str):
            return " (see `dali-gallery ops`)"
        near = [n for n in self._ops if op.split(".")[-1] in n]
        # the search's own near matches (names and declared aliases): one "did you mean"
        near += [n for n in suggestions(self._ops.values(), op) if n not in near]
        near = near[:5]
        return f" (did you mean {', '.join(near)}?)" if near else " (see `dali-gallery ops`)"


def unregister(catalog: Catalog, name: str) -> None:
    """Remove a custom operator (tests, notebooks redefining one)."""
    op = catalog[name]
    if not op.custom:
        raise ValueError(f"{name!r} is a built-in operator and cannot be removed")
    del catalog._ops[name]


CATALOG = Catalog(all_ops())
"""Every built-in operator and the shipped custom examples; :func:`pipelines.custom.custom_op`
adds the user's own."""
