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

Lean stacks are also cheaper to take: DALI's ``extract_stack`` reads every frame's source line,
so every file of the stack is then fully cached and checked on disk again
(``linecache.checkcache``, a ``stat``) for every operator, through autograph's deep stacks: 1.7 s
of a 5.8 s cold gallery on the 2-core CPU machine. Here the frames are summarised without
reading their lines (files never read stay lazily cached), the same frames are kept, and only
the kept ones' lines are read (by DALI, when it stores them). A file whose lines were read (the
generated module's, once DALI stored a line of it) is checked on disk once per pipeline, not
once per operator: each ``stat`` lets another thread take the GIL, and the render thread then
waited for it again, 83 of its 536 samples of a cold GPU gallery (H100, CuPy importing beside
it).
"""

from __future__ import annotations

import collections
import functools
import itertools
import linecache
import os
import sys
import threading
import traceback
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

        def extract_stack(start_frame: int = 0, end_frame: int | None = None) -> Any:
            if not getattr(_LOCAL, "depth", 0):
                return real(start_frame, end_frame)
            frames = _frames(dali_trace, start_frame, end_frame)  # where ``real`` would run
            return [f for f in frames if not inside(f.filename)] or list(frames)[-1:]

        extract_stack.dali_gallery_lean = True  # type: ignore[attr-defined]
        dali_trace.extract_stack = extract_stack


def _frames(dali_trace: Any, start_frame: int, end_frame: int | None) -> list[Any]:
    """The frames DALI's ``extract_stack(start_frame, end_frame)`` returns when called where
    this is (the same range of the same stack, autograph's frames filtered and mapped back to
    the user's code as DALI does), without reading any source line."""
    limit = dali_trace.get_stack_depth() - start_frame  # counted from this frame, as DALI's
    end = end_frame - start_frame if end_frame is not None else -1
    frames = _summary(traceback.walk_stack(sys._getframe()), limit)
    frames.reverse()
    frames = frames[:end]
    frame_map, frame_filter = dali_trace.get_frame_map(), dali_trace.get_frame_filter()
    if not frame_map and not frame_filter:
        return frames
    return dali_trace._filter_autograph_frames(frames, frame_map, frame_filter)


def _summary(walk: Iterator[tuple[Any, int]], limit: int) -> traceback.StackSummary:
    """``traceback.StackSummary.extract(walk, limit=limit, lookup_lines=False)``, which checks
    every file of the stack on disk (``linecache.checkcache``) at every call, with each file
    checked once per :func:`lean_traces` block instead."""
    frames = itertools.islice(walk, limit) if limit >= 0 else \
        iter(collections.deque(walk, maxlen=-limit))
    summary = traceback.StackSummary()
    checked: set[str] = _LOCAL.checked
    for frame, lineno in frames:
        filename = frame.f_code.co_filename
        linecache.lazycache(filename, frame.f_globals)
        if filename not in checked:
            checked.add(filename)
            linecache.checkcache(filename)
        summary.append(traceback.FrameSummary(filename, lineno, frame.f_code.co_name,
                                              lookup_line=False))
    return summary


@contextmanager
def lean_traces() -> Iterator[None]:
    """Operators traced in this thread inside the block record no DALI-internal frames."""
    _install()
    depth = getattr(_LOCAL, "depth", 0)
    if not depth:
        _LOCAL.checked = set()  # files checked on disk in this block (:func:`_summary`)
    _LOCAL.depth = depth + 1
    try:
        yield
    finally:
        _LOCAL.depth -= 1
