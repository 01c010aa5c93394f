"""The crop helpers never cut an empty image: ``random_bbox_crop`` at the ends of its sliders
(and the other crops at extreme values) on small and extreme-aspect images gives at least one
row and column, a blur after it does not crash the process, and the preview is the export;
the first step reads the images' size on the host (``source``: the fed batch, the JPEG
headers), any later one from the images, with the same windows.

Regression: DALI draws the box crop's width from ``scaling`` and its height from the aspect
ratio, so scale 0.05 with aspect 4 made windows under a pixel on 64 px images; ``fn.slice``
cut them to 0 rows and a following ``gaussian_blur`` or ``laplacian`` segfaulted the kernel.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines import codegen
from dali_gallery.pipelines.chain_parts import Chain
from dali_gallery.pipelines.codegen import preview_module
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.label_code import LabelSet
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from tests.coco_scene import make_coco
from tests.corpus import exif_rotated
from tests.jpegs import varied_jpegs
from tests.pipelines.test_export_labels import assert_same_batch, exported
from tests.support import REPO, first_batch, preset_dict

SIZES = [(64, 64), (64, 96), (150, 200), (333, 517), (1, 4000), (4000, 1), (3, 2000)]
"""(height, width) of the test images: the hunt's small JPEG sizes and extreme aspects."""


def bbox_crop(scale: float, aspect: float, min_iou: float = 0.0) -> dict:
    return {"op": "random_bbox_crop", "params": {
        "scale_min": scale, "scale_max": scale, "aspect_min": aspect, "aspect_max": aspect,
        "min_iou": min_iou}}


CROPS = [
    bbox_crop(0.05, 4.0, 0.3),  # the slider's own ends (the hunt's segfault)
    bbox_crop(0.05, 0.25),
    bbox_crop(0.05, 10.0),  # the declared bounds
    bbox_crop(0.01, 0.1),
    bbox_crop(1.0, 10.0),  # a whole side rescaled: under a pixel on a 1-px image
    bbox_crop(1.0, 0.1),
    {"op": "random_resized_crop", "params": {"size": 8, "area_min": 0.001, "area_max": 0.001,
                                             "aspect_min": 0.1, "aspect_max": 0.1}},
    {"op": "random_resized_crop", "params": {"size": 8, "area_min": 0.001, "area_max": 0.001,
                                             "aspect_min": 10.0, "aspect_max": 10.0}},
    {"op": "crop", "params": {"crop_h": 8.0, "crop_w": 4096.0, "crop_pos_x": 1.0,
                              "crop_pos_y": 1.0, "out_of_bounds_policy": "trim_to_shape"}},
]
AFTER = [{"op": "gaussian_blur", "params": {"sigma": 1.5}}, {"op": "laplacian"}]

# Renders every crop, then a blur and a laplacian, without and with labels (boxes, masks),
# and prints the shapes: run in a child process, as a crash would take pytest down with it.
SCRIPT = """
import json, sys
import numpy as np
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.label_render import SampleLabels
folder, presets = sys.argv[1], json.loads(sys.argv[2])
engine = PreviewEngine("cpu", num_threads=2)
assert engine.set_images(folder) == []
shapes = []
for preset in presets:
    shapes.append([list(x.shape) for x in engine.render(preset, draws=4).images])
box = np.array([[0.3, 0.3, 0.7, 0.7]], np.float32)
engine.set_labels([SampleLabels(box, np.array([1]), mask=np.ones((*a.shape[:2], 1), np.uint8))
                   for a in engine.images])
for preset in presets:
    render = engine.render(preset, draws=4)
    shapes.append([list(x.shape) for x in render.images])
    shapes.append([list(out.labels.mask.shape) for out in render.labels])
print(json.dumps(shapes))
"""


@pytest.fixture(scope="module")
def extreme(tmp_path_factory) -> Path:
    """PNGs (lossless: the preview and the export decode the same pixels) of every size."""
    folder = tmp_path_factory.mktemp("extreme")
    rng = np.random.default_rng(0)
    for k, (h, w) in enumerate(SIZES):
        pixels = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(folder / f"img_{k}_{h}x{w}.png")
    return folder


NOTHING = {"op": "flip", "params": {"horizontal": False, "vertical": False}}
"""A step that changes no pixel: the crop after it reads the images' own size (no source)."""


def test_no_crop_cuts_an_empty_image_and_a_blur_after_it_runs(extreme):
    presets = [preset_dict([crop, *AFTER], seed=seed) for crop in CROPS for seed in (7, 42)]
    presets += [preset_dict([NOTHING, crop, *AFTER]) for crop in CROPS[:6]]
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(extreme), json.dumps(presets)],
                          capture_output=True, text=True, timeout=500, cwd=REPO)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    shapes = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(shapes) == 3 * len(presets)
    for render in shapes:
        assert len(render) == 4 * len(SIZES)
        assert all(h >= 1 and w >= 1 for h, w, *_ in render), render


@pytest.mark.parametrize("crop", [bbox_crop(0.05, 4.0, 0.3), bbox_crop(1.0, 10.0)])
def test_a_thin_window_is_one_pixel_and_the_export_cuts_the_same(extreme, tmp_path, crop):
    preset = load(preset_dict([crop], seed=42))
    engine = PreviewEngine("cpu", num_threads=2)
    engine.set_images(extreme)
    render = engine.render(preset, draws=4)
    engine.close()
    tiles = [render.tile(i, d) for i in range(len(SIZES)) for d in range(render.draws)]
    assert all(min(x.shape[:2]) >= 1 for x in tiles)
    # windows under a pixel were drawn on images 3 px or more across: each became one pixel
    assert any(min(render.tile(i, d).shape[:2]) == 1 for i, (h, w) in enumerate(SIZES)
               if min(h, w) >= 3 for d in range(render.draws))
    exported_batch = first_batch(preset, extreme, len(SIZES), tmp_path)
    for a, b in zip(render.first_draw(), exported_batch, strict=True):
        np.testing.assert_array_equal(a, b)


def test_thin_windows_with_labels_match_the_export(tmp_path):
    images_dir, annotations = make_coco(tmp_path / "coco")
    from dali_gallery.pipelines.annotated_preview import load_annotated

    engine = PreviewEngine("cpu", num_threads=2)
    batch = load_annotated(engine, annotations, images_dir)
    preset = load(preset_dict([bbox_crop(0.05, 10.0)], seed=13))
    render = engine.render(preset)
    engine.close()
    assert any(x.shape[0] == 1 for x in render.first_draw())  # 0.005 of ~60 rows: widened
    for out, image in zip(render.labels, render.images, strict=True):
        assert out.labels.mask.shape[:2] == image.shape[:2]
        assert ((out.labels.boxes >= 0) & (out.labels.boxes <= 1)).all()
    module = exported(preset, batch.labels, tmp_path)
    images, labels = module.batch_at(str(images_dir), str(annotations), len(batch.files),
                                     random_shuffle=False, num_threads=2)
    assert_same_batch(images, labels, render)


def test_the_first_step_reads_the_size_on_the_host_and_later_ones_from_the_images():
    crop = bbox_crop(0.3, 1.0)
    first = preview_module(load(preset_dict([crop, NOTHING])))[0]
    assert "def augment(images, seed, source=None):" in first and "source=source," in first
    assert "SOURCE = True" in first
    later = preview_module(load(preset_dict([NOTHING, crop])))[0]
    assert "def augment(images, seed):" in later and "source=None," in later
    grouped = preview_module(load(preset_dict([{"one_of": [crop, NOTHING]}])))[0]
    assert "def augment(images, seed):" in grouped and "source=None," in grouped
    code = export_code(load(preset_dict([crop])), labels=LabelSet())
    assert "def augment(images, labels, seed=SEED, source=None):" in code
    assert "    source = fn.peek_image_shape(jpegs)" in code
    assert "augment(images, labels, seed=aug_seed, source=source)" in code
    later = export_code(load(preset_dict([NOTHING, crop])))
    assert "def augment(images, seed=SEED):" in later and "peek_image_shape" not in later


def test_windows_are_the_same_whichever_size_the_guard_reads(extreme, monkeypatch):
    """The same crop reading the fed batch's size (the first step) or the images' own (a
    chain whose steps never read the source) cuts the same tiles, thin windows included:
    the source is only where the size comes from."""
    preset = load(preset_dict([bbox_crop(0.05, 4.0, 0.3)], seed=42))
    tiles, codes = [], []
    for at_source in (True, False):
        monkeypatch.setattr(codegen, "Chain", partial(Chain, at_source=at_source))
        engine = PreviewEngine("cpu", num_threads=2, cache=PipelineCache(None))
        try:
            engine.set_images(extreme)
            codes.append(engine.code(preset))
            tiles.append(engine.render(preset, draws=4).images)
        finally:
            engine.close()
    assert "source=source," in codes[0] and "source=None," in codes[1]
    assert any(min(t.shape[:2]) == 1 for t in tiles[0])  # widened windows among them
    for a, b in zip(*tiles, strict=True):
        np.testing.assert_array_equal(a, b)


def test_the_jpeg_headers_give_the_decoded_size(tmp_path):
    """What the exported pipeline's ``source`` relies on: DALI's peek_image_shape (EXIF
    orientation applied) is the decoded image's size, for JPEGs of every kind (odd sizes,
    4:2:0 / 4:2:2 / 4:4:4, progressive, grayscale, EXIF-rotated) and the other formats."""
    from nvidia.dali import fn, pipeline_def, types

    files = varied_jpegs(tmp_path / "jpegs", 16)
    picture = Image.fromarray(np.zeros((37, 53, 3), np.uint8))
    for ext in ("png", "bmp", "tiff", "webp"):
        picture.save(tmp_path / "jpegs" / f"other.{ext}")
        files.append(tmp_path / "jpegs" / f"other.{ext}")
    (tmp_path / "jpegs" / "exif8.jpg").write_bytes(exif_rotated(64, 96, 8))
    files.append(tmp_path / "jpegs" / "exif8.jpg")

    @pipeline_def(batch_size=len(files), num_threads=2, device_id=None)
    def shapes():
        jpegs, _ = fn.readers.file(files=[str(f) for f in files])
        return fn.decoders.image(jpegs, output_type=types.RGB), fn.peek_image_shape(jpegs)

    pipe = shapes()
    pipe.build()
    images, peeked = pipe.run()
    for image, size, path in zip(images, peeked, files, strict=True):
        assert tuple(np.array(size)[:2]) == np.array(image).shape[:2], path.name
    assert np.array(images[len(files) - 1]).shape[:2] == (64, 96)  # stored 64 x 96, turned
