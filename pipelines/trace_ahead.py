"""Slow pipelines traced ahead, in other processes, into the pipeline cache.

DALI traces a chain with conditionals (the auto_aug policies) through autograph: 1-5 s of
Python each, on one core. A cold gallery has nine of them (four rand_augment magnitudes, four
auto_augment policies, trivial_augment) and traced them one after another: 11 of the 13.4 s of
a cold gallery on an H100 host. :class:`TraceAhead` hands them to worker processes when the
gallery starts, so they trace side by side while the engine renders the other rows; a render
of one of them waits for its worker, then loads the pipeline from the cache
(:mod:`.pipeline_cache`) as it would any cached pipeline. A worker that fails is logged with
its reason and the render traces the pipeline itself: the same pipeline, only later.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import tempfile
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .device import Device
from .generated_module import import_source
from .pipeline_cache import PipelineCache
from .preview_pipeline import MODULE_PREFIX, build_pipeline

MAX_WORKERS = 8
WAIT_S = 300.0
"""How long a render waits for its worker before tracing the pipeline itself."""
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TraceJob:
    """Everything a worker needs to make the pipeline the engine would make for ``key``."""

    key: str
    code: str
    seed: int
    batch: int
    device: Device
    threads: int
    checkpoints: bool
    conditionals: bool
    folder: str


def trace_to_cache(job: TraceJob) -> str:
    """Worker process: import the chain's source, make its pipeline as the engine does
    (``build_pipeline``) and store it serialized under ``job.key``."""
    with tempfile.TemporaryDirectory(prefix="dali-gallery-trace-") as folder:
        module = import_source(job.code, Path(folder), f"{MODULE_PREFIX}{job.key[:16]}")
        pipe = build_pipeline(module, job.seed, job.batch, job.device, job.threads, False,
                              job.checkpoints, job.conditionals)
        blob = pipe.serialize()
    cache = PipelineCache(job.folder)
    if not cache.enabled:
        raise RuntimeError(f"the pipeline cache folder {job.folder} is not usable")
    cache.store(job.key, blob, job.checkpoints)
    return job.key


def default_workers() -> int:
    """One core stays with the engine; at most :data:`MAX_WORKERS`."""
    return max(1, min(MAX_WORKERS, (os.cpu_count() or 2) - 1))


class TraceAhead:
    """Worker processes tracing pipelines into a cache, and the keys they are working on."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = workers or default_workers()
        self._pool: ProcessPoolExecutor | None = None
        self._pending: dict[str, Future[str]] = {}
        self.started = 0
        self.failed = 0

    def start(self, jobs: list[TraceJob]) -> int:
        """Hand ``jobs`` not already under way to the workers; returns how many were new."""
        new = [j for j in jobs if j.key not in self._pending]
        if not new:
            return 0
        if self._pool is None:  # spawn: a forked DALI or CUDA state is not safe to reuse
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers, mp_context=multiprocessing.get_context("spawn"))
        for job in new:
            self._pending[job.key] = self._pool.submit(trace_to_cache, job)
        self.started += len(new)
        return len(new)

    def pending(self, key: str) -> bool:
        return key in self._pending

    def wait(self, key: str, timeout: float = WAIT_S) -> bool:
        """Wait for the worker on ``key`` (if any); True when it stored the pipeline. A failed
        worker is logged with its reason and False returned: the caller traces it itself."""
        future = self._pending.pop(key, None)
        if future is None:
            return False
        try:
            future.result(timeout=timeout)
        except Exception as e:  # a worker's error or a broken pool: logged, then traced here
            self.failed += 1
            _log.warning("tracing ahead failed for pipeline %s (%s: %s); tracing it here",
                         key, type(e).__name__, str(e).splitlines()[0] if str(e) else "")
            future.cancel()
            return False
        return True

    def close(self) -> None:
        """Stop the workers; pipelines not yet traced are dropped (a render traces them)."""
        for future in self._pending.values():
            future.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
