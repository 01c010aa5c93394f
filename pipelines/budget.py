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


_FLAGS = {
    "image": ("--max-image-mp", "image_pixels", "largest image decoded or made by a step"),
    "render": ("--max-render-mp", "render_pixels",
               "pixels one step of a render takes in + puts out"),
    "kernel": ("--max-kernel-mp", "kernel_pixels", "pixels held by loaded images and renders"),
}


def add_arguments(parser: argparse.ArgumentParser,
                  kinds: tuple[str, ...] = ("image", "render", "kernel")) -> None:
    """``--max-image-mp``, ``--max-render-mp`` and ``--max-kernel-mp`` (megapixels; those of
    ``kinds``), defaulting to the module constants."""
    group = parser.add_argument_group("pixel budgets (megapixels, 1 MP = 10^6 pixels)")
    for kind in kinds:
        flag, name, what = _FLAGS[kind]
        default = getattr(Budget(), name)
        group.add_argument(flag, type=float, default=default / 1e6,
                           help=f"{what} (default: {default / 1e6:g})")


def from_args(args: argparse.Namespace) -> Budget:
    """The :class:`Budget` the flags of :func:`add_arguments` ask for (defaults for flags not
    added); ValueError names a bad value."""
    values = {}
    for flag, name, _ in _FLAGS.values():
        mp_value = getattr(args, flag[2:].replace("-", "_"), None)
        if mp_value is None:
            continue
        if not 0 < mp_value < float("inf"):  # also refuses NaN
            raise ValueError(f"{flag} {mp_value!r} is not allowed; expected a positive number "
                             "of megapixels")
        values[name] = max(1, round(mp_value * 1e6))
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
