"""The benches' plain-DALI floor: what the preview asked of DALI is recorded while (and only
while) recording is on, and replaying it in plain DALI gives the preview's own pixels (the
first run of a random chain; every run of one without randomness: the preview restores its
first draw's RNG state before each run, plain DALI draws on)."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.pipelines import dali_record
from dali_gallery.pipelines.dali_record import recording, replay
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.fused_render import FusedRenders
from dali_gallery.pipelines.kept_pipelines import KEPT
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from tests.pipelines.test_fused_render import gallery_columns
from tests.support import cpu_engine, preset_dict, sample_arrays

CHAIN = [
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "hsv", "params": {"saturation": 1.4}},
    {"op": "noise.gaussian", "params": {"stddev": 12.0}},
]
FIXED = [
    {"op": "rotate", "params": {"angle": 20.0}},
    {"op": "hsv", "params": {"saturation": 1.4}},
    {"op": "brightness_contrast", "params": {"brightness": 1.2}},
]


@pytest.fixture(scope="module")
def arrays():
    return sample_arrays(3)


@pytest.mark.parametrize("chain", [CHAIN, FIXED], ids=["random", "fixed"])
@pytest.mark.parametrize("source", ["traced", "loaded", "kept"])
def test_replay_in_plain_dali_gives_the_previews_pixels(arrays, tmp_path, source, chain):
    """Traced by the engine, loaded from the disk cache, or taken built from the pipelines
    an earlier engine of the process let go (replayed built before the clock)."""
    cache = PipelineCache(tmp_path)
    preset = load(preset_dict(chain, seed=5))
    if source != "traced":
        warm = cpu_engine(arrays, cache)
        warm.render(preset, draws=2)
        warm.close()  # its pipeline is kept built
        if source == "loaded":
            KEPT.clear()
    eng = cpu_engine(arrays, cache)
    with recording() as work:
        first = eng.render(preset, draws=2)
        changed = eng.render(load(preset_dict([*chain[:2], {
            "op": "brightness_contrast", "params": {"brightness": 0.7}}] if chain is FIXED else
            [*chain[:2], {"op": "noise.gaussian", "params": {"stddev": 30.0}}], seed=5)),
            draws=2)
    assert (eng.cache_hits, eng.kept_hits) == {"traced": (0, 0), "loaded": (1, 0),
                                                "kept": (0, 1)}[source]
    assert (len(work.pipelines), work.runs) == (1, 2)  # a value change runs the same graph
    assert work.pipelines[0].prebuilt == (source == "kept")
    got: dict[int, list[np.ndarray]] = {}
    seconds = replay(work, lambda k, j, host: got.__setitem__(j, host[0]))
    assert seconds > 0
    renders = (first, changed) if chain is FIXED else (first,)
    for j, render in enumerate(renders):
        assert len(got[j]) == len(render.images) == 2 * len(arrays)
        for mine, plain in zip(render.images, got[j], strict=True):
            np.testing.assert_array_equal(mine, plain)
    assert not np.array_equal(got[0][0], got[1][0])  # the changed value reached DALI
    eng.close()


def assert_fused_replay(device: str, folder, columns: int = 12) -> None:
    """The gallery's first ``columns`` fusible columns in one fused render, replayed: each
    member's images are its outputs' first, then one output per record."""
    eng = PreviewEngine(device, num_threads=2, cache=PipelineCache(folder))
    eng.set_arrays(sample_arrays(2, max_side=160))
    presets = [p for p in gallery_columns(device) if eng.fusible(p)][:columns]
    with recording() as work:
        fused = eng.render_fused(presets)
    assert (len(work.pipelines), work.runs) == (1, 1)
    got: list[list] = []
    replay(work, lambda k, j, host: got.append(host))
    at = 0
    for preset, render in zip(presets, fused, strict=True):
        images = [np.array(x) for x in got[0][at]]
        assert len(images) == len(render.images)
        for mine, plain in zip(render.images, images, strict=True):
            np.testing.assert_array_equal(mine, plain)
        member = FusedRenders.member(eng, preset)
        assert member is not None
        at += 1 + len(member.chain.records)
    assert at == len(got[0])
    eng.close()


def test_the_fused_gallery_columns_replayed_give_the_previews_pixels(tmp_path):
    assert_fused_replay("cpu", tmp_path)


def test_saved_work_loads_and_replays_as_recorded(arrays, tmp_path):
    before = cpu_engine(arrays, PipelineCache(tmp_path / "cache"))
    before.render(load(preset_dict(CHAIN, seed=2)))
    before.close()  # kept built: taken by the next engine
    eng = cpu_engine(arrays, PipelineCache(tmp_path / "cache"))
    preset = load(preset_dict(FIXED, seed=2))
    with recording() as work:
        render = eng.render(preset, draws=2)
        eng.render(load(preset_dict(CHAIN, seed=2)))
        eng.render(load(preset_dict(CHAIN, seed=2)))  # the same kept pipeline: noted once
    work.save(tmp_path / "work.npz")
    again = dali_record.DaliWork.load(tmp_path / "work.npz")
    assert [p.blob for p in again.pipelines] == [p.blob for p in work.pipelines]
    setups = [(p.device_id, p.num_threads, len(p.runs), p.prebuilt) for p in work.pipelines]
    assert setups == [(None, 2, 1, False), (None, 2, 2, True)]
    assert [(p.device_id, p.num_threads, len(p.runs), p.prebuilt)
            for p in again.pipelines] == setups
    for mine, theirs in zip(work.pipelines[0].runs[0].items(),
                            again.pipelines[0].runs[0].items(), strict=True):
        assert mine[0] == theirs[0]
        for i, sample in enumerate(theirs[1]):
            np.testing.assert_array_equal(np.array(mine[1][i]), sample)
    got: dict[int, list] = {}
    replay(again, lambda k, j, host: got.setdefault(k, host[0]))
    for mine, plain in zip(render.images, got[0], strict=True):
        np.testing.assert_array_equal(mine, plain)
    eng.close()


@pytest.fixture
def rendered(arrays, tmp_path):
    """An engine that has rendered CHAIN once, before any recording, and that preset."""
    eng = cpu_engine(arrays, PipelineCache(tmp_path))
    preset = load(preset_dict(CHAIN))
    eng.render(preset)
    yield eng, preset
    eng.close()


def test_nothing_is_recorded_outside_the_block(rendered):
    eng, preset = rendered
    with recording() as work:
        pass
    eng.render(preset)
    assert work.pipelines == [] and work.runs == 0
    assert dali_record._ACTIVE is None


def test_a_run_of_a_pipeline_made_before_recording_is_counted_not_replayed(rendered):
    eng, preset = rendered
    with recording() as work:
        eng.render(preset)
    assert (work.pipelines, work.runs, work.runs_not_replayed) == ([], 0, 1)


def test_python_operators_are_counted_not_replayed(arrays, tmp_path):
    eng = cpu_engine(arrays, PipelineCache(tmp_path))
    with recording() as work:
        eng.render(load(preset_dict([{"op": "custom.vignette", "params": {"strength": 0.8}}])))
    assert (work.not_serializable, work.runs_not_replayed, work.pipelines) == (1, 1, [])
    eng.close()


def test_a_run_that_raised_is_counted_not_replayed(tmp_path):
    from nvidia.dali import fn, pipeline_def, types

    from dali_gallery.pipelines.fed_values import feed, run_fed
    from dali_gallery.pipelines.pipeline_cache import load_or_build

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, exec_dynamic=True,
                  prefetch_queue_depth=1)
    def cropped():
        x = fn.external_source(name="x", layout="HWC", dtype=types.UINT8)
        return fn.crop(x, crop=(64, 64), out_of_bounds_policy="error")

    def built():
        return load_or_build(PipelineCache(None), None, "cpu", 1, cropped, False)[0]

    small, large = [np.zeros((16, 16, 3), np.uint8)], [np.zeros((96, 96, 3), np.uint8)]
    with recording() as work:
        failing, working, unused = built(), built(), built()
        feed(failing, {"x": small})
        with pytest.raises((RuntimeError, IndexError)):
            run_fed(failing)  # the crop window lies outside the image
        feed(working, {"x": large})
        run_fed(working)
        feed(unused, {"x": small})  # fed, never run
    assert (len(work.pipelines), work.runs, work.runs_failed, work.runs_not_replayed) == \
        (3, 1, 2, 0)
    assert replay(work) > 0  # the run that raised is not replayed


def test_one_recording_at_a_time():
    with recording():
        second = recording()
        with pytest.raises(RuntimeError, match="already being recorded"):
            second.__enter__()
    assert dali_record._ACTIVE is None


def test_a_kept_pipeline_is_noted_with_the_graph_it_was_made_from(arrays, tmp_path):
    """Kept pipelines are noted with the graph the pipeline cache stored or loaded, not
    serialized again (DALI 2.4 on the GPU raised for 9 of a gallery's 20 deserialized ones)."""
    cache = PipelineCache(tmp_path)
    preset = load(preset_dict(FIXED, seed=4))
    first = cpu_engine(arrays, cache)
    first.render(preset)
    (built,) = first._own.entries.values()
    pipe = built.pipe
    first.close()

    def refuse() -> bytes:
        raise RuntimeError("not serializable here")

    pipe.serialize = refuse
    eng = cpu_engine(arrays, cache)
    with recording() as work:
        render = eng.render(preset)
    assert eng.kept_hits == 1 and work.not_serializable == 0
    (entry,) = work.pipelines
    (stored,) = cache.entries()
    assert entry.prebuilt and entry.blob == cache.load(stored.stem)[0]
    got: dict[int, list] = {}
    replay(work, lambda k, j, host: got.setdefault(j, host[0]))
    for mine, plain in zip(render.images, got[0], strict=True):
        np.testing.assert_array_equal(mine, plain)
    eng.close()


def test_work_saved_before_the_prebuilt_flag_still_loads(arrays, tmp_path):
    eng = cpu_engine(arrays, PipelineCache(tmp_path / "cache"))
    with recording() as work:
        eng.render(load(preset_dict(FIXED, seed=3)))
    eng.close()
    work.save(tmp_path / "new.npz")
    with np.load(tmp_path / "new.npz") as archive:
        old = {k: archive[k] for k in archive.files}
    old["p0_setup"] = old["p0_setup"][:3]  # device, threads, runs: the earlier layout
    np.savez(tmp_path / "old.npz", **old)
    (entry,) = dali_record.DaliWork.load(tmp_path / "old.npz").pipelines
    assert not entry.prebuilt and entry.blob == work.pipelines[0].blob
