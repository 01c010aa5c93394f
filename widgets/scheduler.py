"""Render scheduling for live previews: one render in flight at most, the newest request wins.

A slider drag sends values faster than DALI renders. Requests go into a single slot that a new
request overwrites (the overwritten one is *superseded*: never rendered), and one worker thread
renders whatever is in the slot when it is free. The kernel's main thread only fills the slot,
so it keeps answering widget messages while DALI works.

A finished render is delivered with ``latest=False`` when a newer request arrived meanwhile
(its result is *stale*); the receiver decides what to show (the builder shows stale images,
which are newer than what is on screen, but never a stale error). Low-priority work
(operator thumbnails) runs only while no render is waiting. ``sync=True`` runs everything
inline in the caller's thread, for deterministic use without threads.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .ui_thread import UiQueue

Req = TypeVar("Req")
Res = TypeVar("Res")
log = logging.getLogger(__name__)


@dataclass
class Outcome(Generic[Req, Res]):
    """What one render produced: a result or the exception it raised, never both."""

    version: int
    request: Req
    result: Res | None = None
    error: Exception | None = None
    latest: bool = True
    ms: float = 0.0


@dataclass
class Stats:
    """Counters for tests and the benchmark."""

    submitted: int = 0
    rendered: int = 0
    superseded: int = 0
    stale: int = 0
    failed: int = 0
    background: int = 0
    versions: list[int] = field(default_factory=list)
    worker: str = ""
    """Name of the thread the last render ran on."""


class Scheduler(Generic[Req, Res]):
    """Runs ``work(request)`` for the newest request and hands the outcome to ``deliver``.

    ``on_idle`` runs after a delivery when no request is waiting (cheap follow-up work such
    as refreshing the exported code); ``on_error`` receives exceptions raised by ``deliver``,
    ``on_idle`` or background tasks (bugs), which must not kill the worker. ``ui`` (e.g.
    :data:`widgets.ui_thread.UI`) carries ``deliver`` and ``on_idle`` to the thread that may
    touch widgets; ``wait_idle`` then also waits for, and on the main thread applies, them.
    """

    def __init__(self, work: Callable[[Req], Res],
                 deliver: Callable[[Outcome[Req, Res]], None], *,
                 on_idle: Callable[[], None] | None = None,
                 on_error: Callable[[Exception], None] | None = None,
                 sync: bool = False, name: str = "dali-gallery-render",
                 ui: UiQueue | None = None) -> None:
        self._ui = ui
        self._work = work
        self._deliver = deliver
        self._on_idle = on_idle
        self._on_error = on_error or _log_error
        self.sync = sync
        self.stats = Stats()
        self._cond = threading.Condition()
        self._pending: tuple[int, Req] | None = None
        self._background: deque[Callable[[], None]] = deque()
        self._busy = False
        self._version = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self._name = name

    # ---- public -------------------------------------------------------------------------------

    @property
    def version(self) -> int:
        """Version of the newest request submitted."""
        return self._version

    def submit(self, request: Req) -> int:
        """Queue ``request`` in place of any request not started yet; returns its version."""
        with self._cond:
            if self._closed:
                raise RuntimeError("the render scheduler is closed")
            self._version += 1
            version = self._version
            self.stats.submitted += 1
            if self._pending is not None:
                self.stats.superseded += 1
            self._pending = (version, request)
            if not self.sync:
                self._ensure_thread()
                self._cond.notify_all()
                return version
        self._drain()
        return version

    def background(self, task: Callable[[], None]) -> None:
        """Run ``task`` when no render is waiting (in order, one at a time)."""
        with self._cond:
            if self._closed:
                return
            self._background.append(task)
            if not self.sync:
                self._ensure_thread()
                self._cond.notify_all()
                return
        self._drain()

    def clear_background(self) -> None:
        """Drop background tasks not started yet (e.g. thumbnails of replaced images)."""
        with self._cond:
            self._background.clear()

    def idle(self, background: bool = False) -> bool:
        with self._cond:
            return self._idle(background)

    def wait_idle(self, timeout: float | None = 30.0, background: bool = False) -> bool:
        """Block until nothing is waiting or running (background tasks too when asked);
        False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._ui is not None:
                self._ui.drain()  # on the main thread, apply what the worker handed over
            with self._cond:
                ui_pending = self._ui is not None and self._ui.pending()
                if self._idle(background) and not ui_pending:
                    return True
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                if ui_pending:  # look again soon: nothing notifies when it has been applied
                    left = 0.02 if left is None else min(0.02, left)
                self._cond.wait(left)

    def close(self, timeout: float = 10.0) -> None:
        """Stop the worker after its current task; pending requests are dropped."""
        with self._cond:
            self._closed = True
            self._pending = None
            self._background.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    # ---- internals ----------------------------------------------------------------------------

    def _idle(self, background: bool) -> bool:
        return (not self._busy and self._pending is None
                and (not background or not self._background))

    def _ensure_thread(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while (self._pending is None and not self._background
                       and not self._closed):
                    self._cond.wait()
                if self._closed:
                    return
                job = self._take()
            self._run(job)

    def _drain(self) -> None:
        """Sync mode: run everything queued, in the caller's thread."""
        while True:
            with self._cond:
                if self._busy or (self._pending is None and not self._background):
                    return
                job = self._take()
            self._run(job)

    def _take(self) -> tuple[int, Any] | Callable[[], None]:
        self._busy = True
        if self._pending is not None:
            job, self._pending = self._pending, None
            return job
        return self._background.popleft()

    def _run(self, job: tuple[int, Any] | Callable[[], None]) -> None:
        try:
            if isinstance(job, tuple):
                self._render(*job)
            else:
                self.stats.background += 1
                self._guard(job)
        finally:
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def _render(self, version: int, request: Req) -> None:
        t0 = time.perf_counter()
        self.stats.worker = threading.current_thread().name
        outcome: Outcome[Req, Res] = Outcome(version, request)
        try:
            outcome.result = self._work(request)
        except Exception as e:  # a failed render is an outcome to show, not a crash
            outcome.error = e
            self.stats.failed += 1
        outcome.ms = (time.perf_counter() - t0) * 1000
        with self._cond:
            outcome.latest = self._pending is None and version == self._version
        self.stats.rendered += 1
        self.stats.versions.append(version)
        if not outcome.latest:
            self.stats.stale += 1
        self._call(lambda: self._deliver(outcome))
        with self._cond:
            quiet = self._pending is None
        if quiet and self._on_idle is not None:
            self._call(self._on_idle)

    def _call(self, fn: Callable[[], None]) -> None:
        """A callback that touches widgets: through the UI queue when there is one."""
        if self._ui is None:
            self._guard(fn)
        else:
            self._ui.call(fn, self._on_error)

    def _guard(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except Exception as e:  # a bug in a callback must not stop later renders
            self._on_error(e)


def _log_error(e: Exception) -> None:
    log.error("dali-gallery widget callback failed", exc_info=e)
