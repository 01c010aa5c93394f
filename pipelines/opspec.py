"""What one catalog entry declares about an operator (:class:`OpSpec`), and the categories.

Kept apart from the registry (:mod:`pipelines.catalog`) so that the declaration modules
(:mod:`pipelines.ops`) import this module and the registry imports them, never the other way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .canvas import SAME, Canvas
from .custom_code import CustomCode
from .draws import FIRST_SLOT as DRAW_SLOT
from .draws import MAX_PER_OPERATOR as MAX_DRAWS
from .draws import Draw
from .labels import LabelRule
from .params import Param
from .work import ONE_PASS, Work

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

PLACEHOLDER = re.compile(r"\{(\w+)\}")
"""A placeholder of a ``call`` template: ``{x}``, ``{seed}``, ``{source}`` or ``{<param>}``.
``{source}`` is the shape of the images ``{x}`` when the step reads the chain's input (the
first step): a host node (the JPEG headers, the fed batch), so an operator that needs the
size (a crop's one-pixel guard) need not wait for the GPU decoder; ``None`` elsewhere."""


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
    ``checkpoints``: DALI can save the operator's random state (``enable_checkpointing``); the
    preview restores that state before each render, and rebuilds instead where it cannot.
    ``canvas``: how the output size follows from the input size and the parameters
    (:mod:`pipelines.canvas`; same size by default), which the render budget checks before
    DALI runs (:mod:`pipelines.budget`); ``work``: how many pixels it reads for each it
    writes (:mod:`pipelines.work`; one by default), which the work budget checks.
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
    checkpoints: bool = True
    gpu_reason: str = ""
    function: Callable[..., Any] | None = None
    custom_code: CustomCode | None = None
    """A custom operator's function as the generated modules copy it, with what a call costs
    (:func:`pipelines.custom_spec.custom_spec` sets it with ``function``)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    canvas: Canvas = SAME
    work: Work = ONE_PASS
    aliases: tuple[str, ...] = ()
    """Other names people search for: the torchvision / albumentations transforms the operator
    stands in for and common words ("grayscale"); the picker's search reads them
    (:mod:`pipelines.op_search`)."""
    draws: tuple[Draw, ...] = ()
    """Choices the operator makes per sample that the chain draws and records (which
    augmentation a policy applies): each is a ``{<name>}`` placeholder of ``call``
    (:mod:`pipelines.draws`)."""

    labels: LabelRule | None = None
    """What the operator does to boxes, masks and keypoints (:mod:`pipelines.labels`); every
    entry declares it (a contract test checks)."""

    def __post_init__(self) -> None:
        if self.category not in CATEGORIES:
            raise ValueError(f"{self.name}: unknown category {self.category!r}")
        names = [p.name for p in self.params]
        used = set(PLACEHOLDER.findall(self.call)) - {"x", "seed", "source"}
        used -= {d.name for d in self.draws}
        if len(self.draws) > MAX_DRAWS or len(self.params) >= DRAW_SLOT:
            raise ValueError(f"{self.name}: at most {MAX_DRAWS} draws and "
                             f"{DRAW_SLOT - 1} parameters (each needs a seed slot)")
        for k, d in enumerate(self.draws):
            earlier = {e.name for e in self.draws[:k]}
            if not set(PLACEHOLDER.findall(d.source)) <= {*names, "seed", *earlier}:
                raise ValueError(f"{self.name}: draw {d.name!r} uses unknown placeholders")
        if used != set(names):
            raise ValueError(
                f"{self.name}: template placeholders {sorted(used)} != parameters {sorted(names)}"
            )
        if self.magnitude is not None and self.magnitude not in names:
            raise ValueError(f"{self.name}: magnitude {self.magnitude!r} is not a parameter")
        nearest = self.labels.nearest_masks if self.labels is not None else None
        if nearest is not None and (self.seeded or self.custom or self.draws):
            raise ValueError(f"{self.name}: masks cannot take the entry's own call (it draws "
                             "its own numbers or runs Python: the masks would get others)")
        if nearest is not None and not {k for k, _ in nearest} <= set(names):
            raise ValueError(f"{self.name}: nearest names parameters the entry does not have")

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

    def call_source(self, args: Mapping[str, str]) -> str:
        """The ``call`` template with every placeholder replaced by its source in ``args``
        (``x``, ``seed`` when the operator is seeded, and each parameter)."""
        return PLACEHOLDER.sub(lambda m: args[m.group(1)], self.call)

    def draw_source(self, draw: Draw, args: Mapping[str, str]) -> str:
        """The source of one of the operator's ``draws``, its placeholders replaced as in
        :meth:`call_source`."""
        return PLACEHOLDER.sub(lambda m: args[m.group(1)], draw.source)

    def unavailable_on(self, device: str) -> str | None:
        """Why the operator cannot run on ``device`` (None when it can): the one sentence the
        picker, the gallery and the preview engine show."""
        if device in self.devices:
            return None
        where = " and ".join(d.upper() for d in sorted(self.devices))
        why = self.gpu_reason or f"DALI implements it only on {', '.join(sorted(self.devices))}"
        return (f"{self.name} runs on the {where} only ({why}); this machine previews on the "
                f"{device.upper()}")

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
            "labels": self.labels.describe() if self.labels is not None else None,
            "params": [p.to_json() for p in self.params],
        }
