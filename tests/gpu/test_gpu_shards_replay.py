"""On the GPU: each shard's preview is its first training batch, and batch N replayed, saved and
restored from a DALI checkpoint are one batch, bit for bit (the CPU tests' twins)."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.generated_module import import_source
from dali_gallery.pipelines.preset import load
from dali_gallery.pipelines.replay import replay, shard_preview
from tests.jpegs import varied_jpegs
from tests.support import preset_dict

pytestmark = pytest.mark.gpu
PRESET = load(preset_dict([
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "hsv", "params": {"hue": {"uniform": [-20, 20]}}},
    {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
], seed=13, output={"resize_shorter": 96, "crop": [80, 80], "mean": [0.485, 0.456, 0.406],
                    "std": [0.229, 0.224, 0.225], "mirror_probability": 0.5}))
BATCH = 4


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpu_shards") / "data"
    varied_jpegs(folder, 12)
    return folder


@pytest.mark.parametrize("shard", [0, 1])
def test_gpu_shard_preview_is_the_shard_s_first_batch(images, shard):
    engine = PreviewEngine("gpu")
    preset, _ = shard_preview(engine, PRESET, images, shard_id=shard, num_shards=2,
                              batch_size=BATCH)
    render = engine.render(preset, tail=True)
    engine.close()
    trained = replay(PRESET, images, iteration=0, batch_size=BATCH, shard_id=shard,
                     num_shards=2, device="gpu", random_shuffle=False)
    for i in range(BATCH):
        np.testing.assert_array_equal(render.images[i], trained.images[i])


def test_gpu_batch_n_replayed_equals_the_checkpoint_restore(images, tmp_path):
    kw = {"batch_size": BATCH, "shard_id": 1, "num_shards": 2, "device": "gpu"}
    saved = replay(PRESET, images, iteration=5, **kw)
    module = import_source(export_code(PRESET), tmp_path, "gpu_replay_script")
    module.batch_at(str(images), BATCH, iteration=5, device_id=0, shard_id=1, num_shards=2,
                    checkpoint_every=1, checkpoint_dir=str(tmp_path))
    for n in (1, 5):
        restored = replay(PRESET, images, iteration=5, **kw,
                          restore=tmp_path / f"iteration_{n:08d}.cpt")
        for a, b in zip(saved.images, restored.images, strict=True):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(saved.labels, restored.labels)
