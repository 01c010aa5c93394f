"""Replay: batch N of a shard, as the exported training script writes it, as a DALI checkpoint
restores it, and as the preview shows a shard's first batch, all bit for bit on the CPU."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.preset import load
from dali_gallery.pipelines.replay import MAX_REPLAY_BATCHES, replay, shard_preview
from dali_gallery.pipelines.step_error import StepError
from tests.support import SAMPLES, import_export, preset_dict

PRESET = load(preset_dict([
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "hsv", "params": {"hue": {"uniform": [-20, 20]},
                             "saturation": {"uniform": [0.7, 1.3]}}},
    {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
], seed=21, output={"resize_shorter": 48, "crop": [40, 40], "mean": [0.485, 0.456, 0.406],
                    "std": [0.229, 0.224, 0.225], "mirror_probability": 0.5}))
BATCH, SHARD, SHARDS = 3, 1, 2


@pytest.fixture(scope="module")
def images(tmp_path_factory) -> Path:
    """Seven small photos of different sizes: batches of 3 of a shard wrap around the files
    and the shuffled reader crosses epochs before batch 5."""
    folder = tmp_path_factory.mktemp("replay") / "data"
    folder.mkdir()
    samples = sorted(SAMPLES.glob("*.jpg"))
    for i in range(7):
        img = Image.open(samples[i % len(samples)]).convert("RGB")
        img.resize((64 + 8 * i, 56 + 4 * i)).save(folder / f"img_{i}.jpg", quality=90)
    return folder


@pytest.fixture(scope="module")
def script_run(images, tmp_path_factory) -> dict:
    """The exported script, as a training run would use it: batches 0, 1 and 5 of shard 1 of
    2 (shuffled, the default), saving a checkpoint before every batch on the way to batch 5."""
    tmp = tmp_path_factory.mktemp("script")
    script = tmp / "augment.py"
    script.write_text(export_code(PRESET))
    out = {"checkpoints": tmp / "ck"}
    for n in (0, 1, 5):
        npz = tmp / f"batch_{n}.npz"
        extra = ["--checkpoint-every", "1", "--checkpoint-dir", str(out["checkpoints"])] \
            if n == 5 else []
        proc = subprocess.run(
            [sys.executable, str(script), "--images", str(images), "--batch-size", str(BATCH),
             "--shard", str(SHARD), "--num-shards", str(SHARDS), "--iteration", str(n),
             "--device", "cpu", "--out", str(npz), *extra],
            capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        out[n] = np.load(npz)
    return out


def _assert_same(replayed, npz) -> None:
    assert len(replayed.images) == BATCH
    for i, img in enumerate(replayed.images):
        np.testing.assert_array_equal(img, npz[f"image_{i:04d}"])
    np.testing.assert_array_equal(replayed.labels, npz["labels"])


@pytest.mark.parametrize("n", [0, 1, 5])
def test_replay_equals_the_script_and_the_checkpoint_restore(images, script_run, n):
    kw = {"iteration": n, "batch_size": BATCH, "shard_id": SHARD, "num_shards": SHARDS,
          "device": "cpu"}
    from_start = replay(PRESET, images, **kw)
    _assert_same(from_start, script_run[n])
    saved = script_run["checkpoints"] / f"iteration_{n:08d}.cpt"
    _assert_same(replay(PRESET, images, restore=saved, **kw), script_run[n])
    if n == 5:  # an earlier checkpoint, then three batches forward
        earlier = script_run["checkpoints"] / "iteration_00000002.cpt"
        _assert_same(replay(PRESET, images, restore=earlier, **kw), script_run[n])


def test_batches_differ_between_iterations(script_run):
    """Iterations are not the same batch again (the replay would prove nothing)."""
    assert not np.array_equal(script_run[0]["image_0000"], script_run[1]["image_0000"])
    assert not np.array_equal(script_run[1]["image_0000"], script_run[5]["image_0000"])


def test_a_checkpoint_of_other_settings_is_refused(images, script_run):
    saved = script_run["checkpoints"] / "iteration_00000003.cpt"
    with pytest.raises(ValueError, match=r"batch_size 3 \(this run: 2\)"):
        replay(PRESET, images, iteration=4, batch_size=2, shard_id=SHARD, num_shards=SHARDS,
               device="cpu", restore=saved)
    with pytest.raises(ValueError, match=r"shard_id 1 \(this run: 0\)"):
        replay(PRESET, images, iteration=4, batch_size=BATCH, shard_id=0, num_shards=SHARDS,
               device="cpu", restore=saved)
    other = load(preset_dict([{"op": "flip"}], seed=21))
    with pytest.raises(ValueError, match="another preset"):
        replay(other, images, iteration=4, batch_size=BATCH, shard_id=SHARD,
               num_shards=SHARDS, device="cpu", restore=saved)
    with pytest.raises(ValueError, match="state before batch 3, after batch 2"):
        replay(PRESET, images, iteration=2, batch_size=BATCH, shard_id=SHARD,
               num_shards=SHARDS, device="cpu", restore=saved)


def test_a_checkpoint_restored_on_another_dataset_is_refused(images, script_run, tmp_path):
    """A checkpoint records how many samples the reader listed: restored over a folder with a
    file more (or another folder), the run would give other batches without any error."""
    saved = script_run["checkpoints"] / "iteration_00000003.cpt"
    assert json.loads(Path(f"{saved}.json").read_text())["settings"]["samples"] == 7
    grown = tmp_path / "data"
    shutil.copytree(images, grown)
    shutil.copy(grown / "img_0.jpg", grown / "img_7.jpg")
    with pytest.raises(ValueError, match="saved over 7 samples, this run reads 8"):
        replay(PRESET, grown, iteration=4, batch_size=BATCH, shard_id=SHARD,
               num_shards=SHARDS, device="cpu", restore=saved)


def test_a_run_with_its_own_seed_restores_where_the_preset_has_that_seed(images, tmp_path):
    """The script's --seed S trains what the preset with seed S exports (the preset's seed
    is only the default): its checkpoint restores there, as `render --seed S --restore`
    does, and a checkpoint of another seed is still refused."""
    ck = tmp_path / "runs" / "ck"  # batch_at() makes it, as the script does
    kw = {"batch_size": BATCH, "shard_id": SHARD, "num_shards": SHARDS}
    module = import_export(PRESET, tmp_path)
    with pytest.raises(ValueError, match="checkpoint_every 2 needs checkpoint_dir"):
        module.batch_at(str(images), iteration=3, checkpoint_every=2, **kw)
    trained = module.batch_at(
        str(images), iteration=3, seed=5, checkpoint_every=2, checkpoint_dir=str(ck),
        num_threads=1, **kw)
    seeded = replace(PRESET, seed=5)
    again = replay(seeded, images, iteration=3, device="cpu",
                   restore=ck / "iteration_00000002.cpt", **kw)
    for got, want in zip(again.images, trained[0], strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(again.labels, trained[1])
    with pytest.raises(ValueError, match=r"seed 5 \(this run: 21\)"):
        replay(PRESET, images, iteration=3, device="cpu",
               restore=ck / "iteration_00000002.cpt", **kw)


@pytest.mark.parametrize("sidecar", [None, "[1, 2]", '{"iteration": "3", "settings": {}}',
                                     "not json"])
def test_a_checkpoint_without_its_settings_is_refused(images, script_run, tmp_path, sidecar):
    lone = tmp_path / "lone.cpt"
    lone.write_bytes((script_run["checkpoints"] / "iteration_00000001.cpt").read_bytes())
    if sidecar is not None:
        (tmp_path / "lone.cpt.json").write_text(sidecar)
    with pytest.raises(ValueError, match="with its .json beside it"):
        replay(PRESET, images, iteration=1, batch_size=BATCH, shard_id=SHARD,
               num_shards=SHARDS, device="cpu", restore=lone)


def test_budgets_are_checked_before_any_work(images):
    with pytest.raises(ValueError, match=f"more than {MAX_REPLAY_BATCHES}"):
        replay(PRESET, images, iteration=MAX_REPLAY_BATCHES, batch_size=BATCH, device="cpu")
    with pytest.raises(ValueError, match="batch size 0 is not allowed"):
        replay(PRESET, images, iteration=0, batch_size=0, device="cpu")
    with pytest.raises(ValueError, match="iteration -1"):
        replay(PRESET, images, iteration=-1, batch_size=BATCH, device="cpu")
    with pytest.raises(ValueError, match="7 file.*8 shards"):
        replay(PRESET, images, iteration=0, batch_size=BATCH, shard_id=0, num_shards=8,
               device="cpu")


def test_restoring_a_chain_dali_cannot_checkpoint_names_the_step(images, tmp_path):
    chain = load(preset_dict([{"op": "flip"}, {"op": "clahe"}]))
    with pytest.raises(StepError, match="checkpoint") as err:
        replay(chain, images, iteration=1, batch_size=BATCH, device="cpu",
               restore=tmp_path / "x.cpt")
    assert (err.value.step, err.value.op) == (1, "clahe")


@pytest.mark.parametrize("shard", [0, 1])
def test_shard_preview_first_draw_is_the_shard_s_first_batch(images, tmp_path, shard):
    """The preview of shard s (its first files, its seed) is the exported pipeline's first
    unshuffled batch of shard s, bit for bit, tail included."""
    engine = PreviewEngine("cpu")
    preset, batch = shard_preview(engine, PRESET, images, shard_id=shard, num_shards=SHARDS,
                                  batch_size=BATCH)
    render = engine.render(preset, draws=2, tail=True)
    engine.close()
    trained = replay(PRESET, images, iteration=0, batch_size=BATCH, shard_id=shard,
                     num_shards=SHARDS, device="cpu", random_shuffle=False)
    assert batch.labels == trained.labels.tolist()
    for i in range(BATCH):
        np.testing.assert_array_equal(render.images[i], trained.images[i])
    # the pipeline a training script builds itself gives the same batch
    pipe = import_export(PRESET, tmp_path).create_pipeline(
        str(images), BATCH, num_threads=1, device_id=None, shard_id=shard, num_shards=SHARDS,
        random_shuffle=False)
    pipe.build()
    direct, _ = pipe.run()
    for i in range(BATCH):
        np.testing.assert_array_equal(render.images[i], np.array(direct[i]))
    assert render.images[0].shape == (3, 40, 40)  # the tail ran: CHW crops
