"""Built pipelines kept for the next engine of this process that needs the same one.

A warm gallery loaded each of its ~24 pipelines from the disk cache (:mod:`.pipeline_cache`:
deserialize, build) because a new engine starts empty and an engine keeps only its latest few:
on an H200, plain DALI doing that work spent 0.38 s deserializing and building and 0.22 s
running. Here, what an engine lets go (its least recent pipelines, all of them when it closes)
is kept built instead of dropped, and the next engine that needs the same pipeline takes it as
it is: a gallery re-rendered for new images or by a cell run again, the builder going back to
an earlier chain, another view of the same kernel.

What is kept can be shared: a pipeline is keyed by its generated module's source (which carries
the source of every Python operator's function, so those are shared too), seed and batch, and
kept only when the next render can put its random state back to the first draw (a checkpoint,
or no random draws at all). An entry is taken out while an engine uses it, so two engines
never run one pipeline. The pool is bounded, :data:`MAX_PIPELINES` pipelines and
:data:`MAX_PIXELS` of what their latest renders held (the render plan's footprint,
:mod:`.render_budget`); the least recently given go first, shut down on a worker (DALI takes
4-6 ms to shut a pipeline down).
"""

from __future__ import annotations

import atexit
import threading
from collections import OrderedDict
from collections.abc import Hashable
from concurrent.futures import Future
from typing import Any, Protocol

from .budget import LEDGER, current
from .dali_record import note_kept
from .rng_reset import RngReset

MAX_PIPELINES = 48
"""Pipelines kept at most (each holds its buffers and DALI's thread pool): a full gallery of 4
images uses ~24, the builder a few."""
MAX_PIXELS = 256_000_000
"""Pixels of the kept pipelines' latest render plans, summed (each plan's footprint: its largest
step's inputs and outputs). A gallery of 4 images of 256x256 keeps 20 pipelines of 125 MP; the
process held 17-100 MB more with them than without (RSS, CPU), far below 125 MP as RGB (375 MB):
the bound errs on the safe side. Larger images keep fewer of a gallery's pipelines. The pool
also yields to the kernel's budget (:mod:`.budget`): it keeps at most what the decoded images
and the engines' latest renders leave, and each render cuts it to what its own plan leaves
(on the GPU the pipelines hold device buffers; ``KEPT.clear()`` frees them)."""


class Keepable(Protocol):
    pipe: Any
    checkpoint: bytes | None
    reset: Future[None] | None
    pixels: int
    busy: bool  # handed to a render that has not finished (kept_pipelines never keeps it)

    @property
    def restorable(self) -> bool:
        """Whether its next render can start from the first draw (only such are kept)."""


class KeptPipelines:
    """The pool: :meth:`take` and :meth:`give` under one lock (engines of several threads),
    drops under another (:class:`RngReset` is one thread's)."""

    def __init__(self, max_pipelines: int = MAX_PIPELINES, max_pixels: int = MAX_PIXELS) -> None:
        self.max_pipelines = max_pipelines
        self.max_pixels = max_pixels
        self._entries: OrderedDict[Hashable, Keepable] = OrderedDict()
        self._lock = threading.Lock()
        self._drops = RngReset()  # its one worker shuts down what the pool lets go
        self._drop_lock = threading.Lock()
        self.taken = 0
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def pixels(self) -> int:
        with self._lock:
            return sum(e.pixels for e in self._entries.values())

    def take(self, key: Hashable) -> Keepable | None:
        """The pipeline kept under ``key``, taken out (None: none kept)."""
        with self._lock:
            entry = self._entries.pop(key, None)
            self.taken += entry is not None
        return entry

    def give(self, key: Hashable, entry: Keepable) -> None:
        """Keep ``entry`` (its random state put back to the first draw, or being put back:
        ``entry.reset``) for the next :meth:`take` of ``key``; drops what no longer fits,
        within :data:`MAX_PIXELS` and the room the kernel's budget leaves (:meth:`fit`)."""
        with self._lock:
            out = [] if key not in self._entries else [self._entries.pop(key)]
            self._entries[key] = entry
        self.fit(_room())
        self._drop(out)

    def fit(self, room: int) -> None:
        """Drop the least recently given until the pool holds at most ``room`` pixels (and
        its own bounds): a render about to run makes room for itself in the kernel's budget
        (:func:`.render_budget.check_render`), so what is kept never pushes the kernel past
        it."""
        with self._lock:
            out = []
            total = sum(e.pixels for e in self._entries.values())
            while self._entries and (len(self._entries) > self.max_pipelines
                                     or total > min(self.max_pixels, room)):
                _, old = self._entries.popitem(last=False)
                total -= old.pixels
                out.append(old)
        self._drop(out)

    def clear(self) -> None:
        """Drop every kept pipeline and wait until they are shut down (benchmarks measure
        engines that load their pipelines; tests start from an empty pool)."""
        with self._lock:
            out = list(self._entries.values())
            self._entries.clear()
        self._drop(out)
        with self._drop_lock:
            self._drops.settle()

    def close(self) -> None:
        """Shut every kept pipeline down here, in order (at exit the worker may be gone:
        Python stops its thread pools before ``atexit`` runs)."""
        with self._drop_lock:
            self._drops.close()
        with self._lock:
            out = list(self._entries.values())
            self._entries.clear()
        for old in out:
            if old.reset is not None:
                old.reset.exception()  # its restore ended (the worker waited for it)
            old.reset = None
            old.pipe = None

    def _drop(self, out: list[Keepable]) -> None:
        with self._drop_lock:
            self.dropped += len(out)
            for old in out:
                self._drops.release(old)


def _room() -> int:
    """Pixels the kernel's budget leaves beside its decoded images and latest renders."""
    budget = current()
    return max(0, budget.kernel_pixels - LEDGER.held())


KEPT = KeptPipelines()
"""This process's pool."""
atexit.register(KEPT.close)  # shut down in order, before the interpreter tears DALI down


class OwnPipelines:
    """One engine's working set of ``kind`` ("chain", "fused"): its latest ``size`` pipelines
    by key. Those it lets go go to ``pool`` when ``restorable`` (under the kind, device,
    threads and the engine's pipeline cache folder ``cache``: another engine's pipeline must
    match in all, and one taken never reaches a cache it was not stored in), else they are
    dropped on the engine's ``reset`` worker; a key it lacks is looked for in the pool. An
    entry handed out is ``busy`` until its render clears it: one a render still uses when the
    engine closes (a worker that outlived its join) is dropped, never given to another engine.
    """

    def __init__(self, size: int, kind: str, device: str, num_threads: int, reset: RngReset,
                 pool: KeptPipelines | None, cache: str | None) -> None:
        self.size = size
        self.scope: tuple[Hashable, ...] = (kind, device, num_threads, cache)
        self.entries: OrderedDict[Hashable, Any] = OrderedDict()
        self._reset = reset
        self._pool = pool
        self._late: set[Hashable] = set()  # added after close: never given
        self._lock = threading.Lock()  # a render's thread, and close() from another
        self._closed = False

    def get(self, key: Hashable) -> tuple[Any, bool] | None:
        """(entry, taken from the pool) for ``key``, handed out ``busy``; None when neither
        has it (or the engine is closed: a render that outlived it takes nothing kept)."""
        with self._lock:
            if key in self.entries:
                self.entries.move_to_end(key)
                self.entries[key].busy = True
                return self.entries[key], False
            taken = None if self._pool is None or self._closed else self._pool.take(
                self.scope + (key,))
            if taken is None:
                return None
            taken.busy = True
            self._add(key, taken)
        _, device, threads, _ = self.scope
        note_kept(taken.pipe, 0 if device == "gpu" else None, threads)  # dali_record
        return taken, True

    def add(self, key: Hashable, entry: Any) -> None:
        """A pipeline this engine built or loaded, handed out ``busy``."""
        with self._lock:
            entry.busy = True
            if self._closed:
                self._late.add(key)
            self._add(key, entry)

    def discard(self, entry: Any) -> None:
        """Drop ``entry`` (a failed render, a state that cannot be put back): never kept."""
        with self._lock:
            for key, value in list(self.entries.items()):
                if value is entry:
                    del self.entries[key]
                    self._late.discard(key)
                    self._reset.release(entry)

    def close(self) -> None:
        """Let every pipeline go (to the pool where it may)."""
        with self._lock:
            self._closed = True
            while self.entries:
                self._let_go(*self.entries.popitem(last=False))

    def _add(self, key: Hashable, entry: Any) -> None:
        self.entries[key] = entry
        while len(self.entries) > self.size:
            self._let_go(*self.entries.popitem(last=False))

    def _let_go(self, key: Hashable, entry: Any) -> None:
        late = key in self._late
        self._late.discard(key)
        if self._pool is None or late or not entry.restorable or entry.busy or entry.pixels <= 0:
            self._reset.release(entry)
            return
        if entry.reset is None and entry.checkpoint is not None:
            self._reset.after_render(entry, False)  # a stream's state: the first draw again
        self._pool.give(self.scope + (key,), entry)
