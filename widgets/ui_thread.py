"""Run widget updates from worker threads safely in a Jupyter kernel.

When a page (Voilà, Lab) connects, the widget manager asks the kernel for the state of every
widget; the kernel answers on its main thread by walking the registry of widgets. A worker
thread that creates or changes widgets at the same time can leave the page with a model it
never learns about ("widget model not found": seen with six pages opened at once, one came up
blank). So widget changes made for a worker are queued and applied on the kernel's main
thread, in order, between two messages. Outside a kernel (scripts, tests, benches), and on
the main thread itself, they run right away.

Code that blocks the main thread while waiting for workers (``wait_idle``) calls ``drain`` so
the queued changes still happen.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

_log = logging.getLogger(__name__)
ErrorSink = Callable[[Exception], None]


def kernel_loop() -> Any:
    """The running kernel's io_loop (main thread), or None outside a kernel."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    return getattr(kernel, "io_loop", None)


def _run(fn: Callable[[], None], on_error: ErrorSink | None) -> None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - reported to the page, not raised into tornado
        _log.exception("widget update failed")
        if on_error is not None:
            on_error(e)


class UiQueue:
    """Widget changes waiting for the kernel's main thread."""

    def __init__(self) -> None:
        self._items: deque[tuple[Callable[[], None], ErrorSink | None]] = deque()
        self._lock = threading.Lock()
        self._scheduled = False

    def call(self, fn: Callable[[], None], on_error: ErrorSink | None = None) -> None:
        """Run ``fn`` on the kernel's main thread (soon, in order), or now without a kernel.
        An exception in ``fn`` is logged and passed to ``on_error``, never lost."""
        loop = kernel_loop()
        if loop is None or threading.current_thread() is threading.main_thread():
            self.drain()  # keep the order: earlier queued changes first
            _run(fn, on_error)
            return
        with self._lock:
            self._items.append((fn, on_error))
            schedule, self._scheduled = not self._scheduled, True
        if schedule:
            loop.add_callback(self.drain)

    def drain(self) -> None:
        """Apply every queued change (main thread only; elsewhere a no-op)."""
        if threading.current_thread() is not threading.main_thread():
            return
        while True:
            with self._lock:
                if not self._items:
                    self._scheduled = False
                    return
                fn, on_error = self._items.popleft()
            _run(fn, on_error)

    def pending(self) -> bool:
        with self._lock:
            return bool(self._items)


UI = UiQueue()
"""The kernel's one queue (there is one main thread)."""


def on_ui_thread(fn: Callable[[], None], on_error: ErrorSink | None = None) -> None:
    """Call ``fn`` on the kernel's main thread (soon, in order), or now without a kernel."""
    UI.call(fn, on_error)
