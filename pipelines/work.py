"""What an operator costs per pixel it writes, in taps: declared once per operator in the catalog.

The pixel budgets (:mod:`pipelines.budget`) bound how large images get, not how long a step
works on them: a Gaussian blur of sigma 28 reads 338 pixels for every pixel it writes (two
passes of a 169-tap window): 4 G taps on one 12 MP image, about 3 s on two cores, and a
chain of such steps over a batch would hold a served kernel for minutes. Each catalog entry's
``work`` field says what one output pixel costs, in taps (one input pixel read and weighed),
as a function of its parameters: :data:`PASS_TAPS` by default, more for filters whose window
grows with a parameter. Measured on the 2-core CPU machine with DALI's two threads (real
renders of 2 images of 1500x2000): a tap of a Gaussian blur or a Laplacian costs 0.6-1.9 ns,
and one pass of a colour, noise, warp, resize or CLAHE step 3-19 ns a pixel.
:mod:`pipelines.render_budget` multiplies it by the pixels each step writes, sums the steps
and refuses a render over the device's work budget (:data:`pipelines.budget.RENDER_WORK`)
before DALI runs, naming the step, the value and the largest value that would fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from .canvas import Values

PASS_TAPS = 16.0
"""What one pass over the pixels costs, in taps of a wide filter (3-19 ns against ~1 ns)."""


@dataclass(frozen=True)
class Work:
    """One pass over the pixels (the default): colour, noise, warps, crops, small kernels."""

    def taps(self, values: Values) -> float:
        """Taps per output pixel, an upper bound over every value the spans in ``values``
        can take."""
        return PASS_TAPS

    @property
    def params(self) -> tuple[str, ...]:
        """The parameters the work depends on (named in budget errors)."""
        return ()


ONE_PASS = Work()


@dataclass(frozen=True)
class Taps(Work):
    """Taps per output pixel from the parameters ``names`` (in that order), through
    ``per_pixel``, which never decreases when any of them grows: the largest value of each
    span bounds the work (a contract test checks every declaration at its bounds)."""

    names: tuple[str, ...]
    per_pixel: Callable[..., float]

    def taps(self, values: Values) -> float:
        return max(PASS_TAPS, float(self.per_pixel(*(values[n].hi for n in self.names))))

    @property
    def params(self) -> tuple[str, ...]:
        return self.names


def passes(n: float) -> float:
    """``n`` passes over the pixels, one after another (a policy's ``n`` operations)."""
    return PASS_TAPS * float(n)


def gaussian_taps(sigma: float) -> float:
    """DALI's window for a sigma is ``2 * ceil(3 * sigma) + 1`` (its documentation), applied
    once along each of the two axes."""
    return 2.0 * (2 * math.ceil(3 * sigma) + 1)


def laplacian_taps(window: float) -> float:
    """Each of the two second derivatives is a ``window``-tap derivative along its axis and
    a ``window``-tap smoothing along the other (DALI's default ``smoothing_size``)."""
    return 4.0 * window


def square_window_taps(window: float) -> float:
    """A median over a square window: every pixel of it (measured on an H100: the time grows
    with the window's area, 0.14 ns a tap at windows 15 and 31)."""
    return float(window) * float(window)


def morphology_taps(mask: float, iterations: float) -> float:
    """A rectangular dilation or erosion is separable (a row pass, then a column pass), once
    per iteration (measured on an H100: the time grows with the iterations, 0.02 ns a tap)."""
    return 2.0 * float(mask) * float(iterations)
