"""Where the gallery's cards are made, and how a served page gets its first screen at once.

The render worker hands each rendered row to one cards thread, which encodes its strips while
DALI renders the next rows, then makes the card on the UI thread (:mod:`widgets.ui_thread`).

Under Voilà the cards must wait for their page: a kernel that creates hundreds of image widgets
while the page asks for the widgets' state answers too late (:mod:`widgets.page_ready`). Before
this queue the whole gallery waited, so a page's first picture came only after its widgets had
loaded *and* the first row had rendered. Now the app :meth:`hold`\\ s the queue: the first
screen of rows renders and encodes at once (in a pooled kernel, long before a page claims it),
its cards are kept, and the worker pauses after those rows; :meth:`release` (page ready) makes
the kept cards and lets the rest render. Until then the kernel creates no widget and renders
no more than the first screen.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from dali_gallery.widgets.ui_thread import ErrorSink, on_ui_thread

FIRST_SCREEN_ROWS = 6
"""Rows a held gallery renders before its page is ready: the cards a page shows first."""


class CardQueue:
    """The cards thread, and the cards (and rows) held back until :meth:`release`."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="dali-gallery-cards")
        self._lock = threading.Lock()
        self._pending: list[tuple[Callable[[], None], ErrorSink | None]] = []
        self._released = threading.Event()
        self._released.set()
        self.rows = FIRST_SCREEN_ROWS

    @property
    def held(self) -> bool:
        return not self._released.is_set()

    @property
    def kept(self) -> int:
        """How many cards (and other widget work) wait for :meth:`release`."""
        with self._lock:
            return len(self._pending)

    def hold(self, rows: int = FIRST_SCREEN_ROWS) -> None:
        """Keep the cards back, and pause the render after ``rows`` rows, until released."""
        with self._lock:
            self.rows = rows
            self._released.clear()

    def release(self) -> None:
        """Make the kept cards (in the order they came) and let the render go on. Idempotent."""
        with self._lock:
            pending, self._pending = self._pending, []
            self._released.set()
        for fn, on_error in pending:
            on_ui_thread(fn, on_error)

    def submit(self, fn: Callable[..., None], *args: Any) -> Future[None]:
        """Run ``fn(*args)`` on the cards thread (in submission order)."""
        return self._pool.submit(fn, *args)

    def deliver(self, fn: Callable[[], None], on_error: ErrorSink | None = None) -> None:
        """Widget work for the UI thread: now, or when released."""
        with self._lock:
            if not self._released.is_set():
                self._pending.append((fn, on_error))
                return
        on_ui_thread(fn, on_error)

    def wait_turn(self, row: int, stop: Callable[[], bool]) -> None:
        """Render worker, before its row ``row`` (0-based): wait while held past the first
        screen; returns early once ``stop()`` (an outdated job: checked each 0.2 s)."""
        while row >= self.rows and not self._released.wait(0.2):
            if stop():
                return

    def close(self) -> None:
        """Drop the kept cards, wake a paused worker, and stop the cards thread."""
        with self._lock:
            self._pending = []
            self._released.set()
        self._pool.shutdown(wait=True)
