"""Lean origin traces: the preview's pipelines record no DALI-internal frames, other pipelines
keep DALI's full traces, and a run-time error in a pipeline loaded from the cache still names
its step."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.origin_trace import lean_traces
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from tests.support import preset_dict


def _dali_dir() -> bytes:
    import nvidia.dali

    return os.path.dirname(os.path.abspath(nvidia.dali.__file__)).encode()


def _policy_pipeline():
    """A rand_augment pipeline written as DALI's documentation does: its operators are made
    inside DALI's auto_aug code."""
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.auto_aug import rand_augment

    @pipeline_def(enable_conditionals=True, batch_size=2, num_threads=1, device_id=None, seed=1)
    def policy():
        images = fn.external_source(name="images", layout="HWC", dtype=types.UINT8)
        return rand_augment.rand_augment(images, n=1, m=5)

    return policy()


def test_lean_traces_drop_dali_frames_and_keep_the_callers():
    full = _policy_pipeline().serialize()
    with lean_traces():
        lean = _policy_pipeline().serialize()
    assert _dali_dir() in full  # DALI's own default, untouched outside the block
    assert _dali_dir() not in lean
    assert os.path.basename(__file__).encode() in lean  # the defining code's frames stay
    assert len(lean) < len(full) / 2


@pytest.mark.parametrize("chain", ["policy", "preview"])
def test_lean_traces_keep_exactly_the_frames_of_dalis_own_extraction(monkeypatch, chain):
    """The lean stack is taken without reading source files: the graph it records must be
    what DALI's own ``extract_stack`` (every line read) gives once the DALI-internal frames
    are dropped, byte for byte: a policy's operators under autograph, and a preview module's
    (a random draw, a probability, a fed value)."""
    from nvidia.dali._utils import dali_trace

    from dali_gallery.pipelines import origin_trace
    from dali_gallery.pipelines.codegen import preview_module
    from dali_gallery.pipelines.preview_pipeline import build_pipeline, import_source

    def make():
        if chain == "policy":
            return _policy_pipeline()
        preset = load(preset_dict([
            {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
            {"op": "hsv", "params": {"saturation": 1.3}}]))
        code, c = preview_module(preset)
        module = import_source(code, tmp, "dali_gallery_chain_lean_test")
        return build_pipeline(module, 1, 2, "cpu", 1, False, c.checkpoints, c.conditionals)

    import tempfile
    from pathlib import Path

    tmp = Path(tempfile.mkdtemp())
    with lean_traces():
        lean = make().serialize()
    origin_trace._install()
    wrapper = dali_trace.extract_stack
    real = wrapper.__closure__  # the wrapper keeps DALI's own function
    dalis = next(c.cell_contents for c in real if getattr(c.cell_contents, "__module__", "")
                 == dali_trace.__name__)
    inside = next(c.cell_contents for c in real if getattr(c.cell_contents, "cache_info", None))

    def dalis_filtered(start_frame=0, end_frame=None):
        frames = dalis(start_frame, end_frame)
        return [f for f in frames if not inside(f.filename)] or list(frames)[-1:]

    dalis_filtered.dali_gallery_lean = True  # lean_traces installs nothing over it
    monkeypatch.setattr(dali_trace, "extract_stack", dalis_filtered)
    with lean_traces():  # no frames of its own now: DALI's extraction, then the same filter
        reference = make().serialize()
    assert lean == reference


def test_other_threads_keep_full_traces_while_a_preview_is_traced():
    """The switch is per thread: a kernel thread defining its own pipeline meanwhile keeps
    DALI's frames."""
    inside, outside = threading.Event(), threading.Event()
    blobs: dict[str, bytes] = {}

    def other():
        inside.wait(30)
        blobs["other"] = _policy_pipeline().serialize()
        outside.set()

    t = threading.Thread(target=other)
    t.start()
    with lean_traces():
        inside.set()
        outside.wait(60)
        blobs["lean"] = _policy_pipeline().serialize()
    t.join()
    assert _dali_dir() in blobs["other"] and _dali_dir() not in blobs["lean"]


def test_nested_blocks_stay_lean_until_the_outer_one_ends():
    with lean_traces():
        with lean_traces():
            pass
        assert _dali_dir() not in _policy_pipeline().serialize()
    assert _dali_dir() in _policy_pipeline().serialize()


@pytest.mark.parametrize("policy", [False, True])
def test_a_cached_pipeline_still_names_the_failing_step(tmp_path, policy):
    """The step comes from the generated module's line in DALI's error: a pipeline loaded
    from the cache (another engine, as a new kernel) must still carry it."""
    steps = [{"op": "hue", "params": {"hue": 10.0}},
             {"op": "crop", "params": {"crop_w": 4000.0, "crop_h": 4000.0,
                                       "out_of_bounds_policy": "error"}}]
    if policy:
        steps.insert(0, {"op": "rand_augment", "params": {}})
    bad = preset_dict(steps)
    images = [np.full((64, 80, 3), 120, np.uint8), np.full((48, 48, 3), 60, np.uint8)]
    cache = PipelineCache(tmp_path)
    for run in range(2):
        engine = PreviewEngine("cpu", cache=cache)
        engine.set_arrays(images)
        with pytest.raises(StepError) as err:
            engine.render(load(bad))
        assert (err.value.step, err.value.op) == (len(steps) - 1, "crop"), run
        assert engine.cache_hits == run  # the second engine loaded it


def test_each_file_is_checked_on_disk_once_a_pipeline_not_once_an_operator(monkeypatch):
    """Every ``linecache.checkcache`` is a ``stat`` that lets another thread take the GIL: a
    policy's ~hundred operators used to check every file of their stacks each. Inside one
    block each file is checked once; the next block (the next pipeline) checks it again, so a
    file edited between two traces is read afresh."""
    import collections
    import linecache
    import sys

    from dali_gallery.pipelines import origin_trace

    checks: collections.Counter[str] = collections.Counter()
    real = linecache.checkcache

    def counting(filename=None):
        frame = sys._getframe(1)  # counted when taking a lean stack, not autograph's own
        while frame is not None and frame.f_code is not origin_trace._frames.__code__:
            frame = frame.f_back
        if frame is not None:
            checks[filename] += 1
        return real(filename)

    monkeypatch.setattr(linecache, "checkcache", counting)
    with lean_traces():
        _policy_pipeline()
    first = dict(checks)
    assert first and max(first.values()) == 1, first
    checks.clear()
    with lean_traces():
        _policy_pipeline()
    assert dict(checks) == first
