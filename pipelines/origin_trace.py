"""Lean origin traces for the preview's pipelines.

DALI records, on every operator it traces, the Python stack that made it (four lists: file
names, line numbers, function names and source lines), serializes them with the pipeline and
quotes them in run-time errors. A policy's operators are made deep inside DALI's ``auto_aug``
code, so their stacks are mostly DALI's own frames: a RandAugment preview pipeline
serialized to 1 MB (~3 KB an operator, 337 operators), and loading it from the pipeline cache
parsed all of it (23 ms, against 8 ms without any trace, on 2 cores; 30-77 ms on an H200 host).

While :func:`lean_traces` is active (in the thread that defines a preview pipeline), an
operator's recorded stack keeps only the frames outside the DALI package and this one: the
generated module's, which is what a step error reads (:mod:`.step_error`: the module's line that
made the failing operator); an operator the preview makes itself keeps its last frame. Pipelines
defined elsewhere in the process (a user's own, in the same kernel) keep DALI's full traces.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

LAYOUT = "origin-trace:module-frames"
"""What a cached graph records besides its operators (part of every pipeline cache key)."""

_LOCAL = threading.local()
_LOCK = threading.Lock()


def _roots() -> tuple[str, str]:
    """The DALI package's folder and this one's (the preview's own frames)."""
    import nvidia.dali

    return tuple(os.path.dirname(os.path.abspath(m)) + os.sep  # type: ignore[return-value]
                 for m in (nvidia.dali.__file__, __file__))


def _install() -> None:
    """Wrap DALI's stack extraction once per process (a no-op outside :func:`lean_traces`)."""
    from nvidia.dali._utils import dali_trace

    with _LOCK:
        real = dali_trace.extract_stack
        if getattr(real, "dali_gallery_lean", False):
            return
        roots = _roots()

        @functools.lru_cache(maxsize=4096)
        def inside(filename: str) -> bool:
            """In DALI or in this package (each generated module is a new file name)."""
            return os.path.abspath(filename).startswith(roots)

        def extract_stack(*args: Any, **kwargs: Any) -> Any:
            frames = real(*args, **kwargs)
            if not getattr(_LOCAL, "depth", 0):
                return frames
            return [f for f in frames if not inside(f.filename)] or list(frames)[-1:]

        extract_stack.dali_gallery_lean = True  # type: ignore[attr-defined]
        dali_trace.extract_stack = extract_stack


@contextmanager
def lean_traces() -> Iterator[None]:
    """Operators traced in this thread inside the block record no DALI-internal frames."""
    _install()
    _LOCAL.depth = getattr(_LOCAL, "depth", 0) + 1
    try:
        yield
    finally:
        _LOCAL.depth -= 1
