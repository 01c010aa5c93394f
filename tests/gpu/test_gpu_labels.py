"""Labels on the GPU: the exported module's first batch (mixed decoding, the chain on the GPU,
labels moved on the CPU beside it) equals the GPU preview's first draw, bit for bit, images and
every label tensor; the CPU twin is tests/pipelines/test_export_labels.py, whose chains and
comparison this module runs."""

from __future__ import annotations

import pytest

from dali_gallery.pipelines.annotated_preview import load_annotated
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import load
from tests.coco_scene import make_coco
from tests.pipelines.test_export_labels import CHAINS, assert_same_batch, exported
from tests.support import preset_dict

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    return make_coco(tmp_path_factory.mktemp("coco-gpu"))


@pytest.mark.parametrize("name", ["rotate", "crop_paste", "resized_crop_warp", "random_steps",
                                  "tail"])
def test_gpu_first_batch_equals_the_gpu_preview(coco, tmp_path, name):
    images_dir, annotations = coco
    engine = PreviewEngine("gpu", num_threads=2)
    try:
        batch = load_annotated(engine, annotations, images_dir)
        steps, output = CHAINS[name]
        preset = load(preset_dict(steps, seed=13, output=output))
        render = engine.render(preset, tail=output is not None)
    finally:
        engine.close()
    module = exported(preset, batch.labels, tmp_path)
    images, labels = module.batch_at(str(images_dir), str(annotations), len(batch.files),
                                     device_id=0, random_shuffle=False, num_threads=2)
    assert_same_batch(images, labels, render)
