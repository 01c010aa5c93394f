"""Putting a preview pipeline's random state back to its first draw while nobody waits.

A render shows the same draw until the seed changes: the engine restores the RNG state
checkpointed after the build before each run. The restore (DALI's
``RestoreFromSerializedCheckpoint``) took 0.1-0.2 ms of a 2.7 ms render of 8 images of 256x256 on
an H100 host, in the render's own time. Here it runs on a worker thread right after the render
that used the state up: a person's edits come tens of milliseconds apart, so the next render
finds it done and only checks that it finished. A render that will be continued
(``advance=True`` next, as the distribution view's stream) keeps its state instead.

The same worker drops the pipelines the engine lets go (its cache of three, a failed render):
DALI's shutdown of a pipeline (its threads joined, its buffers freed) took 4-6 ms on an H200
host, in the render that evicted it (19 of them, ~0.09 s, in a warm gallery).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
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
        built.reset = self._schedule(built.pipe._pipe.RestoreFromSerializedCheckpoint,
                                     built.checkpoint)

    def release(self, built: Resettable) -> None:
        """``built`` is no longer used: its pipeline is taken from it (``built.pipe`` becomes
        None) and dropped on the worker, after the restore scheduled there before it (one
        worker, first come first served: DALI never shuts a pipeline down under its restore).
        A failed restore is logged: the pipeline is not rendered again, so no render raises
        it. :meth:`settle` waits for the drops too."""
        pending, built.reset = built.reset, None
        held, built.pipe = [built.pipe], None  # only the worker's list holds it now
        self._schedule(_drop, held, pending)

    def _schedule(self, work: Callable[..., None], *args: Any) -> Future[None]:
        """``work(*args)`` on the one worker, after everything scheduled before it."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="dali-gallery-rng-reset")
        self._pending = [f for f in self._pending if not f.done()]
        self._pending.append(self._pool.submit(work, *args))
        return self._pending[-1]

    def settle(self) -> None:
        """Wait for the restores and drops under way (benchmarks time other work after this; the
        engine closes its pipelines after this)."""
        for f in self._pending:
            f.exception()  # waits; an error is raised by the render that needs the state
        self._pending = []

    def close(self) -> None:
        self.settle()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


def _drop(held: list[Any], pending: Future[None] | None) -> None:
    """The worker's part of :meth:`RngReset.release`: the restore before it has ended (one
    worker); its failure is logged, then the last reference to the pipeline goes here."""
    error = pending.exception() if pending is not None else None
    if error is not None:
        _log.warning("RNG restore of a pipeline being dropped failed: %s: %s",
                     type(error).__name__, error)
    held.clear()
