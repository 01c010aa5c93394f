"""Slow pipelines traced ahead, in another process, into the pipeline cache.

DALI traces a chain with conditionals (the auto_aug policies) through autograph: 1-5 s of
Python each, on one core. A cold gallery has nine of them (the policies' rows: magnitudes,
named policies, draws) and traced them one after another: 11 of the 13.4 s of a cold gallery
on an H100 host. :class:`TraceAhead` hands them to a worker process when the gallery starts,
which traces them side by side (:mod:`.trace_worker`: one process that forks a child per job)
while the engine renders the other rows; a render of one of them waits for its answer, then
loads the pipeline from the cache (:mod:`.pipeline_cache`) as it would any cached pipeline. A
job that fails is logged with its reason and the render traces the pipeline itself: the same
pipeline, only later.

The worker is a plain ``python -m`` process given jobs on stdin, not ``multiprocessing``: its
spawn start re-imports the parent's main script, which fails (or runs the script again) in a
script without a ``__main__`` guard.

:func:`prestart` starts one worker ahead of its jobs, once a process (the app and the gallery
call it as they start): it imports DALI and has autograph rewrite the policies' code beside
the kernel's own imports, and the first engine that traces ahead takes it, so none of that is
on the gallery's path. On the H200 host that is 0.8-1.0 s of imports and ~0.7-0.9 s of the
first trace, one after the other, before any child can start.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import cupy_warm
from .codec_extensions import child_environment
from .pipeline_cache import default_folder
from .trace_worker import ANSWER, WARM, TraceJob

if TYPE_CHECKING:
    from .engine import PreviewEngine

__all__ = ["TraceAhead", "TraceJob", "ahead_report", "default_workers", "prestart",
           "release_spare", "spare_warm", "trace_jobs", "trace_keys"]

MAX_WORKERS = 12
"""A cold gallery has nine such pipelines: on a 16-core host each gets its own child."""
WAIT_S = 120.0
"""How long a render waits for its answer before tracing the pipeline itself."""
STOP_GRACE_S = 2.0
"""How long closing waits for an idle worker to exit by itself (it takes ~0.1 s)."""
SPARE_IDLE_S = 3 * 3600
"""A worker started ahead that no engine took within this many seconds exits (a kernel of the
served app's pool may wait hours for its page; the worker holds ~110 MB, idle)."""
_log = logging.getLogger(__name__)


def trace_jobs(engine: PreviewEngine, renders: Sequence[tuple[Any, int]]) -> list[TraceJob]:
    """The jobs of ``PreviewEngine.trace_ahead``: renders ``(preset, draws)`` on all the
    engine's images whose pipelines need conditionals (slow to trace) and that its cache
    lacks (none with labels or Python operators: those are never cached). When the cache has
    every one, the worker started ahead (:func:`prestart`) is let go: this gallery has no
    use for it."""
    jobs = _conditional_jobs(engine, renders)
    todo = [job for job in jobs if not engine.cache.has(job.key)]
    if jobs and not todo:
        release_spare()
    return todo


def trace_keys(engine: PreviewEngine, renders: Sequence[tuple[Any, int]]) -> list[str]:
    """The cache keys of the pipelines of ``renders`` that a worker would trace (cached or
    not): what a render of them waits for while a worker has them."""
    return [job.key for job in _conditional_jobs(engine, renders)]


def _conditional_jobs(engine: PreviewEngine, renders: Sequence[tuple[Any, int]]
                      ) -> list[TraceJob]:
    images = len(engine.images)
    if not engine.cache.enabled or engine.labels is not None or not images:
        return []
    jobs = []
    for source, draws in renders:
        preset, key = engine._memo.preset(source, engine.catalog)
        if key is None:  # not a plain document: validated at its render, not before
            continue
        code, chain = engine._module(preset, False, None, key)
        batch = images * draws
        cache_key = engine._cache_key(code, preset, batch, False, chain)
        if chain.conditionals and cache_key is not None:
            jobs.append(TraceJob(cache_key, code, preset.seed, batch, engine.device,
                                 engine.num_threads, chain.checkpoints, chain.conditionals,
                                 str(engine.cache.folder)))
    return jobs


MIN_CORES = 4
"""Fewer cores than this: no workers. On the 2-core machine a worker saved 2.6 s of a 9.6 s
cold gallery, but every kernel of a served app starting its own worker there (a test server
with several pages) left the kernels too little CPU to answer in time."""


def default_workers() -> int:
    """Workers for this machine: none under :data:`MIN_CORES` cores (those this process may
    use), else one core stays with the engine; at most :data:`MAX_WORKERS`."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    return 0 if cores < MIN_CORES else min(MAX_WORKERS, cores - 1)


def _environment(scratch: str) -> dict[str, str]:
    """The parent's environment, with its import path (a kernel may have added to it), no GPU,
    one OpenBLAS thread and ``scratch`` as the temporary folder. No GPU: the worker only traces
    and serializes (``build_pipeline(trace_only=True)``), and each worker that saw the GPU held
    a CUDA context of ~520 MiB while it traced (nine of them, 4.7 GiB, during a cold gallery
    on an H100). One OpenBLAS thread: its idle server would be the only other thread of a
    process that forks (:mod:`.trace_worker`). ``scratch``: DALI's autograph writes each
    function it converts there and deletes it at exit; a worker killed mid-trace leaves them,
    so :meth:`TraceAhead.close` removes the folder."""
    env = child_environment()
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and Path(p).is_dir())
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["TMPDIR"] = scratch
    return env


class _Worker:
    """The worker process (:mod:`.trace_worker`), in a process group of its own with the
    children it forks: jobs go in as JSON lines on its stdin, and it answers one JSON line per
    job on stdout; a reader thread files the answers by key."""

    def __init__(self, children: int, results: dict[str, threading.Event],
                 answers: dict[str, str | None], ahead: bool = False):
        self.children = children
        self.scratch = tempfile.mkdtemp(prefix="dali-gallery-trace-ahead-")
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        flags = ["--warm", "--idle-exit", str(SPARE_IDLE_S)] if ahead else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "dali_gallery.pipelines.trace_worker", "--children",
             str(children), *flags], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.errors, env=_environment(self.scratch), start_new_session=True)
        self.warmed = threading.Event()
        self.warm: dict[str, Any] = {}  # its WARM line: seconds to warm, error
        self.jobs: list[str] = []
        self.answered: set[str] = set()
        self._events = results
        self._answers = answers
        self._reader = threading.Thread(target=self._read, daemon=True,
                                        name="dali-gallery-trace-ahead")
        self._reader.start()

    def send(self, job: TraceJob) -> None:
        assert self.process.stdin is not None
        self.jobs.append(job.key)
        self.process.stdin.write(json.dumps(dataclasses.asdict(job)).encode() + b"\n")
        self.process.stdin.flush()

    def _read(self) -> None:
        assert self.process.stdout is not None
        answered = self.answered
        for line in self.process.stdout:  # anything else a library prints there is skipped
            if line.startswith(ANSWER):
                answer = json.loads(line[len(ANSWER):])
                if answer["key"] not in answered:
                    self._answer(answer["key"], answer["error"])
                    answered.add(answer["key"])
            elif line.startswith(WARM):
                self.warm = json.loads(line[len(WARM):])
                if self.warm["error"] is not None:
                    _log.warning("the trace-ahead worker's warm-up failed (%s); its first job "
                                 "is traced cold", self.warm["error"])
                self.warmed.set()
        self.warmed.set()  # ended: nobody waits for a warm-up any more
        code = self.process.wait()  # the worker ended: whatever it still had failed
        self.errors.seek(0)
        lines = self.errors.read().decode("utf-8", "replace").strip().splitlines()
        why = f"the worker ended (exit status {code}: {lines[-1] if lines else 'no output'})"
        for key in self.jobs:
            if key not in answered:
                self._answer(key, why)

    def _answer(self, key: str, error: str | None) -> None:
        self._answers[key] = error
        event = self._events.get(key)
        if event is not None:
            event.set()

    @property
    def idle(self) -> bool:
        """Every job it was given is answered: it waits for input."""
        return len(self.answered) >= len(self.jobs)

    def ask_to_stop(self) -> None:
        """End the worker's input: it drops queued jobs, lets running ones end and exits."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            # a worker that ended already (its ending is reported by the reader) has no pipe
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()

    def close(self, grace_s: float = 0.0) -> None:
        """Wait up to ``grace_s`` for the worker to exit on its own, then kill it and its
        children, and remove its temporary folder (autograph's sources of a killed one)."""
        self.ask_to_stop()
        with contextlib.suppress(subprocess.TimeoutExpired):  # killed with its group below
            self.process.wait(timeout=max(grace_s, 0.0))
        with contextlib.suppress(ProcessLookupError):  # the group ended already
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self._reader.join(timeout=5)  # it reads the error file once the process ended
        self.errors.close()
        try:
            shutil.rmtree(self.scratch)
        except OSError as e:  # left in the temporary folder; closing goes on
            _log.warning("could not remove the trace-ahead folder %s (%s)", self.scratch, e)


class TraceAhead:
    """A worker process tracing pipelines into a cache (at most ``workers`` at once), and
    the keys it was given."""

    def __init__(self, workers: int | None = None) -> None:
        self.workers = default_workers() if workers is None else workers
        self._worker: _Worker | None = None
        self._events: dict[str, threading.Event] = {}
        self._answers: dict[str, str | None] = {}
        self.failed = 0

    def start(self, jobs: list[TraceJob]) -> int:
        """Give ``jobs`` not already given to the worker (started with the first); returns
        how many were new."""
        if self.workers < 1:
            return 0
        new = [j for j in jobs if j.key not in self._events]
        for job in new:
            try:
                if self._worker is None:
                    self._worker = _take_spare(self.workers, self._events, self._answers) \
                        or _Worker(self.workers, self._events, self._answers)
                self._events[job.key] = threading.Event()
                self._worker.send(job)
            except OSError as e:  # no worker, or it ended: the render traces it
                self._events.pop(job.key, None)
                self.failed += 1
                _log.warning("tracing ahead could not start pipeline %s (%s); it is traced "
                             "when rendered", job.key, e)
                continue
        return len(new)

    def pending(self, key: str) -> bool:
        """The worker has ``key`` and has not answered yet (a render of it would wait)."""
        event = self._events.get(key)
        return event is not None and not event.is_set()

    def wait(self, key: str, timeout: float = WAIT_S) -> bool:
        """Wait for the answer on ``key``; True when the worker stored the pipeline. A failed
        or late job is logged with its reason; False: the caller traces it itself."""
        event = self._events.get(key)
        if event is None:
            return False
        done = event.wait(timeout)
        del self._events[key]
        error = self._answers.pop(key, None) if done else f"no result within {timeout:.0f} s"
        if error is None:
            return True
        self.failed += 1
        _log.warning("tracing ahead failed for pipeline %s (%s); tracing it here", key, error)
        return False

    def close(self) -> None:
        """Stop the worker; pipelines not yet traced are dropped (a render traces them). An
        idle worker exits by itself (its input ends; :data:`STOP_GRACE_S` at most), cleaning
        up after DALI's autograph; one still tracing is killed at once with its children, as
        closing must not wait for a trace nobody needs any more."""
        if self._worker is not None:
            self._worker.close(STOP_GRACE_S if self._worker.idle else 0.0)
        self._worker = None
        self._events = {}


_SPARE_START: dict[str, Any] = {"worker": None, "started": False, "first": None, "taken": False}
"""A process's worker ahead before :func:`prestart`: none yet, none started, none taken."""
_SPARE: dict[str, Any] = dict(_SPARE_START)
_SPARE_LOCK = threading.Lock()


def prestart(device: str = "auto") -> bool:
    """Start, once a process, a worker ahead of its jobs (see the module docstring); the first
    :class:`TraceAhead` that needs a worker takes it. Nothing is started where tracing ahead
    is off (fewer than :data:`MIN_CORES` cores, the pipeline cache disabled). True when
    started now. Unless ``device`` is "cpu", CuPy is warmed too (:mod:`.cupy_warm`)."""
    cupy_warm.start(device)
    with _SPARE_LOCK:
        if _SPARE["started"]:
            return False
        _SPARE["started"] = True
        workers = default_workers()
        if workers < 1 or default_folder() is None:
            return False
        try:
            _SPARE["worker"] = _SPARE["first"] = _Worker(workers, {}, {}, ahead=True)
        except OSError as e:  # no worker ahead: a gallery starts its own when it needs one
            _log.warning("could not start the trace-ahead worker ahead (%s)", e)
            return False
    atexit.register(release_spare)
    return True


def ahead_report() -> dict[str, Any] | None:
    """What the worker started ahead in this process said of its warm-up (``{"s": seconds
    after it started, "chains": traced, "error": ...}``; empty while it warms), and whether an
    engine took it; None when none was started. For the benches."""
    worker = _SPARE["first"]
    if worker is None:
        return None
    return {"warm_up": dict(worker.warm), "taken": _SPARE["taken"]}


def spare_warm(timeout: float) -> dict[str, Any] | None:
    """Wait up to ``timeout`` for the worker started ahead (not yet taken) to finish its
    warm-up; its WARM line (``{"s": ..., "error": ...}``), or None (none, not in time)."""
    worker = _SPARE["worker"]
    if worker is None or not worker.warmed.wait(timeout):
        return None
    return worker.warm or None


def _take_spare(children: int, events: dict[str, threading.Event],
                answers: dict[str, str | None]) -> _Worker | None:
    """The worker started ahead, now the caller's (its answers filed in ``events`` and
    ``answers``), when it runs and forks ``children`` at a time."""
    with _SPARE_LOCK:
        worker = _SPARE["worker"]
        if worker is None or worker.children != children:
            return None
        _SPARE["worker"], _SPARE["taken"] = None, True
    if worker.process.poll() is not None:  # it left (nobody took it in time)
        worker.close()
        return None
    worker._events, worker._answers = events, answers
    return worker


def release_spare() -> None:
    """Stop the worker started ahead, when no engine took it (nothing to trace after all)."""
    with _SPARE_LOCK:
        worker, _SPARE["worker"] = _SPARE["worker"], None
    if worker is not None:  # killed: nothing of its is needed, and its folder goes with it
        worker.close(0.0)
