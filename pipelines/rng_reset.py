"""Putting a preview pipeline's random state back to its first draw while nobody waits.

A render shows the same draw until the seed changes: the engine restores the RNG state
checkpointed after the build before each run. The restore (DALI's
``RestoreFromSerializedCheckpoint``) took 0.1-0.2 ms of a 2.7 ms render of 8 images of 256x256 on
an H100 host, in the render's own time. Here it runs on a worker thread right after the render
that used the state up: a person's edits come tens of milliseconds apart, so the next render
finds it done and only checks that it finished. A render that will be continued
(``advance=True`` next, as the distribution view's stream) keeps its state instead.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

_log = logging.getLogger(__name__)


class Resettable(Protocol):
    pipe: Any
    checkpoint: bytes | None
    reset: Future[None] | None


class RngReset:
    """Restores built pipelines' checkpoints, ahead of time where it can."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._pending: list[Future[None]] = []

    def before_run(self, built: Resettable, advance: bool) -> None:
        """Make ``built``'s RNG state what the render needs: its first draw (restored now,
        or by the reset scheduled after its last render), or, with ``advance``, the state its
        last render left (:meth:`check_advance` first)."""
        pending, built.reset = built.reset, None
        if advance:
            return
        if pending is not None:
            pending.result()  # a failed restore raises here, in the render that needs it
        elif built.checkpoint is not None:
            built.pipe._pipe.RestoreFromSerializedCheckpoint(built.checkpoint)

    @staticmethod
    def check_advance(built: Resettable) -> None:
        """An ``advance`` render needs the state its previous render left: refuse one whose
        previous render was not a stream (its state is being put back to the first draw)."""
        if built.reset is not None:
            raise ValueError("advance=True goes on from the previous render's random state, "
                             "but that render was made without stream=True, and its state "
                             "was put back to the first draw")

    def after_render(self, built: Resettable, stream: bool) -> None:
        """Schedule the restore of ``built``'s first draw (not for a stream, which goes on)."""
        if stream or built.checkpoint is None:
            return
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="dali-gallery-rng-reset")
        self._pending = [f for f in self._pending if not f.done()]
        built.reset = self._pool.submit(built.pipe._pipe.RestoreFromSerializedCheckpoint,
                                        built.checkpoint)
        self._pending.append(built.reset)

    @staticmethod
    def release(built: Resettable) -> None:
        """Before ``built`` is dropped: wait for its restore under way, which must not run
        while DALI shuts the pipeline down (a failure is logged: the pipeline is not rendered
        again, so no render raises it)."""
        pending, built.reset = built.reset, None
        error = pending.exception() if pending is not None else None
        if error is not None:
            _log.warning("RNG restore of a pipeline being dropped failed: %s: %s",
                         type(error).__name__, error)

    def settle(self) -> None:
        """Wait for the restores under way (benchmarks time other work after this; the
        engine closes its pipelines after this)."""
        for f in self._pending:
            f.exception()  # waits; an error is raised by the render that needs the state
        self._pending = []

    def close(self) -> None:
        self.settle()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
