"""The trace-ahead worker process: traces pipelines with conditionals into the pipeline cache.

A job's trace is mostly DALI's autograph rewriting functions (the policies' own code, the same
in every job: ~65% of one policy job's trace on 2 cores, cProfile), and autograph keeps what it
rewrote for the rest of the process. Nine worker processes each rewrote it all again, after
importing DALI each (0.4-0.5 s): ~1.3 s of CPU a job, nine at once beside the engine. So one
process imports DALI, traces the first job itself (its rewrites stay in its memory), then forks
a child per later job, up to ``--children`` at a time: a child starts with DALI imported and
the shared code rewritten. On 2 cores, the cold gallery's policy jobs: 0.64 s for the first in
a fresh process, 0.23-0.27 s for another of the same policy in a child; 0.75-0.94 s for a
second policy's job fresh, 0.52-0.54 s in a child of a process that traced the first policy.

Forking is safe here because the process has no other thread: its environment (set by
:mod:`.trace_ahead`) hides the GPU, so DALI starts nothing, and limits OpenBLAS (numpy's) to
one thread, whose idle server thread would otherwise be the one other thread. A child writes
its autograph sources in its own temporary folder and removes it when it is done; it answers
with one line (written at once: shorter than a pipe's atomic write) and leaves with
``os._exit``, so nothing of the parent's (atexit, buffers) runs twice.

A worker started ahead of its jobs (``--warm``: :func:`.trace_ahead.prestart`, when the app
or a gallery starts) traces warm-up chains first, one per catalog operator that needs
conditionals, at its defaults, until its first job comes, and says so (:data:`WARM`); every
job then goes to a child. A job that comes before any chain was traced is traced in the
worker, as in one started cold: a worker started ahead is never later than that by more than
the one chain it was tracing.
``--idle-exit S``: such a worker that got no job within S seconds exits (nobody needed it).

Protocol: a :class:`TraceJob` per JSON line on stdin; per job one line on stdout, starting
with :data:`ANSWER`, then ``{"key": ..., "error": null}`` when stored, else the error's type
and message. The end of stdin: queued jobs are dropped, running children finish, the process
exits. This module imports DALI only when it traces: the engine's side imports it for its
names, and a worker started ahead imports DALI beside the kernel's own imports.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import sys
import tempfile
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .device import Device

ANSWER = b"dali-gallery-traced "
"""How an answer line starts (other output on the worker's stdout is not an answer)."""
WARM = b"dali-gallery-warm "
"""How the line of a worker started ahead starts when its warm-up ended: ``{"s": seconds
since it started, "chains": how many it traced, "error": null or why the warm-up failed}``."""
MAX_ERROR = 1000
"""An error's text is cut to this many characters: an answer stays one atomic pipe write."""
POLL_S = 0.01
"""How often the worker looks for ended children while they run and it has nothing to read
(idle, it sleeps until its input)."""
_OUT = 1  # the answers' file descriptor (sys.stdout is pointed at stderr)


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
    """Import the chain's source, make its pipeline as the engine does (``build_pipeline``)
    and store it serialized under ``job.key``."""
    from .generated_module import import_source
    from .pipeline_cache import PipelineCache
    from .preview_pipeline import MODULE_PREFIX, build_pipeline

    cache = PipelineCache(job.folder)
    if not cache.enabled:
        raise RuntimeError(f"the pipeline cache folder {job.folder} is not usable")
    with tempfile.TemporaryDirectory(prefix="dali-gallery-trace-") as folder:
        module = import_source(job.code, Path(folder), f"{MODULE_PREFIX}{job.key[:16]}")
        pipe = build_pipeline(module, job.seed, job.batch, job.device, job.threads, False,
                              job.checkpoints, job.conditionals, trace_only=True)
        blob = pipe.serialize()
    cache.store(job.key, blob, job.checkpoints)
    return job.key


def warm_up_chains() -> list[str]:
    """The warm-up's chains: one per catalog operator that needs conditionals, at its
    defaults (the preview module's source of each)."""
    from .catalog import CATALOG
    from .codegen import preview_module
    from .preset import Preset, load, new_step

    return [preview_module(load(Preset([new_step(name)], seed=0)))[0]
            for name, spec in CATALOG.items() if spec.conditionals]


def warm_up(code: str) -> None:
    """Trace (never build or store) one warm-up chain: autograph then has its operator's code
    rewritten for every child."""
    from .generated_module import import_source
    from .preview_pipeline import MODULE_PREFIX, build_pipeline

    with tempfile.TemporaryDirectory(prefix="dali-gallery-warm-") as folder:
        module = import_source(code, Path(folder), f"{MODULE_PREFIX}warm_up")
        build_pipeline(module, 0, 1, "cpu", 1, False, False, True, trace_only=True)


def _error(e: Exception) -> str:
    """An error's type and first line, cut to :data:`MAX_ERROR` characters."""
    error = f"{type(e).__name__}: {e}".splitlines()[0]
    return error if len(error) <= MAX_ERROR else error[:MAX_ERROR - 3] + "..."


def _answer(key: str, error: str | None) -> None:
    os.write(_OUT, ANSWER + json.dumps({"key": key, "error": error}).encode() + b"\n")


def _trace(job: TraceJob) -> None:
    """Trace ``job`` and answer for it; its failure is the answer (the engine traces it)."""
    error = None
    try:
        trace_to_cache(job)
    except Exception as e:  # answered, with its reason, to the engine, which traces it
        error = _error(e)
    _answer(job.key, error)


def _fork(job: TraceJob) -> int:
    """A child that traces ``job`` in a temporary folder of its own, answers and exits."""
    pid = os.fork()
    if pid:
        return pid
    status, folder = 1, None
    try:
        folder = tempfile.tempdir = tempfile.mkdtemp(prefix="dali-gallery-child-")
        _trace(job)
        status = 0
    finally:  # never back into the parent's loop
        try:
            if folder is not None:
                shutil.rmtree(folder)
        except OSError as e:
            print(f"could not remove {folder}: {e}", file=sys.stderr)
        finally:
            sys.stderr.flush()
            os._exit(status)


def _ended(children: dict[int, str]) -> None:
    """Reap ended children; one that ended without answering (killed, crashed) is answered
    for, with how it ended."""
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        key = children.pop(pid)
        if status != 0:
            how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                   else f"exit status {os.waitstatus_to_exitcode(status)}")
            _answer(key, f"the tracing process ended ({how}) before it answered")


def _warm(started: float) -> bool:
    """Trace the warm-up chains until a job comes (the jobs then go first: the first is traced
    here, as in a worker started cold, unless a chain was traced), then the :data:`WARM` line.
    Whether any chain was traced."""
    traced, error = 0, None
    try:
        for code in warm_up_chains():
            if select.select([0], [], [], 0)[0]:  # a job is waiting
                break
            warm_up(code)
            traced += 1
    except Exception as e:  # said on the WARM line; the jobs still get traced
        error = _error(e)
    line = {"s": round(time.monotonic() - started, 3), "chains": traced, "error": error}
    os.write(_OUT, WARM + json.dumps(line).encode() + b"\n")
    return traced > 0


def serve(children_max: int, warm: bool = False, idle_exit_s: float | None = None) -> None:
    """The worker's loop (see the module docstring)."""
    started = time.monotonic()
    sys.stdout = sys.stderr  # prints of the traced code stay out of the answers
    parent = os.getppid()
    queue: deque[TraceJob] = deque()
    children: dict[int, str] = {}
    pending = b""
    reading, given = True, False
    if warm:
        warm = _warm(started)
    while reading or children:
        _ended(children)
        if os.getppid() != parent:  # the engine's process is gone (a culled kernel): its
            return  # queued jobs are not worth a core any more
        if not given and idle_exit_s is not None and time.monotonic() - started > idle_exit_s:
            return  # started ahead for a gallery that never came
        if queue and not warm:  # the first job here, so later ones start with its rewrites
            _trace(queue.popleft())
            warm = True
            continue
        while queue and len(children) < children_max:
            job = queue.popleft()
            try:
                children[_fork(job)] = job.key
            except OSError as e:  # no process to be had (a limit): the engine traces it
                _answer(job.key, _error(e))
        # children: look for their ends often; idle: sleep until input (or the idle exit)
        if not reading:
            select.select([], [], [], POLL_S)  # its input ended: wait for the children
            continue
        wait = POLL_S if children else 1.0 if not given and idle_exit_s is not None else None
        ready, _, _ = select.select([0], [], [], wait)
        if not ready:
            continue
        data = os.read(0, 1 << 16)
        if not data:  # the engine closed our input: drop what is queued, let children end
            reading = False
            queue.clear()
            continue
        *lines, pending = (pending + data).split(b"\n")
        queue.extend(TraceJob(**json.loads(line)) for line in lines if line.strip())
        given = given or bool(queue)


USAGE = ("usage: python -m dali_gallery.pipelines.trace_worker --children N [--warm] "
         "[--idle-exit SECONDS]")


def main(argv: list[str]) -> None:
    """``python -m ...trace_worker --children N [--warm] [--idle-exit S]``."""
    args = list(argv)
    warm = "--warm" in args
    if warm:
        args.remove("--warm")
    options = dict(zip(args[::2], args[1::2], strict=False))
    children, idle = options.pop("--children", ""), options.pop("--idle-exit", None)
    if (len(args) % 2 or options or not children.isdigit() or int(children) < 1
            or (idle is not None and not idle.isdigit())):
        raise SystemExit(USAGE)
    serve(int(children), warm, None if idle is None else float(idle))


if __name__ == "__main__":
    main(sys.argv[1:])
