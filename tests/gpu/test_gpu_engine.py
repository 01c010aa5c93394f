"""The GPU path: every operator on the GPU, preview == export bit for bit on the GPU, flat GPU
memory over long scrubs and rebuilds, and GPU JPEG encoding of previews."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.kept_pipelines import KEPT
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from tests.support import SAMPLES, first_batch, one_step, preset_dict, random_value

pytestmark = pytest.mark.gpu
N = 6


@pytest.fixture(scope="module")
def engine():
    eng = PreviewEngine("gpu", num_threads=4)
    assert eng.set_images(SAMPLES) == []
    yield eng
    eng.close()


def test_auto_picks_the_gpu():
    eng = PreviewEngine("auto")
    assert eng.device == "gpu"
    eng.close()


def test_gpu_preview_starts_from_the_mixed_decoder(engine, tmp_path):
    exported = first_batch(load(preset_dict([])), SAMPLES, N, tmp_path, device_id=0)
    for a, b in zip(engine.images, exported, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", list(CATALOG))
def test_every_operator_matches_export_on_gpu(engine, tmp_path, name):
    spec = CATALOG[name]
    preset = one_step(name, probability=1.0 if spec.policy else 0.5, **random_value(spec))
    render = engine.render(preset, draws=2)
    assert render.device == "gpu"
    exported = first_batch(preset, SAMPLES, N, tmp_path, device_id=0)
    for i, (a, b) in enumerate(zip(render.first_draw(), exported, strict=True)):
        assert a.shape == b.shape, f"sample {i}"
        assert np.array_equal(a, b), f"sample {i}: {np.count_nonzero(a != b)} values differ"


def test_chain_with_tail_matches_export_on_gpu(engine, tmp_path):
    preset = load(preset_dict([
        {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
        {"op": "jitter", "params": {"nDegree": 3}},
        {"op": "experimental.median_blur", "params": {"window_size": 5}},
        {"op": "hsv", "params": {"hue": {"uniform": [-20, 20]}}},
        {"op": "custom.vignette", "params": {"strength": {"uniform": [0.2, 0.8]}}},
    ], output={"resize_shorter": 160, "crop": [128, 128], "mean": [0.5], "std": [0.25],
               "mirror_probability": 0.5}))
    render = engine.render(preset, tail=True)
    exported = first_batch(preset, SAMPLES, N, tmp_path, device_id=0)
    for a, b in zip(render.first_draw(), exported, strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("pick", [1, 2, 3])
def test_groups_match_export_on_gpu(engine, tmp_path, pick):
    """The CPU parity tests of groups (tests/pipelines/test_parity.py), on the GPU: the pick
    is drawn on the CPU (fn.random.choice has no GPU kernel) and the children run on the GPU,
    median blur (GPU only) among them."""
    preset = load(preset_dict([
        {"one_of": [
            {"op": "rotate", "probability": 0.7, "params": {"angle": {"uniform": [-30, 30]}}},
            {"op": "hue", "params": {"hue": {"uniform": [-40, 40]}}},
            {"op": "experimental.median_blur", "params": {"window_size": 5}},
        ], "probability": 0.6, "pick": pick, "weights": [1, 2, 3]},
        {"op": "noise.gaussian", "probability": 0.5, "params": {"stddev": 8.0}},
    ], seed=13))
    render = engine.render(preset, draws=2)
    assert render.device == "gpu"
    exported = first_batch(preset, SAMPLES, N, tmp_path, device_id=0)
    for i, (a, b) in enumerate(zip(render.first_draw(), exported, strict=True)):
        assert a.shape == b.shape, f"sample {i}"
        assert np.array_equal(a, b), f"sample {i}: {np.count_nonzero(a != b)} values differ"


def test_a_cached_gpu_pipeline_renders_identically(engine, tmp_path):
    """A GPU pipeline loaded from the on-disk cache (a new kernel), and one taken built from
    the pipelines an earlier engine let go (its RNG state past the first draw), equal the
    traced one."""
    preset = load(preset_dict([
        {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
        {"op": "jitter", "params": {"nDegree": 3}},
        {"op": "rand_augment", "params": {"n": 2, "m": 12}},
    ], seed=21))
    cache = PipelineCache(tmp_path)
    renders = []
    for source in ("traced", "loaded", "kept"):
        if source == "loaded":
            KEPT.clear()
        eng = PreviewEngine("gpu", num_threads=4, cache=cache)
        eng.set_arrays(engine.images, engine.names)
        renders.append((eng.render(preset, draws=2, stream=True), eng.cache_hits,
                        eng.kept_hits))
        eng.render(preset, draws=2, advance=True)  # the state it lets go: past the first
        eng.close()
    assert [hits for _, *hits in renders] == [[0, 0], [1, 0], [0, 1]]
    traced = renders[0][0]
    for other, *_ in renders[1:]:
        for a, b in zip(traced.images, other.images, strict=True):
            np.testing.assert_array_equal(a, b)
        assert [r.to_dict() for r in traced.records] == [r.to_dict() for r in other.records]


def test_a_gpu_pipeline_traced_ahead_without_a_gpu_renders_identically(engine, tmp_path):
    """The trace-ahead workers see no GPU (no CUDA context each): the GPU pipeline they
    serialize loads and renders exactly as one traced in the engine's own process."""
    preset = load(preset_dict([
        {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
        {"op": "rand_augment", "params": {"n": 2, "m": 12}},
    ], seed=23))
    here = PreviewEngine("gpu", num_threads=4, cache=PipelineCache(tmp_path / "here"))
    ahead = PreviewEngine("gpu", num_threads=4, cache=PipelineCache(tmp_path / "ahead"))
    for eng in (here, ahead):
        eng.set_arrays(engine.images[:3], engine.names[:3])
    assert ahead.trace_ahead([(preset, 2)], workers=1) == 1
    traced, loaded = here.render(preset, draws=2), ahead.render(preset, draws=2)
    assert (here.cache_hits, ahead.cache_hits, ahead.builds) == (0, 1, 1)
    for a, b in zip(traced.images, loaded.images, strict=True):
        np.testing.assert_array_equal(a, b)
    assert [r.to_dict() for r in traced.records] == [r.to_dict() for r in loaded.records]
    here.close()
    ahead.close()


@pytest.mark.parametrize("dense", [False, True])
def test_a_render_keeps_its_pixels_after_later_renders(engine, dense):
    """A GPU render's images are views of its own host copy (no second copy): later renders
    must not write into them, for a batch of mixed sizes (per-sample views; the samples
    differ in size) and for one dense batch (a crop to one size)."""
    steps = [{"op": "rotate", "params": {"angle": {"uniform": [-30, 30]}}}]
    if dense:
        steps.append({"op": "random_resized_crop", "params": {"size": 96}})
    first = engine.render(load(preset_dict(steps)), draws=2)
    kept = [a.copy() for a in first.images]
    for seed in range(1, 6):
        engine.render(load(preset_dict(steps, seed=seed)), draws=2)
        engine.render(load(preset_dict([{"op": "hsv", "params": {"hue": 30.0}}])))
    for a, b in zip(first.images, kept, strict=True):
        np.testing.assert_array_equal(a, b)


def test_gpu_jpeg_encoding_of_previews(engine):
    render = engine.render(one_step("hue", hue=30.0), draws=2, encode="jpeg")
    assert len(render.encoded) == 2 * N
    assert all(b[:2] == b"\xff\xd8" for b in render.encoded)


def _gpu_used_mib() -> int:
    out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,"
                          "nounits", "-i", "0"], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[0])


def test_long_scrub_and_rebuilds_keep_gpu_memory_flat(engine):
    preset = load(preset_dict([
        {"op": "rotate", "params": {"angle": 0.0}},
        {"op": "gaussian_blur", "params": {"sigma": 1.0}},
        {"op": "noise.gaussian", "probability": 0.5, "params": {"stddev": 5.0}},
        {"op": "water", "params": {"ampl_x": 2.0}},
    ]))
    for k in range(50):  # warm-up: pools and caches reach their working size
        preset.steps[0].params["angle"] = float(k)
        engine.render(preset, draws=2)
    start = _gpu_used_mib()
    builds = engine.builds
    for k in range(1000):
        preset.steps[0].params["angle"] = float(k % 360)
        preset.steps[1].params["sigma"] = 0.5 + (k % 20) / 10
        engine.render(preset, draws=2)
    assert engine.builds == builds, "run-time parameter changes must not rebuild"
    mid = _gpu_used_mib()
    for k in range(200):  # structural edits: a build-time value changes every time
        preset.steps[3].params["ampl_x"] = 3.0 + k / 10
        engine.render(preset, draws=2)
    end = _gpu_used_mib()
    assert engine.builds == builds + 200
    print(f"GPU memory MiB: start {start}, after 1000 renders {mid}, after 200 rebuilds {end}")
    assert mid - start <= 64 and end - start <= 128, (start, mid, end)
