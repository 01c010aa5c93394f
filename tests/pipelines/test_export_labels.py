"""The exported module with labels: its first batch is the preview's first draw, bit for bit,
images and every label tensor, on a small COCO dataset made here (tests/coco_scene.py); what
cannot move labels is refused by name; the module is ruff-clean and its PyTorch recipe runs."""

from __future__ import annotations

import itertools
import json
import shutil

import numpy as np
import pytest

from dali_gallery.pipelines.annotated_preview import load_annotated
from dali_gallery.pipelines.annotations import load_coco
from dali_gallery.pipelines.coco_keypoints import keypoint_table, keypoints_lookup
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.export_labels import label_columns
from dali_gallery.pipelines.generated_module import import_source
from dali_gallery.pipelines.label_code import LabelRefused, LabelSet
from dali_gallery.pipelines.preset import load
from dali_gallery.pipelines.shards import shard_preset
from tests.coco_scene import EMPTY, IDS, make_coco
from tests.pipelines.test_export import assert_ruff_clean
from tests.support import preset_dict

RUFF = shutil.which("ruff") or "ruff"
NORMALISE = {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25]}
_names = itertools.count()

CHAINS = {
    "flip": ([{"op": "flip", "params": {"horizontal": True, "vertical": True}}], NORMALISE),
    "rotate": ([{"op": "rotate", "params": {"angle": {"uniform": [-40, 40]},
                                            "keep_size": False}}], None),
    "crop_paste": ([{"op": "crop", "params": {"crop_w": 50.0, "crop_h": 40.0,
                                              "crop_pos_x": 0.7}},
                    {"op": "paste", "params": {"ratio": 1.6, "paste_x": 0.2}}], None),
    "resized_crop_warp": ([{"op": "random_resized_crop", "params": {"size": 48}},
                           {"op": "warp_affine"},
                           {"op": "experimental.warp_perspective"}], None),
    "random_steps": ([
        {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
        {"op": "flip", "probability": 0.5},
        {"one_of": [{"op": "paste", "params": {"ratio": 1.4}},
                    {"op": "crop", "params": {"crop_w": 40.0, "crop_h": 30.0}}]},
        {"op": "hsv", "params": {"hue": {"uniform": [-20, 20]}}},
    ], None),
    # a shared run of moves in a chain with conditions (DALI's AutoGraph converts the
    # module): the preview moves the boxes after the run, the export in its Python step
    "run_then_random_colour": ([
        {"op": "random_resized_crop", "params": {"size": 48, "area_min": 0.3}},
        {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
        {"op": "rotate", "params": {"angle": {"uniform": [-25, 25]}}},
        {"op": "brightness_contrast", "probability": 0.5},
        {"one_of": [{"op": "hsv"}, {"op": "gaussian_blur"}]},
    ], None),
    # DALI's detection crop: the boxes and classes (and keypoints) it keeps, in the graph
    "bbox_crop": ([
        {"op": "random_bbox_crop", "params": {"scale_min": 0.3, "min_iou": 0.3}},
        {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
        {"op": "hsv", "params": {"hue": {"uniform": [-20, 20]}}},
    ], NORMALISE),
    "tail": ([{"op": "rotate", "params": {"angle": {"uniform": [-20, 20]}}}],
             {"resize_shorter": 40, "crop": [32, 30], "mirror_probability": 0.5, **NORMALISE}),
}


@pytest.fixture(scope="module")
def coco(tmp_path_factory):
    return make_coco(tmp_path_factory.mktemp("coco"))


@pytest.fixture(scope="module")
def preview(coco):
    images_dir, annotations = coco
    engine = PreviewEngine("cpu", num_threads=2)
    batch = load_annotated(engine, annotations, images_dir)
    yield engine, batch
    engine.close()


def exported(preset, labels: LabelSet, folder):
    return import_source(export_code(preset, labels=labels), folder, f"labels_{next(_names)}")


def assert_same_batch(images, labels, render) -> None:
    """Images and every label tensor of the exported batch are the preview's first draw."""
    moved = label_columns([out.labels for out in render.labels[: render.n_images]])
    assert set(moved) == set(labels)
    for i, image in enumerate(render.first_draw()):
        np.testing.assert_array_equal(images[i], image)
        for key, column in moved.items():
            assert labels[key][i].dtype == column[i].dtype, key
            assert labels[key][i].shape == column[i].shape, (key, i)
            assert labels[key][i].tobytes() == column[i].tobytes(), (key, i)


def test_the_preview_reads_the_dataset_in_the_readers_order(preview):
    _, batch = preview
    assert batch.files == [f"scene_{k}.jpg" for k in np.argsort(IDS)]
    assert batch.labels.masks and not batch.problems


@pytest.mark.parametrize("name", CHAINS)
def test_first_batch_equals_the_preview_bit_for_bit(preview, coco, tmp_path, name):
    engine, batch = preview
    steps, output = CHAINS[name]
    preset = load(preset_dict(steps, seed=13, output=output))
    render = engine.render(preset, tail=output is not None)
    module = exported(preset, batch.labels, tmp_path)
    images, labels = module.batch_at(str(coco[0]), str(coco[1]), len(batch.files),
                                     random_shuffle=False, num_threads=2)
    assert_same_batch(images, labels, render)
    empty = batch.files.index(f"scene_{EMPTY}.jpg")
    assert labels["boxes"][empty].shape == (0, 4)
    if name == "random_steps":  # both branches of the coins ran
        fired = [rec.fired[0] for rec in render.records]
        assert any(fired) and not all(fired)
    if name == "crop_paste":  # the window cut boxes: some dropped
        assert sum(len(b) for b in labels["boxes"]) < 8
    if name != "flip":  # the chain moved the labels: not the annotations' boxes any more
        ann = load_coco(coco[1], coco[0]).by_file()
        assert any(not np.array_equal(b, ann[f].boxes) for f, b in
                   zip(batch.files, labels["boxes"], strict=True))


def test_boxes_masks_only_module_without_masks(preview, coco, tmp_path):
    engine, batch = preview
    preset = load(preset_dict([{"op": "rotate", "params": {"angle": 25.0}}], seed=2))
    plain = PreviewEngine("cpu", num_threads=2)
    try:
        plain.set_arrays(engine.images, engine.names)
        plain.set_labels([s.__class__(s.boxes, s.classes, s.keypoints) for s in engine.labels])
        render = plain.render(preset)
    finally:
        plain.close()
    module = exported(preset, LabelSet(masks=False), tmp_path)
    images, labels = module.batch_at(str(coco[0]), str(coco[1]), len(batch.files),
                                     random_shuffle=False, num_threads=2)
    assert "masks" not in labels
    assert_same_batch(images, labels, render)


@pytest.mark.parametrize("name", ["bbox_crop", "run_then_random_colour", "tail"])
def test_a_detector_without_keypoints_gets_the_same_batch_from_fewer_operators(
        preview, coco, tmp_path, monkeypatch, name):
    """label_outputs without "keypoints" builds no keypoint lookup (a Python step per batch)
    and, through DALI's detection crop, no keypoint columns riding along (a dozen operators),
    and returns the same images, boxes and labels."""
    _, batch = preview
    steps, output = CHAINS[name]
    module = exported(load(preset_dict(steps, seed=13, output=output)), batch.labels, tmp_path)
    args = (str(coco[0]), str(coco[1]), len(batch.files))
    kw = {"num_threads": 2, "device_id": None, "random_shuffle": False}
    full = module.create_pipeline(*args, label_outputs=("boxes", "labels", "keypoints"), **kw)
    monkeypatch.setattr(module, "keypoints_lookup", None)  # the detector's must not call it
    detector = module.create_pipeline(*args, label_outputs=("boxes", "labels"), **kw)
    outputs = []
    for pipe in (full, detector):
        pipe.build()
        outputs.append([[np.array(t) for t in out] for out in pipe.run()[:3]])
    if name == "bbox_crop":  # a Python step gets (N, 0, 3) instead of the lookup's
        assert len(detector._ops) < len(full._ops) - 10  # DALI 2.4: the built graph's nodes
    for got, want in zip(outputs[1], outputs[0], strict=True):
        for a, b in zip(got, want, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    assert sum(len(b) for b in outputs[0][1]) > 0


def test_keypoint_table_is_what_the_loader_reads(coco):
    ann = load_coco(coco[1], coco[0])
    table = keypoint_table(str(coco[1]), masks=True)
    for img in ann.images:
        classes, points = table[img.image_id]
        assert classes.tobytes() == img.classes.tobytes()
        assert points.shape == img.keypoints.shape and points.tobytes() == img.keypoints.tobytes()
    lookup = keypoints_lookup(table)
    first = ann.images[0]
    assert lookup(first.classes.reshape(-1, 1), np.array([first.image_id])) is table[
        first.image_id][1]
    with pytest.raises(ValueError, match=f"image id {first.image_id}: the reader gave labels"):
        lookup(first.classes[::-1].copy(), np.array([first.image_id]))
    with pytest.raises(ValueError, match="image id 999 is not in the annotations file"):
        lookup(first.classes, np.array([999]))


def test_operators_that_cannot_move_labels_are_refused_by_name():
    preset = load(preset_dict([{"op": "flip"}, {"op": "water"}]))
    with pytest.raises(LabelRefused, match=r"step 1 \(water\) cannot be used with labels"):
        export_code(preset, labels=LabelSet())
    assert "def augment(images, seed=SEED)" in export_code(preset)  # without labels: fine


@pytest.mark.parametrize("masks", [True, False])
def test_the_module_is_ruff_clean(tmp_path, masks):
    steps = CHAINS["random_steps"][0] + CHAINS["crop_paste"][0]  # a group, coins, a tail
    output = {"resize_shorter": 64, "crop": [48, 48], "mirror_probability": 0.5, **NORMALISE}
    code = export_code(load(preset_dict(steps, output=output)), labels=LabelSet(masks=masks))
    assert_ruff_clean(code, tmp_path, "88")
    assert "ltrb=True" in code and "relative to the output image (0..1)" in code


def test_the_pytorch_detection_recipe_stacks_padded_boxes(preview, coco, tmp_path):
    torch_plugin = pytest.importorskip("nvidia.dali.plugin.pytorch")
    engine, batch = preview
    steps, _ = CHAINS["resized_crop_warp"]
    preset = load(preset_dict(steps, seed=13, output=NORMALISE))
    render = engine.render(preset, tail=True)
    module = exported(preset, batch.labels, tmp_path)
    n = len(batch.files)
    pipe = module.create_pipeline(str(coco[0]), str(coco[1]), n, num_threads=1, device_id=None,
                                  random_shuffle=False, pad_labels=True,
                                  label_outputs=("boxes", "labels"))
    loader = torch_plugin.DALIGenericIterator(pipe, ["images", "boxes", "labels"],
                                              reader_name="Reader")
    first = next(iter(loader))[0]
    assert tuple(first["images"].shape) == (n, 3, 48, 48)
    most = max(len(out.labels.boxes) for out in render.labels[:n])
    assert tuple(first["boxes"].shape) == (n, most, 4)
    for i, out in enumerate(render.labels[:n]):
        real = first["labels"][i] >= 0
        np.testing.assert_array_equal(first["labels"][i][real].numpy(), out.labels.classes)
        np.testing.assert_array_equal(first["boxes"][i][real].numpy(), out.labels.boxes)
        assert (first["labels"][i][~real] == -1).all()
    with pytest.raises(ValueError, match="label_outputs \\['classes'\\] is not allowed"):
        module.create_pipeline(str(coco[0]), str(coco[1]), 1, label_outputs=("classes",))


def test_a_batch_restored_from_a_checkpoint_has_the_same_labels(preview, coco, tmp_path):
    _, batch = preview
    preset = load(preset_dict(CHAINS["rotate"][0], seed=5))
    module = exported(preset, batch.labels, tmp_path)
    data = (str(coco[0]), str(coco[1]), 2)
    ck = tmp_path / "ck"
    ck.mkdir()
    start = module.batch_at(*data, iteration=1, checkpoint_every=1, checkpoint_dir=str(ck),
                            num_threads=1)
    again = module.batch_at(*data, iteration=1, restore=str(ck / "iteration_00000001.cpt"),
                            num_threads=1)
    first = module.batch_at(*data, iteration=0, num_threads=1)
    for i in range(2):
        np.testing.assert_array_equal(start[0][i], again[0][i])
        for key in start[1]:
            assert start[1][key][i].tobytes() == again[1][key][i].tobytes(), key
    assert any(not np.array_equal(x, y) for x, y in zip(start[0], first[0], strict=True))


def test_shard_one_of_two_previews_its_own_files_and_seed(coco, tmp_path):
    preset = load(preset_dict(CHAINS["rotate"][0], seed=9))
    engine = PreviewEngine("cpu", num_threads=2)
    try:
        batch = load_annotated(engine, coco[1], coco[0], batch_size=2, shard_id=1,
                               num_shards=2)
        render = engine.render(shard_preset(preset, 1))
    finally:
        engine.close()
    order = [f"scene_{k}.jpg" for k in np.argsort(IDS)]
    assert batch.files == order[len(IDS) // 2:][:2]  # shard 1 of 2 starts at file N // 2
    module = exported(preset, batch.labels, tmp_path)
    images, labels = module.batch_at(str(coco[0]), str(coco[1]), 2, shard_id=1, num_shards=2,
                                     random_shuffle=False, num_threads=2)
    assert_same_batch(images, labels, render)


def test_training_leaves_out_what_the_preview_left_out(coco, tmp_path, capsys):
    """The user's own file, with entries the checks leave out (a box outside its image, an
    unknown category, an image whose file is missing, a box past two edges by less than
    the tolerance: clipped): the exported module reads it as the preview did, bit for bit,
    and lists the same problems on stderr (it used to hand the file to the reader as is)."""
    images_dir, annotations = coco
    doc = json.loads(annotations.read_text(encoding="utf-8"))
    first = doc["images"][0]
    w = first["width"]
    extra = [{"bbox": [w - 5, 2, 25, 9], "category_id": 3},  # far past the right edge
             {"bbox": [2, 2, 9, 9], "category_id": 5},  # no category 5
             {"bbox": [-0.4, 3, w + 0.3, 9], "category_id": 3}]  # clipped: kept
    for n, ann in enumerate(extra):
        doc["annotations"].append({"id": 900 + n, "image_id": first["id"], "iscrowd": 0,
                                   "area": 1.0, "segmentation": [], **ann})
    doc["images"].append({"id": 77, "file_name": "gone.jpg", "width": 10, "height": 10})
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps(doc), encoding="utf-8")

    engine = PreviewEngine("cpu", num_threads=2)
    try:
        batch = load_annotated(engine, raw, images_dir)
        reasons = [str(p) for p in batch.problems]
        assert len(reasons) == 3, reasons
        preset = load(preset_dict(CHAINS["random_steps"][0], seed=5))
        render = engine.render(preset)
    finally:
        engine.close()
    module = exported(preset, batch.labels, tmp_path)
    capsys.readouterr()
    images, labels = module.batch_at(str(images_dir), str(raw), len(batch.files),
                                     random_shuffle=False, num_threads=2)
    assert_same_batch(images, labels, render)
    printed = [line.removeprefix("left out: ") for line in
               capsys.readouterr().err.splitlines() if line.startswith("left out: ")]
    assert printed == reasons
    assert all(b.min() >= 0 and b.max() <= 1 for b in labels["boxes"] if len(b))
    assert not any(5 in lab for lab in labels["labels"])
