"""Tracing ahead: pipelines with conditionals are traced by a worker process (and the
children it forks) into the cache; the engine's render then loads them (none traced
in-process) with output identical to a pipeline traced in the engine itself; chains that trace
fast, chains with labels or Python operators and cached pipelines are not sent; a failed job
is logged and the render traces the pipeline itself."""

from __future__ import annotations

import logging
import os
import tempfile
import time

import numpy as np
import pytest

from dali_gallery.gallery.sweep import plan_row, render_row, row_renders
from dali_gallery.pipelines import trace_ahead
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from dali_gallery.pipelines.trace_ahead import TraceAhead, TraceJob, _environment
from tests.support import cpu_engine, preset_dict, sample_arrays

POLICY = [{"op": "rand_augment", "params": {"n": 2, "m": 12}}]


@pytest.fixture(scope="module")
def arrays():
    return sample_arrays(2, max_side=48)


engine = cpu_engine


def test_policies_traced_ahead_render_as_ones_traced_here(arrays, tmp_path):
    """The first job is traced by the worker itself, the next by a child it forks (with the
    worker's autograph rewrites): both load and render as pipelines traced here."""
    presets = [load(preset_dict(POLICY, seed=5)),
               load(preset_dict([{"op": "auto_augment", "params": {}}], seed=6))]
    here = engine(arrays, PipelineCache(tmp_path / "here"))
    expected = [here.render(preset, draws=2) for preset in presets]
    assert (here.builds, here.cache_hits) == (2, 0)
    ahead = engine(arrays, PipelineCache(tmp_path / "ahead"))
    renders = [(preset, 2) for preset in presets]
    assert not ahead.tracing(renders)
    assert ahead.trace_ahead(renders, workers=1) == 2
    assert ahead.tracing(renders[:1])  # the worker is still importing DALI
    assert ahead.trace_ahead(renders) == 0  # already under way
    for preset, want in zip(presets, expected, strict=True):
        got = ahead.render(preset, draws=2)
        assert not ahead.tracing([(preset, 2)])  # answered (and the render waited for it)
        for x, y in zip(want.images, got.images, strict=True):
            np.testing.assert_array_equal(x, y)
        assert [r.to_dict() for r in want.records] == [r.to_dict() for r in got.records]
    assert (ahead.builds, ahead.cache_hits) == (2, 2)  # loaded: not traced in this process
    assert ahead.trace_ahead(renders) == 0  # now in the cache
    here.close()
    ahead.close()


def test_only_slow_cacheable_pipelines_are_sent(arrays, tmp_path):
    eng = engine(arrays, PipelineCache(tmp_path))
    fast = load(preset_dict([{"op": "rotate", "params": {"angle": 10.0}}]))
    custom = load(preset_dict([{"op": "custom.vignette", "params": {}}, *POLICY]))
    assert eng.trace_ahead([(fast, 1), (custom, 1)]) == 0
    eng.set_labels([None] * len(arrays))  # label chains are never cached
    assert eng.trace_ahead([(load(preset_dict(POLICY)), 1)]) == 0
    eng.close()
    off = engine(arrays, PipelineCache(None))
    assert off.trace_ahead([(load(preset_dict(POLICY)), 1)]) == 0
    off.close()


def test_no_workers_on_a_machine_with_few_cores(arrays, tmp_path, monkeypatch):
    """Every kernel of a served app would start its own: under four cores, none."""
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: {0, 1})
    assert TraceAhead().workers == 0
    eng = engine(arrays, PipelineCache(tmp_path))
    assert eng.trace_ahead([(load(preset_dict(POLICY)), 1)]) == 0
    eng.close()
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(range(16)))
    assert TraceAhead().workers == 12


def test_a_failed_worker_is_logged_and_the_render_traces_it(arrays, tmp_path, caplog):
    ahead = TraceAhead(workers=1)
    bad = TraceJob("k" * 40, "raise ValueError('broken chain source')\n", 1, 2, "cpu", 1,
                   False, True, str(tmp_path))
    assert ahead.start([bad]) == 1
    with caplog.at_level(logging.WARNING):
        assert ahead.wait(bad.key) is False
    assert ahead.failed == 1 and "broken chain source" in caplog.text
    assert ahead.wait(bad.key) is False  # nothing pending any more
    ahead.close()


def test_closing_lets_an_idle_worker_exit_and_cleans_up_after_autograph(arrays, tmp_path,
                                                                         monkeypatch):
    """DALI's autograph writes each function it converts to a ``__autograph_generated_file*``
    source in the temporary folder and deletes it at exit: a worker killed while idle left
    them there for good (hundreds in a day of galleries). Closing ends an idle worker's input,
    so it exits by itself; one still tracing is killed at once with its children; either way
    no source is left: the worker's temporary folder is its own, removed at closing."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))  # the engine's temporary folder
    monkeypatch.setattr(tempfile, "tempdir", None)
    preset = load(preset_dict(POLICY, seed=5))
    code = engine(arrays, PipelineCache(None)).code(preset)
    jobs = [TraceJob(c * 40, code, preset.seed, 2, "cpu", 1, True, True, str(tmp_path / c))
            for c in "ce"]
    ahead = TraceAhead(workers=1)
    assert ahead.start(jobs) == 2  # the first traced by the worker, the second by a child
    assert all(ahead.wait(job.key) for job in jobs)
    worker = ahead._worker
    assert list(scratch.rglob("__autograph_generated_file*")), "autograph wrote no source"
    ahead.close()
    assert worker.process.returncode == 0  # it exited by itself, not killed
    assert not list(scratch.rglob("*"))

    busy = TraceAhead(workers=1)
    assert busy.start([TraceJob("d" * 40, code, preset.seed, 2, "cpu", 1, True, True,
                                str(tmp_path / "d"))]) == 1
    worker = busy._worker
    assert not worker.idle
    started = time.monotonic()
    busy.close()  # still importing DALI, its job unanswered: killed, not waited for
    assert time.monotonic() - started < 1.0
    assert worker.process.returncode is not None and worker.process.returncode < 0
    assert not list(scratch.rglob("*"))


def test_workers_trace_gpu_pipelines_without_seeing_a_gpu(arrays, tmp_path):
    """A worker only traces and serializes: it runs with no GPU visible (each one that saw the
    GPU held a CUDA context of ~520 MiB while it traced), and a GPU chain still traces there.
    The GPU twin (tests/gpu) loads such a pipeline and renders it."""
    preset = load(preset_dict(POLICY, seed=5))
    code = engine(arrays, PipelineCache(None)).code(preset)
    job = TraceJob("g" * 40, code, preset.seed, 2, "gpu", 1, True, True, str(tmp_path))
    ahead = TraceAhead(workers=1)
    assert ahead.start([job]) == 1
    assert ahead.wait(job.key) is True, "the worker could not trace a GPU chain"
    ahead.close()
    assert PipelineCache(tmp_path).has(job.key)
    env = _environment(str(tmp_path))
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["OPENBLAS_NUM_THREADS"] == "1"


def test_gallery_rows_traced_ahead_are_all_loaded(arrays, tmp_path):
    """``row_renders`` names exactly the pipelines ``render_row`` makes, in each mode (a
    sweep of a build-time magnitude, choices, draws): after tracing ahead, the policy rows
    trace nothing in the engine's process."""
    eng = engine(arrays, PipelineCache(tmp_path))
    plans = [plan_row(CATALOG[op]) for op in ("rand_augment", "auto_augment",
                                              "trivial_augment")]
    assert {p.mode for p in plans} == {"sweep", "choices", "draws"}
    started = sum(eng.trace_ahead(row_renders(p), workers=2) for p in plans)
    assert started == sum(len(row_renders(p)) for p in plans)
    for plan in plans:
        result = render_row(eng, plan)
        assert result.ok, result.error
    assert eng.builds == eng.cache_hits == started
    eng.close()


@pytest.fixture
def no_spare(monkeypatch):
    """A process with no worker started ahead yet, tracing ahead on (as on 4+ cores)."""
    monkeypatch.setattr(trace_ahead, "_SPARE", dict(trace_ahead._SPARE_START))
    monkeypatch.setattr(trace_ahead, "default_workers", lambda: 2)
    yield
    trace_ahead.release_spare()


def test_a_worker_started_ahead_warms_up_and_is_taken_by_the_first_engine(arrays, tmp_path,
                                                                         no_spare):
    """``prestart`` (once a process) starts a worker that traces every conditional operator's
    chain before its jobs come; the first engine tracing ahead takes it, and its pipelines
    render as ones traced here."""
    assert trace_ahead.prestart() is True
    assert trace_ahead.prestart() is False  # once a process
    warm = trace_ahead.spare_warm(120)
    conditional = [op for op, spec in CATALOG.items() if spec.conditionals]
    assert warm is not None and warm["error"] is None and warm["chains"] == len(conditional)
    assert trace_ahead.ahead_report() == {"warm_up": warm, "taken": False}
    presets = [load(preset_dict([{"op": op, "params": {}}], seed=3)) for op in conditional]
    renders = [(preset, 2) for preset in presets]
    ahead = engine(arrays, PipelineCache(tmp_path / "ahead"))
    assert ahead.trace_ahead(renders) == len(presets)
    assert trace_ahead.ahead_report()["taken"] is True
    here = engine(arrays, PipelineCache(tmp_path / "here"))
    for preset in presets:
        want, got = here.render(preset, draws=2), ahead.render(preset, draws=2)
        for x, y in zip(want.images, got.images, strict=True):
            np.testing.assert_array_equal(x, y)
    assert ahead.cache_hits == ahead.builds == len(presets)  # none traced in this process
    here.close()
    ahead.close()


def test_a_worker_started_ahead_is_let_go_when_the_gallery_needs_none(arrays, tmp_path,
                                                                      no_spare):
    """Everything cached: the gallery's call to trace ahead stops the worker (it would hold
    ~110 MB for hours in a kernel of the served app), and removes its folder."""
    preset = load(preset_dict(POLICY, seed=5))
    cache = PipelineCache(tmp_path)
    first = engine(arrays, cache)
    first.render(preset, draws=2)  # traced here, into the cache
    first.close()
    assert trace_ahead.prestart() is True
    worker = trace_ahead._SPARE["worker"]
    later = engine(arrays, cache)
    assert later.trace_ahead([(preset, 2)]) == 0
    assert worker.process.returncode is not None and trace_ahead._SPARE["worker"] is None
    assert trace_ahead.ahead_report()["taken"] is False  # let go, not taken
    assert not os.path.exists(worker.scratch)
    later.close()


def test_no_worker_ahead_where_tracing_ahead_is_off(monkeypatch, no_spare):
    monkeypatch.setattr(trace_ahead, "default_workers", lambda: 0)  # under MIN_CORES
    assert trace_ahead.prestart() is False and trace_ahead.ahead_report() is None
    monkeypatch.setattr(trace_ahead, "_SPARE", dict(trace_ahead._SPARE_START))
    monkeypatch.setattr(trace_ahead, "default_workers", lambda: 2)
    monkeypatch.setenv("DALI_GALLERY_CACHE", "off")  # nothing would be kept
    assert trace_ahead.prestart() is False and trace_ahead.spare_warm(0.1) is None
