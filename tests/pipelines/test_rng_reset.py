"""The RNG restore left to a worker after each render: every render still shows the first draw
(back to back, after a pause, after other pipelines ran), a stream goes on from where it was, and
a restore that failed is raised by the render that needs it."""

from __future__ import annotations

import threading
import time
import weakref

import numpy as np
import pytest

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import load
from dali_gallery.pipelines.rng_reset import RngReset
from tests.support import SAMPLES, preset_dict, sample_engine


@pytest.fixture(scope="module")
def engine():
    eng = sample_engine(2)
    yield eng
    eng.close()


def chain(seed: int = 3, stddev: float = 6.0):
    return load(preset_dict([
        {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-40, 40]}}},
        {"op": "noise.gaussian", "params": {"stddev": stddev}},
    ], seed=seed))


def _same(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a.images, b.images, strict=True))


def test_every_render_shows_the_first_draw_back_to_back_and_after_a_pause(engine):
    first = engine.render(chain(), draws=3)
    built = next(iter(engine._own.entries.values()))
    assert built.reset is not None  # scheduled on the worker, not done in the render
    back_to_back = engine.render(chain(), draws=3)  # waits for the restore under way
    engine.settle()
    assert built.reset is not None and built.reset.done()
    time.sleep(0.05)
    after_pause = engine.render(chain(), draws=3)
    other = engine.render(chain(seed=4), draws=3)  # another pipeline in between
    again = engine.render(chain(), draws=3)
    assert _same(first, back_to_back) and _same(first, after_pause) and _same(first, again)
    assert not _same(first, other)
    assert [r.fired for r in again.records] == [r.fired for r in first.records]


def test_a_stream_goes_on_and_matches_one_larger_render():
    """stream=True keeps the state its render left: advance renders continue it exactly as
    a fresh pipeline's next batches (the same engine rendering 2 draws at once is not the
    same batch layout, so compare with a second engine streaming the same way)."""
    a, b = PreviewEngine("cpu", num_threads=2), PreviewEngine("cpu", num_threads=2)
    try:
        for eng in (a, b):
            eng.set_images(SAMPLES)
            eng.set_arrays(eng.images[:2], eng.names[:2])
        s0 = a.render(chain(), draws=2, stream=True)
        s1 = a.render(chain(), draws=2, advance=True, stream=True)
        assert not _same(s0, s1)  # the next batch, not the first again
        time.sleep(0.05)
        b.render(chain(), draws=2)  # a plain render: its state is put back
        t0 = b.render(chain(), draws=2, stream=True)
        t1 = b.render(chain(), draws=2, advance=True)
        assert _same(s0, t0) and _same(s1, t1)
        with pytest.raises(ValueError, match="stream=True"):
            b.render(chain(), draws=2, advance=True)  # t1 was not a stream: state reset
    finally:
        a.close()
        b.close()


class _Pipe:
    def __init__(self, fail: bool = False) -> None:
        self.restores: list[str] = []
        self.fail = fail
        self.started = threading.Event()
        self.release = threading.Event()

    @property
    def _pipe(self) -> _Pipe:  # DALI's backend object (a property: no reference cycle)
        return self

    def RestoreFromSerializedCheckpoint(self, blob: bytes) -> None:  # noqa: N802 (DALI's)
        self.started.set()
        self.release.wait(5)
        if self.fail:
            raise RuntimeError("checkpoint does not match the pipeline")
        self.restores.append(threading.current_thread().name)


class _Built:
    def __init__(self, pipe: _Pipe, checkpoint: bytes | None = b"state") -> None:
        self.pipe = pipe
        self.checkpoint = checkpoint
        self.reset = None


def _waits_for_the_restore(reset: RngReset, built: _Built, call) -> None:
    """Schedule ``built``'s restore (held at its start), run ``call`` in a thread: it must not
    return before the restore is let go, and must return after."""
    reset.after_render(built, stream=False)
    assert built.pipe.started.wait(5)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (call(), done.set()))
    thread.start()
    assert not done.wait(0.1)  # still restoring
    built.pipe.release.set()
    assert done.wait(5)
    thread.join()


def test_the_next_run_waits_for_the_restore_and_raises_its_failure():
    reset = RngReset()
    try:
        ok = _Built(_Pipe())
        _waits_for_the_restore(reset, ok, lambda: reset.before_run(ok, False))  # no run yet
        assert ok.pipe.restores == ["dali-gallery-rng-reset_0"] and ok.reset is None

        bad = _Built(_Pipe(fail=True))
        bad.pipe.release.set()
        reset.after_render(bad, stream=False)
        reset.settle()  # waits, raises nothing: the render that needs the state raises
        with pytest.raises(RuntimeError, match="does not match"):
            reset.before_run(bad, False)

        plain = _Built(_Pipe())
        plain.pipe.release.set()
        reset.before_run(plain, False)  # nothing scheduled: restored in the render
        assert plain.pipe.restores == [threading.current_thread().name]
        reset.after_render(_Built(_Pipe(), checkpoint=None), stream=False)  # nothing to do
    finally:
        reset.close()


def test_a_pipeline_is_dropped_on_the_worker_after_its_restore_ended(caplog):
    """The engine lets a pipeline go (its cache of three, a failed render) while the restore
    scheduled after its last render may still run: DALI would shut the pipeline down under
    it. ``release`` returns at once; the worker lets the pipeline's last reference go after
    the restore, and logs a failure no render will raise."""
    reset = RngReset()
    try:
        built = _Built(_Pipe())
        reset.after_render(built, stream=False)
        assert built.pipe.started.wait(5)
        events, go = built.pipe.restores, built.pipe.release
        weakref.finalize(built.pipe, lambda: events.append(
            "dropped on " + threading.current_thread().name))
        reset.release(built)  # the restore is still held: release does not wait for it
        assert built.pipe is None and built.reset is None and events == []
        go.set()
        reset.settle()
        worker = events[0]
        assert worker.startswith("dali-gallery-rng-reset")
        assert events == [worker, "dropped on " + worker]  # restored, then dropped there
        bad = _Built(_Pipe(fail=True))
        bad.pipe.release.set()
        reset.after_render(bad, stream=False)
        reset.release(bad)
        reset.settle()
        assert "does not match" in caplog.text
    finally:
        reset.close()


def test_an_engine_evicting_pipelines_renders_every_one_right(engine):
    """Four chains in turn through a cache of three: each eviction waits for the dropped
    pipeline's restore; every chain still shows its first draw when it comes back."""
    firsts = [engine.render(chain(seed=s), draws=2) for s in (11, 12, 13, 14)]
    again = [engine.render(chain(seed=s), draws=2) for s in (11, 12, 13, 14)]
    assert all(_same(a, b) for a, b in zip(firsts, again, strict=True))
    assert len(engine._own.entries) == 3
