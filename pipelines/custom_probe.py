"""Registration's trial run of a custom function: does it give an image back, and how fast.

DALI's ``python_function`` takes a float64, 2-D or RGBA result without complaint: the chain then
fails steps later, or shows the wrong thing. And a function that takes seconds per image
freezes the preview with no sign of life. So registration loads the copy the generated modules
will hold, runs it on a small and on a larger uint8 RGB test image with the parameters'
defaults, refuses a wrong result naming the operator, and keeps what a call costs
(:class:`~pipelines.custom_code.CallCost`) for the render's time budget
(:mod:`pipelines.custom_budget`). The generated modules wrap every custom function in
:func:`_checked` too, so one that misbehaves only on some inputs fails with the operator's name.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np
from nvidia.dali.pipeline import do_not_convert

from .custom_code import CallCost, CustomCode
from .params import Param

PROBE_SHAPE = (17, 13, 3)
"""The first test image: small, odd and not square, so a swapped height and width shows."""
TIMING_SHAPE = (192, 256, 3)
"""The second test image, large enough that the cost per pixel is not lost in the call's."""
REPEAT_SECONDS = 0.05
"""A fast function is timed again until this much time is spent (the fastest run counts)."""
REPEATS = 5
_log = logging.getLogger(__name__)


@do_not_convert
def _checked(function, op):
    """A custom operator's function as DALI calls it: a result that is not the
    input's height x width x 3 in uint8 fails here, naming the operator, rather than
    steps later inside DALI. On the GPU a failure is raised when DALI reads the
    result: DALI 2.4 crashes the process when the function raises in its CUDA stream.
    Kept out of DALI's AutoGraph (a chain with a probability is traced through it),
    which would send every call the function makes through its converter. A host
    image is handed over read-only: it may be the preview's fed buffer (no_copy),
    which a write would change for every later render."""

    class Failed:
        """A failed call: DALI raises its error on reading it, outside the stream."""

        def __init__(self, error):
            self.error = error

        def __dlpack__(self, *args, **kwargs):
            raise self.error

    def run(image, *params):
        try:
            if not hasattr(image, "__cuda_array_interface__"):
                image.flags.writeable = False
            out = function(image, *params)
            want = (image.shape[0], image.shape[1], 3)
            if not hasattr(out, "dtype") or not hasattr(out, "shape"):
                got = type(out).__name__
            elif str(out.dtype) != "uint8" or tuple(out.shape) != want:
                got = f"{out.dtype} {tuple(out.shape)}"
            else:
                return out
            raise ValueError(
                f"{op}: {function.__name__} returned {got}; a custom operator must "
                f"return its input's height x width x 3 in uint8, {want} here"
            )
        except Exception as e:
            if not hasattr(image, "__cuda_array_interface__"):
                raise
            return Failed(e)

    return run


@functools.cache
def wrapper_source() -> str:
    """The source of :func:`_checked`, which every generated module with a custom step holds
    (read once: ``inspect`` tokenizes the file at each reading, and every module asks)."""
    return inspect.getsource(_checked).rstrip()


def load_copy(op: str, code: CustomCode) -> Callable[..., Any]:
    """The function as the generated modules define it (its source run with the imports and
    constants copied for it), so that a name left behind fails now, not in the preview."""
    filename = f"<{op}: generated copy of {code.function_name}>"
    text = code.standalone + "\n"
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    namespace: dict[str, Any] = {"__name__": f"dali_gallery_custom_{code.function_name}"}
    try:
        exec(compile(text, filename, "exec"), namespace)
    except Exception as e:  # an import the copy needs is missing here: say which operator
        raise ValueError(f"{op}: the copy of {code.function_name} that the generated code holds "
                         f"does not load ({type(e).__name__}: {e})") from e
    return namespace[code.function_name]


def probe(op: str, function: Callable[..., Any], params: Sequence[Param],
          devices: Iterable[str]) -> CallCost | None:
    """Runs ``function`` on the test images (NumPy; CuPy for a GPU-only operator) and returns
    what a call costs; None when a GPU-only operator cannot run here (no CuPy: this machine
    cannot preview it either). Raises ValueError naming ``op`` for a failure or a bad result."""
    if "cpu" in devices:
        xp: Any = np
        sync: Callable[[], None] = _nothing
    else:
        try:
            import cupy as xp
        except ImportError:
            return None
        sync = xp.cuda.get_current_stream().synchronize
    values = _defaults(xp, params)
    args = ", ".join(f"{p.name}={p.default!r}" for p in params)
    times = []
    for shape, warm_up in ((PROBE_SHAPE, True), (TIMING_SHAPE, False)):
        image = xp.asarray(probe_image(shape))
        label = (f"{shape[0]}x{shape[1]}x3 uint8 RGB test image with the defaults "
                 f"({args or 'no parameters'})")
        times.append(_timed(op, function, image, values, label, sync, warm_up))
    (p_small, p_large), (t_small, t_large) = (_px(PROBE_SHAPE), _px(TIMING_SHAPE)), times
    per_pixel = max(0.0, (t_large - t_small) / (p_large - p_small))
    return CallCost(max(0.0, t_small - per_pixel * p_small), per_pixel)


def _defaults(xp: Any, params: Sequence[Param]) -> list[Any]:
    """The parameters' defaults as DALI hands them to the function: 0-d arrays."""
    return [xp.asarray(p.default, dtype=np.int32 if p.kind == "int" else np.float32)
            for p in params]


_WARMED: set[tuple[str, int]] = set()
_WARM_LOCK = threading.Lock()


def warm_gpu(items: Sequence[tuple[str, Callable[..., Any], Sequence[Param]]]) -> None:
    """Calls each custom function (op, function, params) once on a small CuPy image with its
    parameters' defaults, once per function and process, so that importing CuPy and compiling
    the function's kernels (2.4-3.4 s for the bundled vignette on an H100 with CuPy's kernel
    cache empty) happen beside other work, not inside the first render that runs it. A
    failure is logged; that render then reports it, naming the operator."""
    try:
        import cupy as xp
    except ImportError as e:
        _log.warning("custom operators on the GPU: CuPy cannot be imported (%s)", e)
        return
    for op, function, params in items:
        with _WARM_LOCK:
            if (op, id(function)) in _WARMED:
                continue
            _WARMED.add((op, id(function)))
        try:
            function(xp.asarray(probe_image(PROBE_SHAPE)), *_defaults(xp, params))
            xp.cuda.get_current_stream().synchronize()
        except Exception as e:  # user code: its render reports the error with the step
            _log.warning("%s: warming its CuPy kernels failed (%s: %s)", op,
                         type(e).__name__, e)


def warm_custom(device: str, specs: Sequence[Any]) -> list[str]:
    """On the GPU: import CuPy and compile the kernels of the custom operators among
    ``specs`` in a background thread (:func:`warm_gpu`), and return their names; on the CPU
    (NumPy, nothing to compile) none."""
    specs = [s for s in specs if s.custom and "gpu" in s.devices]
    if device != "gpu" or not specs:
        return []
    items = [(s.name, s.function, s.params) for s in specs]
    threading.Thread(target=warm_gpu, args=(items,), daemon=True,
                     name="dali-gallery-cupy-warm").start()
    return [s.name for s in specs]


def probe_image(shape: tuple[int, int, int]) -> np.ndarray:
    """A uint8 image whose every pixel and channel differs from its neighbours."""
    return (np.arange(np.prod(shape), dtype=np.int64).reshape(shape) * 37 % 251).astype(np.uint8)


def _timed(op: str, function: Callable[..., Any], image: Any, values: list[Any], label: str,
           sync: Callable[[], None], warm_up: bool) -> float:
    """Seconds of the fastest call, after one checked call (not counted when ``warm_up``:
    a first call may import modules or compile)."""
    first = _trial(op, function, image, values, label, sync)
    best = float("inf") if warm_up else first
    spent, runs = first, 1
    while runs < REPEATS and (spent < REPEAT_SECONDS or best == float("inf")):
        t0 = time.perf_counter()
        function(image, *values)
        sync()
        dt = time.perf_counter() - t0
        best, spent, runs = min(best, dt), spent + dt, runs + 1
    return best


def _trial(op: str, function: Callable[..., Any], image: Any, values: list[Any], label: str,
           sync: Callable[[], None]) -> float:
    before = image.copy()
    t0 = time.perf_counter()
    try:
        out = function(image, *values)
        sync()
    except Exception as e:  # the user's code: any exception is a reason to refuse it
        raise ValueError(f"{op}: {function.__name__} failed on a {label} at registration "
                         f"({type(e).__name__}: {e}); a custom operator must work on any RGB "
                         "image, small preview tiles included") from e
    seconds = time.perf_counter() - t0
    if not bool((image == before).all()):
        raise ValueError(f"{op}: {function.__name__} wrote into its input image (on a {label} "
                         "at registration); the input is DALI's buffer, the preview's own "
                         "images for a first step: work on a copy (out = image.copy())")
    returned = functools.wraps(function)(lambda *_: out)
    host = np.empty(tuple(image.shape), np.uint8)  # a host image: the check raises at once
    try:
        _checked(returned, op)(host, *values)
    except ValueError as e:
        raise ValueError(f"{e} (on a {label} at registration)") from None
    return seconds


def _px(shape: tuple[int, int, int]) -> int:
    return shape[0] * shape[1]


def _nothing() -> None:
    return None
