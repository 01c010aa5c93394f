"""The training tail (``tail_lines``): a crop larger than the image pads it black, as
torchvision's ``CenterCrop`` does, in the preview and the export alike.

Regression: ``"output": {"crop": [224, 224]}`` without a resize failed on any smaller image
with DALI's "Slice can't be placed out of bounds ... input_shape={150 x 200 x 3}", naming
neither ``output.crop`` nor the image, in the preview and mid-epoch in training.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.annotated_preview import load_annotated
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.preset import load
from tests.coco_scene import make_coco
from tests.pipelines.test_export_labels import assert_same_batch, exported
from tests.support import first_batch, preset_dict

MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    """A 150x200 image (smaller than the crop) and a 333x517 one (larger), as PNGs."""
    folder = tmp_path_factory.mktemp("small")
    rng = np.random.default_rng(1)
    for name, (h, w) in {"a_small.png": (150, 200), "b_large.png": (333, 517)}.items():
        Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)).save(folder / name)
    return folder


def test_an_image_smaller_than_the_crop_is_padded_black():
    engine = PreviewEngine("cpu", num_threads=2)
    engine.set_arrays([np.full((150, 200, 3), 255, np.uint8)])
    preset = load(preset_dict([], output={"crop": [224, 224], "mean": MEAN, "std": STD}))
    out = engine.render(preset, tail=True).images[0]
    engine.close()
    assert out.shape == (3, 224, 224)
    black = -np.array(MEAN) / np.array(STD)
    white = (1 - np.array(MEAN)) / np.array(STD)
    np.testing.assert_allclose(out[:, 0, 0], black, rtol=1e-5)  # the border: normalised black
    np.testing.assert_allclose(out[:, 112, 112], white, rtol=1e-5)  # the image, centred
    rows = np.nonzero(np.isclose(out[0, :, 112], white[0]))[0]
    cols = np.nonzero(np.isclose(out[0, 112, :], white[0]))[0]
    assert (rows.min(), rows.max() + 1, cols.min(), cols.max() + 1) == (37, 187, 12, 212)


@pytest.mark.parametrize("output", [
    {"crop": [224, 224]},
    {"crop": [224, 160], "mean": MEAN, "std": STD, "mirror_probability": 0.5,
     "layout": "HWC"},
    {"crop": [240, 240], "mean": [0.5], "dtype": "float16"},
])
def test_the_padded_tail_is_the_export(small, tmp_path, output):
    preset = load(preset_dict([{"op": "hsv", "params": {"hue": {"uniform": [-20, 20]}}}],
                              output=output))
    assert 'out_of_bounds_policy="pad"' in export_code(preset)
    engine = PreviewEngine("cpu", num_threads=2)
    engine.set_images(small)
    render = engine.render(preset, tail=True)
    engine.close()
    exported_batch = first_batch(preset, small, 2, tmp_path)
    for a, b in zip(render.first_draw(), exported_batch, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_padded_tail_moves_labels_as_the_export(tmp_path):
    images_dir, annotations = make_coco(tmp_path / "coco")  # images of 45 to 91 px
    engine = PreviewEngine("cpu", num_threads=2)
    batch = load_annotated(engine, annotations, images_dir)
    preset = load(preset_dict([{"op": "flip"}], seed=13, output={
        "crop": [96, 100], "mirror_probability": 0.5, "mean": MEAN, "std": STD}))
    render = engine.render(preset, tail=True)
    engine.close()
    for out, image in zip(render.labels, render.first_draw(), strict=True):
        assert image.shape == (3, 96, 100)
        assert out.labels.mask.shape[:2] == (96, 100)
    module = exported(preset, batch.labels, tmp_path)
    images, labels = module.batch_at(str(images_dir), str(annotations), len(batch.files),
                                     random_shuffle=False, num_threads=2)
    assert_same_batch(images, labels, render)
