"""Pixel budgets: what one image, one render and one kernel may hold, checked before DALI runs.

A chain of four ``paste`` steps at ratio 3 turns a 1024 px image into a 83 k px one; six small
PNG files can declare 150 MP each. Neither may reach DALI: every render is planned and checked
first (:mod:`pipelines.render_budget`), and loading images is checked against the kernel's
budget before decoding (:func:`pipelines.image_decode.decode`). This module holds the budgets
and the kernel's ledger of what it holds; it imports no DALI, so the CLI can add its flags
cheaply.

The budgets (pixels are W x H; an RGB uint8 pixel is 3 bytes):

* :data:`IMAGE_PIXELS` per image: the largest image decoded, and the largest any step may take
  in or put out.
* :data:`RENDER_PIXELS` per render: for every step, the pixels it takes in plus those it puts
  out, summed over the batch (images x draws). DALI's executor reuses its buffers from step to
  step, so a render's memory follows its largest step, not the length of the chain (measured:
  12 same-size steps cost what 4 do).
* :data:`KERNEL_PIXELS` per kernel: decoded images still alive anywhere in the process plus the
  largest step and the outputs of each engine's latest render.

* :data:`RENDER_WORK` per render on the CPU: what its steps cost in taps (:mod:`pipelines.work`:
  pixels written times each one's cost), summed over the steps and the batch; the GPU
  allows :data:`GPU_WORK_FACTOR` times as much. Pixels alone do not bound a render's time: a
  wide blur reads hundreds of pixels for each one it writes.

They are module constants; an app or the CLI passes others with :func:`configure` (see
:func:`add_arguments` / :func:`from_args` for command-line flags).
"""

from __future__ import annotations

import argparse
import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

IMAGE_PIXELS = 160_000_000
"""Largest image (W x H) decoded or passed between steps: 160 MP keeps 100-150 MP camera files
(480 MB as RGB) usable while refusing decompression bombs."""
RENDER_PIXELS = 256_000_000
"""Largest number of pixels one step of a render takes in plus puts out, over the whole batch
(768 MB as RGB uint8; a render's peak memory measured at 2-3 times its largest step)."""
KERNEL_PIXELS = 512_000_000
"""Largest number of pixels one kernel holds in decoded images plus its engines' latest
renders (1.5 GB as RGB uint8)."""
RENDER_WORK = 8_000_000_000
"""Taps one render may cost on the CPU (:mod:`pipelines.work`). Measured on the 2-core CPU
machine with DALI's two threads: 0.06-1.3 ns a tap (a Gaussian blur 0.6-0.7, a pass of a
colour or warp step 0.1-1.1), so a render at the limit takes 0.5-10 s there."""
GPU_WORK_FACTOR = 8
"""How many times :data:`RENDER_WORK` a render may cost on the GPU. Set by the GPU's slowest
tap, the median's (0.14 ns on an H100; a blur's 0.003-0.03, a pass 0.03, a morphology mask's
0.02): a median at the limit takes 9 s there, any other step under 2 s."""


@dataclass(frozen=True)
class Budget:
    """The three pixel budgets and the work budget; see the module docstring for what each
    one bounds."""

    image_pixels: int = IMAGE_PIXELS
    render_pixels: int = RENDER_PIXELS
    kernel_pixels: int = KERNEL_PIXELS
    render_work: int = RENDER_WORK

    def __post_init__(self) -> None:
        for name in ("image_pixels", "render_pixels", "kernel_pixels", "render_work"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                unit = "taps" if name == "render_work" else "pixels"
                raise ValueError(f"budget {name}={value!r} is not allowed; expected a positive "
                                 f"whole number of {unit}")

    def work_limit(self, device: str) -> int:
        """Taps one render may cost on ``device`` ("cpu" or "gpu")."""
        return self.render_work * (GPU_WORK_FACTOR if device == "gpu" else 1)


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


_FLAGS = {
    "image": ("--max-image-mp", "image_pixels", "largest image decoded or made by a step"),
    "render": ("--max-render-mp", "render_pixels",
               "pixels one step of a render takes in + puts out"),
    "kernel": ("--max-kernel-mp", "kernel_pixels", "pixels held by loaded images and renders"),
    "work": ("--max-render-gtaps", "render_work",
             f"billions of taps one render may cost on the CPU (x{GPU_WORK_FACTOR} on the GPU)"),
}
_SCALE = {"render_work": 1e9}
"""Flags in other units than megapixels (the work budget: billions of taps)."""


def add_arguments(parser: argparse.ArgumentParser,
                  kinds: tuple[str, ...] = ("image", "render", "kernel", "work")) -> None:
    """``--max-image-mp``, ``--max-render-mp``, ``--max-kernel-mp`` (megapixels) and
    ``--max-render-gtaps`` (billions of taps; those of ``kinds``), defaulting to the module
    constants."""
    group = parser.add_argument_group("budgets (1 MP = 10^6 pixels; 1 G = 10^9 taps)")
    for kind in kinds:
        flag, name, what = _FLAGS[kind]
        default = getattr(Budget(), name) / _SCALE.get(name, 1e6)
        group.add_argument(flag, type=float, default=default,
                           help=f"{what} (default: {default:g})")


def from_args(args: argparse.Namespace) -> Budget:
    """The :class:`Budget` the flags of :func:`add_arguments` ask for (defaults for flags not
    added); ValueError names a bad value."""
    values = {}
    for flag, name, _ in _FLAGS.values():
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if value is None:
            continue
        if not 0 < value < float("inf"):  # also refuses NaN
            unit = "billions of taps" if name in _SCALE else "megapixels"
            raise ValueError(f"{flag} {value!r} is not allowed; expected a positive number "
                             f"of {unit}")
        values[name] = max(1, round(value * _SCALE.get(name, 1e6)))
    return Budget(**values)


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
