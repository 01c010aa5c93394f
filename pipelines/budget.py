"""Pixel budgets: what one image, one render and one kernel may hold, checked before DALI runs.

A chain of four ``paste`` steps at ratio 3 turns a 1024 px image into a 83 k px one; six small
PNG files can declare 150 MP each. Neither may reach DALI: every render is planned first, with
each step's output size computed from its input size and the operator's ``canvas`` declaration
(:mod:`pipelines.canvas`; a value drawn per sample counts with its largest size), and refused
with a :class:`BudgetError` naming the step, the parameter and the size. The chain is left as it
was, so the user can lower the value. Loading images is checked the same way against the
kernel's budget before decoding (:func:`pipelines.image_decode.decode`).

The budgets (pixels are W x H; an RGB uint8 pixel is 3 bytes):

* :data:`IMAGE_PIXELS` per image: the largest image decoded, and the largest any step may take
  in or put out.
* :data:`RENDER_PIXELS` per render: for every step, the pixels it takes in plus those it puts
  out, summed over the batch (images x draws). DALI's executor reuses its buffers from step to
  step, so a render's memory follows its largest step, not the length of the chain (measured:
  12 same-size steps cost what 4 do).
* :data:`KERNEL_PIXELS` per kernel: decoded images still alive anywhere in the process plus the
  largest step and the outputs of each engine's latest render.

They are module constants; an app or the CLI passes others with :func:`configure` (see
:func:`add_arguments` / :func:`from_args` for command-line flags).
"""

from __future__ import annotations

import argparse
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .canvas import SAME, Canvas, Fixed, Shorter, Size, Span
from .catalog import CATALOG, Catalog
from .codegen import feed_name
from .preset import Choice, Preset, Uniform
from .step_error import StepError

IMAGE_PIXELS = 160_000_000
"""Largest image (W x H) decoded or passed between steps: 160 MP keeps 100-150 MP camera files
(480 MB as RGB) usable while refusing decompression bombs."""
RENDER_PIXELS = 256_000_000
"""Largest number of pixels one step of a render takes in plus puts out, over the whole batch
(768 MB as RGB uint8; a render's peak memory measured at 2-3 times its largest step)."""
KERNEL_PIXELS = 512_000_000
"""Largest number of pixels one kernel holds in decoded images plus its engines' latest
renders (1.5 GB as RGB uint8)."""


@dataclass(frozen=True)
class Budget:
    """The three pixel budgets; see the module docstring for what each one bounds."""

    image_pixels: int = IMAGE_PIXELS
    render_pixels: int = RENDER_PIXELS
    kernel_pixels: int = KERNEL_PIXELS

    def __post_init__(self) -> None:
        for name in ("image_pixels", "render_pixels", "kernel_pixels"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"budget {name}={value!r} is not allowed; expected a positive "
                                 "whole number of pixels")


_LOCK = threading.Lock()
_CURRENT = [Budget()]


def configure(budget: Budget | None = None) -> Budget:
    """Use ``budget`` for every later check in this process (None: the defaults); returns it.
    The kernel budget is one per process, so this is a process-wide setting."""
    with _LOCK:
        _CURRENT[0] = budget if budget is not None else Budget()
        return _CURRENT[0]


def current() -> Budget:
    """The budget checks use now."""
    return _CURRENT[0]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-image-mp``, ``--max-render-mp`` and ``--max-kernel-mp`` (megapixels)."""
    group = parser.add_argument_group("pixel budgets (megapixels, 1 MP = 10^6 pixels)")
    for flag, default, what in (
        ("--max-image-mp", IMAGE_PIXELS, "largest image decoded or made by a step"),
        ("--max-render-mp", RENDER_PIXELS, "pixels one step of a render takes in + puts out"),
        ("--max-kernel-mp", KERNEL_PIXELS, "pixels held by loaded images and renders"),
    ):
        group.add_argument(flag, type=float, default=default / 1e6,
                           help=f"{what} (default: {default / 1e6:g})")


def from_args(args: argparse.Namespace) -> Budget:
    """The :class:`Budget` the flags of :func:`add_arguments` ask for (ValueError if bad)."""
    def pixels(mp: float, flag: str) -> int:
        if not mp > 0 or mp != mp or mp == float("inf"):
            raise ValueError(f"{flag} {mp!r} is not allowed; expected a positive number of MP")
        return max(1, round(mp * 1e6))

    return Budget(pixels(args.max_image_mp, "--max-image-mp"),
                  pixels(args.max_render_mp, "--max-render-mp"),
                  pixels(args.max_kernel_mp, "--max-kernel-mp"))


def mp(pixels: float) -> str:
    """Pixels as megapixels for messages."""
    return f"{pixels / 1e6:,.1f} MP" if pixels < 10e6 else f"{pixels / 1e6:,.0f} MP"


# ---- what the kernel holds ----------------------------------------------------------------------


class PixelLedger:
    """What this process holds, in pixels: decoded images (tracked through weak references,
    so an image nobody holds any more drops out by itself) and each engine's latest render."""

    def __init__(self) -> None:
        self._images: dict[int, tuple[weakref.ref[Any], int]] = {}
        self._renders: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def hold_images(self, arrays: Iterable[np.ndarray]) -> None:
        for a in arrays:
            key = id(a)
            ref = weakref.ref(a, lambda _, key=key: self._images.pop(key, None))
            self._images[key] = (ref, int(a.shape[0]) * int(a.shape[1]))

    def image_pixels(self) -> int:
        return sum(px for ref, px in list(self._images.values()) if ref() is not None)

    def hold_render(self, owner: Any, pixels: int) -> None:
        self._renders[owner] = pixels

    def render_pixels(self, *, excluding: Any = None) -> int:
        return sum(px for owner, px in list(self._renders.items()) if owner is not excluding)

    def held(self, *, excluding: Any = None) -> int:
        """Pixels held now (``excluding`` one engine's latest render, which its next replaces)."""
        return self.image_pixels() + self.render_pixels(excluding=excluding)


LEDGER = PixelLedger()


# ---- planning a render ------------------------------------------------------------------------


class BudgetError(StepError):
    """A render refused by a budget before DALI ran; ``param`` names what to lower (None when
    no parameter can help), ``pixels`` the size refused and ``limit`` the budget."""

    def __init__(self, message: str, step: int | None, op: str | None, *, param: str | None,
                 pixels: int, limit: int) -> None:
        super().__init__(message, step, op)
        self.param = param
        self.pixels = pixels
        self.limit = limit


@dataclass
class PlannedStep:
    """One step of a render plan: the output size of every image (an upper bound)."""

    index: int | None  # the step's index in the preset; None for the training tail
    op: str
    canvas: Canvas
    values: dict[str, Span]
    sizes: list[Size]

    def where(self) -> tuple[int | None, str | None, str]:
        """(step, op, prefix) for an error: the tail has no step index."""
        if self.index is None:
            return None, self.op, f"training tail ({self.op}): "
        return self.index, self.op, ""


@dataclass
class RenderPlan:
    """Every step's output sizes for ``inputs`` (one size per image) and ``draws`` draws."""

    inputs: list[Size]
    draws: int
    steps: list[PlannedStep] = field(default_factory=list)

    def moved(self, k: int) -> int:
        """Pixels step ``k`` takes in plus puts out over the batch."""
        before = self.inputs if k == 0 else self.steps[k - 1].sizes
        now = self.steps[k].sizes
        return self.draws * sum(_px(a) + _px(b) for a, b in zip(before, now, strict=True))

    @property
    def outputs(self) -> list[Size]:
        return self.steps[-1].sizes if self.steps else self.inputs

    @property
    def footprint(self) -> int:
        """Pixels the render holds at its peak: its largest step plus the outputs' host copies."""
        largest = max((self.moved(k) for k in range(len(self.steps))),
                      default=self.draws * sum(map(_px, self.inputs)))
        return largest + self.draws * sum(map(_px, self.outputs))


def _px(size: Size) -> int:
    return size[0] * size[1]


def _span(value: Any) -> Span:
    if isinstance(value, Uniform):
        return Span((float(value.lo), float(value.hi)), continuous=True)
    if isinstance(value, Choice):
        return Span(tuple(float(v) for v in value.values))
    return Span((float(value),))


def plan_render(preset: Preset, inputs: Sequence[Size], draws: int, *, tail: bool = False,
                overrides: Mapping[str, np.ndarray] | None = None,
                catalog: Catalog = CATALOG) -> RenderPlan:
    """The output size of every active step for every input (``tail``: the preset's output
    resize and crop too). ``overrides`` are per-sample values fed instead of a parameter
    (sweeps), by feed name; they count with their largest value."""
    plan = RenderPlan([(int(h), int(w)) for h, w in inputs], draws)
    sizes = list(plan.inputs)
    for i, step in preset.active_steps():
        canvas = getattr(catalog[step.op], "canvas", SAME)
        values = {}
        for name in canvas.params:
            fed = (overrides or {}).get(feed_name(i, name))
            values[name] = (Span(tuple(float(v) for v in np.unique(fed))) if fed is not None
                            else _span(step.params[name]))
        sizes = [canvas.size(s, values) for s in sizes]
        plan.steps.append(PlannedStep(i, step.op, canvas, values, sizes))
    out = preset.output if tail else None
    if out is not None and out.resize_shorter:
        values = {"resize_shorter": Span((float(out.resize_shorter),))}
        canvas = Shorter("resize_shorter")
        sizes = [canvas.size(s, values) for s in sizes]
        plan.steps.append(PlannedStep(None, "output.resize_shorter", canvas, values, sizes))
    if out is not None and out.crop:
        values = {"crop_h": Span((float(out.crop[0]),)), "crop_w": Span((float(out.crop[1]),))}
        canvas = Fixed("crop_h", "crop_w")
        sizes = [canvas.size(s, values) for s in sizes]
        plan.steps.append(PlannedStep(None, "output.crop", canvas, values, sizes))
    return plan


def check_plan(plan: RenderPlan, budget: Budget, *, held: int = 0) -> None:
    """Raises :class:`BudgetError` for the first step over a budget; ``held`` is what the
    kernel holds besides this render. A step over the render or kernel budget because of the
    size an earlier step made (a colour step after a ``paste``) is blamed on that step."""
    for i, (h, w) in enumerate(plan.inputs):
        if h * w > budget.image_pixels:
            index, op, prefix = plan.steps[0].where() if plan.steps else (None, None, "")
            raise BudgetError(
                f"{prefix}image {i} is {w}x{h} px ({mp(h * w)}); at most "
                f"{mp(budget.image_pixels)} per image is allowed: preview a smaller size",
                index, op, param=None, pixels=h * w, limit=budget.image_pixels)
    for k, step in enumerate(plan.steps):
        before = plan.inputs if k == 0 else plan.steps[k - 1].sizes
        big = max(range(len(step.sizes)), key=lambda j: _px(step.sizes[j]))
        (h, w), (ih, iw) = step.sizes[big], before[big]
        if h * w > budget.image_pixels:
            raise _error(step, f"{step.canvas.describe(step.values)} makes an image of up to "
                         f"{w}x{h} px ({mp(h * w)}) from {iw}x{ih}; at most "
                         f"{mp(budget.image_pixels)} per image is allowed",
                         "preview a smaller size", h * w, budget.image_pixels)
        moved = plan.moved(k)
        if moved > budget.render_pixels:
            blamed = _culprit(plan, k)
            label = ("this step" if blamed is step else f"step {step.index} ({step.op})"
                     if step.index is not None else step.op)
            raise _error(blamed, f"{_made(blamed, step)}; over {len(plan.inputs)} image(s) x "
                         f"{plan.draws} draw(s), {label} takes in and puts out {mp(moved)}, "
                         "and at most "
                         f"{mp(budget.render_pixels)} per step of a render is allowed",
                         "preview fewer images, fewer draws or a smaller size", moved,
                         budget.render_pixels)
    need = plan.footprint
    if held + need > budget.kernel_pixels:
        if plan.steps:
            k = max(range(len(plan.steps)), key=plan.moved)
            blamed = _culprit(plan, k)
            made = f"{_made(blamed, plan.steps[k])}; "
        else:
            blamed, made = None, ""
        raise _error(blamed, f"{made}this render needs {mp(need)} while the kernel already "
                     f"holds {mp(held)} in loaded images and other renders, and at most "
                     f"{mp(budget.kernel_pixels)} per kernel is allowed",
                     "preview fewer images, fewer draws or a smaller size", held + need,
                     budget.kernel_pixels)


def _culprit(plan: RenderPlan, k: int) -> PlannedStep:
    """The last step up to ``k`` that sets the image size (step ``k`` itself if none does)."""
    for j in range(k, -1, -1):
        if plan.steps[j].canvas.params:
            return plan.steps[j]
    return plan.steps[k]


def _made(blamed: PlannedStep, step: PlannedStep) -> str:
    """What made the images as large as ``step``'s output, for a message."""
    big = max(step.sizes, key=_px)
    if blamed.canvas.params:
        return f"{blamed.canvas.describe(blamed.values)} gives images of up to {big[1]}x{big[0]} px"
    return f"the images are up to {big[1]}x{big[0]} px"


def _error(step: PlannedStep | None, what: str, hint: str, pixels: int,
           limit: int) -> BudgetError:
    if step is None:
        return BudgetError(f"{what}: {hint}", None, None, param=None, pixels=pixels,
                           limit=limit)
    index, op, prefix = step.where()
    names = [p for p in step.canvas.params if p in step.values]
    lower = f"lower {' and '.join(names)}, or " if names else ""
    return BudgetError(f"{prefix}{what}: {lower}{hint}", index, op,
                       param=names[0] if names else None, pixels=pixels, limit=limit)


def check_render(owner: Any, preset: Preset, arrays: Sequence[np.ndarray], draws: int, *,
                 tail: bool = False, overrides: Mapping[str, np.ndarray] | None = None,
                 catalog: Catalog = CATALOG, budget: Budget | None = None) -> RenderPlan:
    """Plans the render ``owner`` (an engine) is about to run and checks it against the
    budgets; raises :class:`BudgetError` (a :class:`StepError`) before any DALI work. On
    success the plan's footprint becomes ``owner``'s render in the kernel's ledger."""
    budget = budget or current()
    plan = plan_render(preset, [a.shape[:2] for a in arrays], draws, tail=tail,
                       overrides=overrides, catalog=catalog)
    check_plan(plan, budget, held=LEDGER.held(excluding=owner))
    LEDGER.hold_render(owner, plan.footprint)
    return plan
