"""What the preview asks of DALI, recorded, and the same work done again in plain DALI.

``dali-gallery bench --only gallery`` reports the gallery against plain DALI doing the same
DALI work (a floor, as the labels bench has one): every pipeline the gallery used, in the form
DALI serializes it, deserialized and built again with ``Pipeline.deserialize``, fed the same
inputs through ``feed_input``, run as often, and each output copied to the host. No plans,
budgets, checkpoints, strips or widgets: what is left between the two is ours.

:meth:`DaliWork.save` and :meth:`DaliWork.load` carry the work to a fresh process (the bench's
"new kernel" figures: :mod:`gallery.fresh_bench`), as a NumPy archive (no pickle).

While :func:`recording` is active, :mod:`.pipeline_cache` notes each pipeline it loads or
builds, :mod:`.kept_pipelines` each one an engine takes built from the process's pool (plain
DALI builds those before its clock starts: the preview did not build them either),
:func:`.fed_values.feed` the inputs of its next run and :func:`.fed_values.run_fed`
that the run succeeded (a run that raised is counted, not replayed: the preview reported it and
went on). Off (the default) each call reads one global. A pipeline DALI cannot serialize (one
with a Python operator) is counted but not replayed.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["DaliWork", "Outputs", "Recorded", "note_fed", "note_graph", "note_kept",
           "note_pipeline", "note_ran", "recording", "replay"]


@dataclass
class Recorded:
    """One pipeline as the preview used it: DALI's serialized graph and each run's inputs."""

    blob: bytes
    device_id: int | None
    num_threads: int
    runs: list[dict[str, Any]] = field(default_factory=list)
    prebuilt: bool = False  # taken built from the kept pipelines: built before the clock


class DaliWork:
    """The pipelines noted while recording, in the order they were first used."""

    def __init__(self) -> None:
        self.pipelines: list[Recorded] = []
        self.not_serializable = 0  # pipelines with a Python operator: not replayed
        self.runs_not_replayed = 0  # theirs, and those of pipelines made before recording
        self.runs_failed = 0  # fed, then their run raised (not replayed either)
        self._live: dict[int, Recorded | None] = {}  # id(pipe) while it lives (None: theirs)
        self._fed: dict[int, dict[str, Any]] = {}  # id(pipe) -> the inputs of its next run
        self._refs: list[weakref.ref[Any]] = []
        self._lock = threading.RLock()  # also taken by weakref callbacks

    @property
    def runs(self) -> int:
        return sum(len(p.runs) for p in self.pipelines)

    def pipeline(self, pipe: Any, blob: Callable[[], bytes], device_id: int | None,
                 num_threads: int, prebuilt: bool = False) -> None:
        key = id(pipe)
        with self._lock:
            if prebuilt and key in self._live:  # taken again: noted when first used
                return
        entry: Recorded | None
        try:
            entry = Recorded(blob(), device_id, num_threads, prebuilt=prebuilt)
        except RuntimeError:  # DALI cannot serialize a graph with a Python operator
            entry = None
        with self._lock:
            if entry is None:
                self.not_serializable += 1
            else:
                self.pipelines.append(entry)
            self._live[key] = entry
            # a later pipeline may reuse the address once this one is gone
            self._refs.append(weakref.ref(pipe, lambda _: self._forget(key, entry)))

    def fed(self, pipe: Any, inputs: Mapping[str, Any]) -> None:
        with self._lock:
            if self._fed.pop(id(pipe), None) is not None:
                self.runs_failed += 1  # fed before, and that run never finished
            self._fed[id(pipe)] = dict(inputs)

    def ran(self, pipe: Any) -> None:
        with self._lock:
            inputs = self._fed.pop(id(pipe), None)
            entry = self._live.get(id(pipe))
            if entry is None or inputs is None:
                self.runs_not_replayed += 1
            else:
                entry.runs.append(inputs)

    def finish(self) -> None:
        """Inputs fed whose run never finished: failed runs."""
        with self._lock:
            self.runs_failed += len(self._fed)
            self._fed.clear()

    def save(self, path: str | Path) -> None:
        """The replayable work as ``.npz``: each graph's bytes and each run's fed samples."""
        import numpy as np

        arrays: dict[str, Any] = {"counts": np.array(
            [self.not_serializable, self.runs_not_replayed, self.runs_failed])}
        for k, entry in enumerate(self.pipelines):
            arrays[f"p{k}"] = np.frombuffer(entry.blob, dtype=np.uint8)
            arrays[f"p{k}_setup"] = np.array([-1 if entry.device_id is None else entry.device_id,
                                              entry.num_threads, len(entry.runs),
                                              int(entry.prebuilt)])
            for j, inputs in enumerate(entry.runs):
                for name, data in inputs.items():
                    samples = [np.array(data[i]) for i in range(len(data))]
                    for i, sample in enumerate(samples):
                        arrays[f"p{k}_r{j}_{len(samples)}_{i}_{name}"] = sample
        np.savez(path, **arrays)

    @classmethod
    def load(cls, path: str | Path) -> DaliWork:
        """What :meth:`save` wrote (fed values as lists of per-sample arrays)."""
        import numpy as np

        work = cls()
        with np.load(path, allow_pickle=False) as archive:
            names = set(archive.files)
            work.not_serializable, work.runs_not_replayed, work.runs_failed = (
                int(v) for v in archive["counts"])
            k = 0
            while f"p{k}" in names:
                setup = [int(v) for v in archive[f"p{k}_setup"]] + [0]  # older: no 4th
                device_id, threads, runs, prebuilt = setup[:4]
                entry = Recorded(archive[f"p{k}"].tobytes(), None if device_id < 0 else device_id,
                                 threads, [{} for _ in range(runs)], bool(prebuilt))
                prefix = f"p{k}_r"
                for key in sorted(n for n in names if n.startswith(prefix)):
                    j, count, i, name = key[len(prefix):].split("_", 3)
                    fed = entry.runs[int(j)].setdefault(name, [None] * int(count))
                    fed[int(i)] = archive[key]
                work.pipelines.append(entry)
                k += 1
        return work

    def _forget(self, key: int, entry: Recorded | None) -> None:
        with self._lock:
            if key in self._live and self._live[key] is entry:
                del self._live[key]
                if self._fed.pop(key, None) is not None:
                    self.runs_failed += 1


_ACTIVE: DaliWork | None = None
_ACTIVE_LOCK = threading.Lock()


@contextmanager
def recording() -> Iterator[DaliWork]:
    """Note every preview pipeline and run in this process (all threads) inside the block."""
    global _ACTIVE
    with _ACTIVE_LOCK:
        if _ACTIVE is not None:
            raise RuntimeError("DALI work is already being recorded in this process")
        _ACTIVE = work = DaliWork()
    try:
        yield work
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE = None
        work.finish()


def note_pipeline(pipe: Any, blob: Callable[[], bytes], device_id: int | None,
                  num_threads: int) -> None:
    """A preview pipeline was loaded or built (``blob`` gives its serialized graph)."""
    work = _ACTIVE
    if work is not None:
        work.pipeline(pipe, blob, device_id, num_threads)


_GRAPHS: weakref.WeakKeyDictionary[Any, bytes] = weakref.WeakKeyDictionary()
"""The serialized graph of each live pipeline made from or into one (the pipeline cache's
blob): kept pipelines are noted with it. DALI 2.4 on the GPU cannot serialize every pipeline
it deserialized (9 of a gallery's 20 raised), and serializing costs time."""


def note_graph(pipe: Any, blob: bytes) -> None:
    """``blob`` is ``pipe``'s serialized graph (remembered while ``pipe`` lives)."""
    _GRAPHS[pipe] = blob


def note_kept(pipe: Any, device_id: int | None, num_threads: int) -> None:
    """A preview pipeline was taken built from the kept pipelines (not loaded, not built)."""
    work = _ACTIVE
    if work is not None:
        blob = _GRAPHS.get(pipe)
        work.pipeline(pipe, pipe.serialize if blob is None else lambda: blob, device_id,
                      num_threads, prebuilt=True)


def note_fed(pipe: Any, inputs: Mapping[str, Any]) -> None:
    """``pipe`` is fed ``inputs`` for its next run."""
    work = _ACTIVE
    if work is not None:
        work.fed(pipe, inputs)


def note_ran(pipe: Any) -> None:
    """``pipe``'s run with the inputs it was fed returned."""
    work = _ACTIVE
    if work is not None:
        work.ran(pipe)


def _to_host(outputs: Any) -> list[Any]:
    """Every output on the host, owned (DALI reuses its buffers on the next run)."""
    import numpy as np
    from nvidia.dali.tensors import TensorListGPU

    host = []
    for out in outputs:
        if isinstance(out, TensorListGPU):
            host.append(out.as_cpu())  # a copy of its own
        else:
            host.append([np.array(out[i]) for i in range(len(out))])
    return host


Outputs = Callable[[int, int, list[Any]], None]
"""``(pipeline, run, host outputs)``: what a replay's run gave (tests compare it)."""


def replay(work: DaliWork, outputs: Outputs | None = None) -> float:
    """Seconds plain DALI takes to do ``work``: each pipeline deserialized and built, then fed
    and run as often as the preview ran it, its outputs copied to the host (and handed to
    ``outputs``, outside the time), then shut down. Pipelines the preview took built
    (``Recorded.prebuilt``) are built and shut down outside the time."""
    from nvidia.dali import Pipeline

    def build(entry: Recorded) -> Any:
        pipe = Pipeline.deserialize(serialized_pipeline=entry.blob, device_id=entry.device_id,
                                    num_threads=entry.num_threads, prefetch_queue_depth=1,
                                    exec_dynamic=True)
        pipe.build()
        return pipe

    ready = {k: build(e) for k, e in enumerate(work.pipelines) if e.prebuilt}
    aside = 0.0
    t0 = time.perf_counter()
    for k, entry in enumerate(work.pipelines):
        pipe = ready[k] if k in ready else build(entry)
        for j, inputs in enumerate(entry.runs):
            for name, data in inputs.items():
                pipe.feed_input(name, data)
            host = _to_host(pipe.run())
            if outputs is not None:
                t = time.perf_counter()
                outputs(k, j, host)
                aside += time.perf_counter() - t
        pipe = None  # shut down inside the time, as the preview drops its pipelines
    seconds = time.perf_counter() - t0 - aside
    ready.clear()  # kept by the preview: shut down outside the time
    return seconds
