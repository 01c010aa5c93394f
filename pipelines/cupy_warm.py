"""CuPy and cupyx imported ahead of the first GPU gallery.

Custom operators run on the GPU on CuPy arrays (:mod:`.custom`), and the first call of one in a
process pays for CuPy itself: its import (~0.6 s on an H200 host, NVRTC loaded) and ``cupyx``,
which it imports at its first elementwise kernel (~0.45 s), all Python holding the GIL. Beside
the cold gallery's render that cost ~0.6 s of its ~2.6-2.9 s. :func:`start` (called by
:func:`.trace_ahead.prestart`, as a kernel starts) imports both in a thread from the start,
beside the kernel's own imports, so that the gallery's warm-up of each operator's kernels
(:func:`.custom_probe.warm_custom`) only compiles or loads those kernels. It makes no CUDA call:
a first one there (creating the context, GIL held) slowed the kernel's imports by ~0.4 s, and
DALI creates the context anyway.

This module imports nothing heavy: ``prestart`` runs before the kernel imports DALI.
"""

from __future__ import annotations

import threading
import time

_STATE_START: dict[str, object] = {"thread": None, "report": None}
"""A process before :func:`start`: no thread, nothing to report."""
_STATE: dict[str, object] = dict(_STATE_START)
_LOCK = threading.Lock()


def start(device: str = "auto") -> bool:
    """Start the warm-up thread, once a process; not for ``device="cpu"`` (previews on the CPU
    hand custom operators NumPy arrays). True when started now."""
    if device == "cpu":
        return False
    with _LOCK:
        if _STATE["thread"] is not None:
            return False
        thread = threading.Thread(target=_warm, daemon=True, name="dali-gallery-cupy-ahead")
        _STATE["thread"] = thread
    thread.start()
    return True


def report(timeout: float = 0.0) -> dict[str, object] | None:
    """What the warm-up did (``{"s": seconds}`` or ``{"skipped": why}``), after
    waiting up to ``timeout`` for it; None when it was not started or is still running."""
    thread = _STATE["thread"]
    if not isinstance(thread, threading.Thread):
        return None
    thread.join(timeout)
    found = _STATE["report"]
    return dict(found) if isinstance(found, dict) else None


def _warm() -> None:
    t0 = time.perf_counter()
    try:
        import cupy  # noqa: F401
        import cupyx  # noqa: F401  (what CuPy imports at its first elementwise kernel)
    except ImportError as e:  # no CuPy: GPU custom operators say so when added or rendered
        _STATE["report"] = {"skipped": f"CuPy cannot be imported ({e})"}
        return
    _STATE["report"] = {"s": round(time.perf_counter() - t0, 3)}
