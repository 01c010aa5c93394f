"""Where the gallery's cards are made, and how a served page gets its first screen at once.

The render worker hands each rendered row to one cards thread, which encodes its strips while
DALI renders the next rows, then makes the card on the UI thread (:mod:`widgets.ui_thread`).

Under Voilà the cards must wait for their page: a kernel that creates hundreds of image widgets
while the page asks for the widgets' state answers too late (:mod:`widgets.page_ready`). Before
this queue the whole gallery waited, so a page's first picture came only after its widgets had
loaded *and* the first row had rendered. Now the app :meth:`hold`\\ s the queue: the first
screen of rows renders and encodes at once, the worker pauses after those rows, their cards are
kept, and :meth:`release` (page ready) makes them and lets the rest render (the app holds a
kernel started for its page at no rows: its page is loading, it renders nothing). A pooled
kernel has no page yet while it renders its first screen, so it makes those cards at once
(``hold(keep=False)``): they are among the widgets its page asks for when it loads, and the
first pictures come with the page instead of a round trip after it; from the moment a page
claims it, it keeps any card still to come back like any other (:meth:`keep`).

The first screen is measured in CSS pixels of cards (:data:`FIRST_SCREEN_PX`), not rows: a
card of six images is ~850 px tall, one of a single image ~220 px. And a page whose first
screen came with its widgets is still making their views and pictures when the kernel hears
it has them: :meth:`release` can let the render go on only after a pause
(:data:`PAGE_PAINT_S`), since rendering the next rows then takes the cores the browser needs
when both share a machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from dali_gallery.widgets.ui_thread import ErrorSink, on_ui_thread

FIRST_SCREEN_PX = 1200
"""CSS pixels of cards a held gallery makes before its page is ready: more than a window
shows below the app's header and controls (the first card starts ~390 px down a 1000 px
window with the Images section collapsed, ~730 px with it open). Six rows
(~5,000 px with six images) made the pooled page's state 2.75 MB; with ~1,200 px and the
pause below, first visits on the 2-core machine showed their first picture 0.2-0.5 s sooner."""
PAGE_PAINT_S = 0.5
"""How long a pooled kernel's render waits, once its page has the widgets, before the rows
after the first screen: the page is making the views and pictures of that screen then."""


class CardQueue:
    """The cards thread, and the cards (and rows) held back until :meth:`release`."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="dali-gallery-cards")
        self._lock = threading.Lock()
        self._pending: list[tuple[Callable[[], None], ErrorSink | None]] = []
        self._released = threading.Event()
        self._released.set()
        self._keep = True
        self._on_ready: Callable[[], None] | None = None
        self.screen_px = FIRST_SCREEN_PX
        self._resume_at = 0.0
        self._waits: list[tuple[float, float]] = []  # perf_counter spans wait_turn blocked

    @property
    def held(self) -> bool:
        return not self._released.is_set()

    @property
    def kept(self) -> int:
        """How many cards (and other widget work) wait for :meth:`release`."""
        with self._lock:
            return len(self._pending)

    def hold(self, screen_px: int = FIRST_SCREEN_PX, *, keep: bool = True,
             on_ready: Callable[[], None] | None = None) -> None:
        """Pause the render once its rows fill ``screen_px`` CSS pixels (0: before the first)
        until released, and keep the cards back too unless ``keep`` is False (no page is
        loading yet: see the module). ``on_ready`` runs on the UI thread once the first screen
        is done (the render paused or finished), after the cards delivered before it."""
        with self._lock:
            self.screen_px = screen_px
            self._resume_at = 0.0
            self._waits = []
            self._keep = keep
            self._on_ready = on_ready
            self._released.clear()

    def keep(self) -> None:
        """From now until released, keep the cards back (a page is loading)."""
        with self._lock:
            self._keep = True

    def release(self, pause_s: float = 0.0) -> None:
        """Make the kept cards (in the order they came) and let the render go on, after
        ``pause_s`` seconds (see the module). Idempotent: a later call changes nothing."""
        with self._lock:
            pending, self._pending = self._pending, []
            if not self._released.is_set():
                self._resume_at = time.monotonic() + pause_s
            self._released.set()
        for fn, on_error in pending:
            on_ui_thread(fn, on_error)

    def submit(self, fn: Callable[..., None], *args: Any) -> Future[None]:
        """Run ``fn(*args)`` on the cards thread (in submission order)."""
        return self._pool.submit(fn, *args)

    def deliver(self, fn: Callable[[], None], on_error: ErrorSink | None = None) -> None:
        """Widget work for the UI thread: now, or when released."""
        with self._lock:
            if self._keep and not self._released.is_set():
                self._pending.append((fn, on_error))
                return
        on_ui_thread(fn, on_error)

    def finish(self, fn: Callable[[], None], on_error: ErrorSink | None = None) -> None:
        """The job's last widget work (render worker, after its cards): delivered as any, and
        the first screen is done if the render ended before pausing."""
        self.deliver(fn, on_error)
        self._first_screen_done()

    def wait_turn(self, row: int, stop: Callable[[], bool], row_px: int) -> None:
        """Render worker, before its row ``row`` (0-based) of cards ``row_px`` CSS pixels
        tall: wait while held once the rows before it fill the first screen, and until the
        release's pause is over; returns early once ``stop()`` (an outdated job: checked each
        0.2 s)."""
        if row * max(row_px, 1) < self.screen_px:
            return
        if self._released.is_set() and self._resume_at <= time.monotonic():
            return  # nothing to wait for (not held, or the pause is over)
        if not self._released.is_set():
            self._first_screen_done()
        start = time.perf_counter()
        try:
            while not self._released.wait(0.2):
                if stop():
                    return
            while (left := self._resume_at - time.monotonic()) > 0 and not stop():
                time.sleep(min(left, 0.2))
        finally:
            with self._lock:
                self._waits.append((start, time.perf_counter()))

    def waited_s(self, since: float) -> float:
        """Seconds the render has waited in :meth:`wait_turn` (held for its page, or in the
        release's pause) since ``since`` (a ``time.perf_counter()``), since the last hold."""
        with self._lock:
            return sum(max(0.0, end - max(start, since)) for start, end in self._waits)

    def busy_s(self, since: float) -> float:
        """Seconds since ``since`` (``time.perf_counter()``) not spent waiting in
        :meth:`wait_turn`: how long a gallery took, not how long its page took to claim it."""
        return time.perf_counter() - since - self.waited_s(since)

    def _first_screen_done(self) -> None:
        """Hand ``on_ready`` (once) to the cards thread, which delivers it after the cards
        it is still encoding."""
        with self._lock:
            ready, self._on_ready = self._on_ready, None
        if ready is not None:
            self._pool.submit(self.deliver, ready)

    def close(self) -> None:
        """Drop the kept cards, wake a paused worker, and stop the cards thread."""
        with self._lock:
            self._on_ready = None
            self._pending = []
            self._resume_at = 0.0
            self._released.set()
        self._pool.shutdown(wait=True)
