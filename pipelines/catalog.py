"""The operator catalog: one declarative entry per operator, and the registry that holds them.

An entry says which DALI function it calls (``call``, a code template), every parameter, the
devices DALI implements it on and a one-line description. The preview graph and the exported
code are both rendered from ``call``; nothing else in the project knows an operator by name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .params import Param

CATEGORIES = (
    "geometry",
    "color",
    "blur/filter",
    "noise",
    "erase/mask",
    "distortion",
    "auto-augment",
    "custom",
)

_PLACEHOLDER = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Constraint:
    """A rule across several parameters, checked on literal values."""

    params: tuple[str, ...]
    check: Callable[[Mapping[str, Any]], bool]
    message: str


@dataclass(frozen=True)
class OpSpec:
    """One catalog entry.

    ``call`` is a Python expression template: ``{x}`` is the input images, ``{seed}`` the op's own
    seed and ``{<param>}`` each parameter's value (a literal, a fed node or a per-sample draw).
    ``schema`` is DALI's schema name, used by the contract test to check ``runtime`` flags and
    devices against DALI itself. ``magnitude`` names the main parameter (sliders, gallery).
    ``conditionals``: DALI's implementation branches per sample (``if`` on data), so the
    pipeline needs ``enable_conditionals``; pipelines that need none are built without it,
    which saves autograph's tracing (1.5 s for the first such pipeline of a process).
    """

    name: str
    category: str
    doc: str
    call: str
    params: tuple[Param, ...] = ()
    devices: frozenset[str] = frozenset({"cpu", "gpu"})
    magnitude: str | None = None
    schema: str | None = None
    constraints: tuple[Constraint, ...] = ()
    signed: bool = False
    policy: bool = False
    conditionals: bool = False
    gpu_reason: str = ""
    function: Callable[..., Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"{self.name}: unknown category {self.category!r}")
        names = [p.name for p in self.params]
        used = set(_PLACEHOLDER.findall(self.call)) - {"x", "seed"}
        if used != set(names):
            raise ValueError(
                f"{self.name}: template placeholders {sorted(used)} != parameters {sorted(names)}"
            )
        if self.magnitude is not None and self.magnitude not in names:
            raise ValueError(f"{self.name}: magnitude {self.magnitude!r} is not a parameter")

    @property
    def seeded(self) -> bool:
        """Whether the operator draws random numbers itself (and so takes its own seed)."""
        return "{seed}" in self.call

    @property
    def custom(self) -> bool:
        """A user-defined Python operator (run through DALI's python_function)."""
        return self.function is not None

    @property
    def cpu(self) -> bool:
        return "cpu" in self.devices

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def defaults(self) -> dict[str, Any]:
        return {p.name: p.default for p in self.params}

    def to_json(self) -> dict[str, Any]:
        return {
            "op": self.name,
            "category": self.category,
            "doc": self.doc,
            "devices": sorted(self.devices),
            "gpu_only_reason": self.gpu_reason or None,
            "magnitude": self.magnitude,
            "signed": self.signed,
            "policy": self.policy,
            "conditionals": self.conditionals,
            "dali_call": self.call,
            "params": [p.to_json() for p in self.params],
        }


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
        t = text.lower().strip()
        return [op for op in self._ops.values() if t in op.name.lower() or t in op.doc.lower()]


def _build() -> Catalog:
    from .ops import all_ops

    return Catalog(all_ops())


def unregister(catalog: Catalog, name: str) -> None:
    """Remove a custom operator (tests, notebooks redefining one)."""
    op = catalog[name]
    if not op.custom:
        raise ValueError(f"{name!r} is a built-in operator and cannot be removed")
    del catalog._ops[name]


CATALOG = _build()

from . import custom_examples  # noqa: E402,F401  (registers the shipped custom operators)
