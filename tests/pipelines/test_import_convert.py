"""Importing real pipelines from the libraries' documentation: every transform accounted for,
units converted to the catalog's, the preset valid, and the exported training module runs."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.importers import import_pipeline
from dali_gallery.pipelines.preset import Group, load
from tests.pipelines.import_examples import (
    ALB_CLASSIFICATION,
    ALB_KAGGLE,
    ALB_STRONG,
    DOC_PIPELINES,
    TV_CIFAR10,
    TV_DOCS_V2,
    TV_SIMCLR,
    TV_TRANSFER_LEARNING,
    TV_TRANSFER_LEARNING_VAL,
)
from tests.support import SAMPLES, first_batch


def steps_of(result):
    return [(s.op, s.probability, s.to_dict()["params"]) for s in result.preset.steps]


@pytest.mark.parametrize("name", list(DOC_PIPELINES))
def test_documentation_pipelines_import_into_valid_presets(name):
    result = import_pipeline(DOC_PIPELINES[name])
    again = load(result.preset.to_dict())
    assert again.to_dict() == result.preset.to_dict()
    assert result.transforms, name
    for t in result.transforms:  # every transform is accounted for
        assert t.status in ("imported", "tail", "conversion", "not imported")
        assert t.verdict.line()
        if t.status == "not imported":
            assert t.verdict.reason, t.call.name
        if t.status == "imported":
            assert t.steps, t.call.name
    covered = sorted({i for t in result.transforms for i in t.steps})
    assert covered == list(range(len(result.preset.steps)))


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DOC_PIPELINES))
def test_the_exported_module_of_each_imported_pipeline_runs(name, tmp_path):
    preset = import_pipeline(DOC_PIPELINES[name]).preset
    for _, step in preset.active_ops():  # run on the CPU: GPU-only operators are switched off
        step.enabled = CATALOG[step.op].cpu
    batch = first_batch(preset, SAMPLES, 2, tmp_path)
    assert len(batch) == 2
    out = preset.output
    for a in batch:
        assert np.isfinite(a.astype(np.float64)).all()
        if out is not None and out.crop:
            assert out.crop[0] in a.shape and out.crop[1] in a.shape


def test_torchvision_docs_pipeline():
    result = import_pipeline(TV_DOCS_V2)
    assert steps_of(result) == [
        ("random_resized_crop", 1.0, {"size": 224, "area_min": 0.08, "area_max": 1.0,
                                      "aspect_min": 0.75, "aspect_max": 4 / 3,
                                      "antialias": True}),
        ("flip", 0.5, {"horizontal": True, "vertical": False})]
    out = result.preset.output
    assert (out.layout, out.dtype, out.mean, out.std) == (
        "CHW", "float32", (0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    assert [t.status for t in result.transforms] == ["imported", "imported", "conversion",
                                                     "tail"]


def test_the_evaluation_transform_becomes_the_output_tail():
    result = import_pipeline(TV_TRANSFER_LEARNING_VAL)
    assert result.preset.steps == []
    out = result.preset.output
    assert (out.resize_shorter, out.crop) == (256, (224, 224))
    assert [t.status for t in result.transforms] == ["tail", "tail", "conversion", "tail"]
    train = import_pipeline(TV_TRANSFER_LEARNING)
    assert train.parsed.target == "data_transforms['train']"
    assert [s.op for s in train.preset.steps] == ["random_resized_crop", "flip"]


def test_units_are_converted_to_the_catalogs():
    result = import_pipeline(
        "import torchvision.transforms as T\nT.Compose([T.ColorJitter(0.4, 0.4, 0.4, 0.1),"
        " T.RandomRotation(15), T.RandomAffine(0, shear=10, fill=128),"
        " T.RandomAdjustSharpness(1.3, p=0.25)])")
    (jit, _, jp), (rot, _, rp), (aff, _, ap), (sharp, sp_, sp) = steps_of(result)
    assert jit == "color_twist" and jp["hue"] == {"uniform": [-36.0, 36.0]}
    assert jp["brightness"]["uniform"] == pytest.approx([0.6, 1.4])
    assert rot == "rotate" and rp == {"angle": {"uniform": [-15.0, 15.0]}, "keep_size": True,
                                      "fill_value": 0.0, "interp_type": "nn"}
    assert aff == "warp_affine" and ap["shear_x"]["uniform"] == pytest.approx(
        [-np.tan(np.radians(10)), np.tan(np.radians(10))])
    assert ap["fill_value"] == 128
    assert (sharp, sp_, sp["magnitude_bin"], sp["random_sign"]) == ("auto_aug.sharpness", 0.25,
                                                                    10, False)
    hsv = import_pipeline("import albumentations as A\nA.Compose([A.HueSaturationValue("
                          "hue_shift_limit=10, p=1)])")
    assert hsv.preset.steps[0].to_dict()["params"]["hue"] == {"uniform": [-20.0, 20.0]}


def test_containers_become_probabilities_and_groups():
    simclr = import_pipeline(TV_SIMCLR)
    ops = steps_of(simclr)
    assert ops[2][0] == "color_twist" and ops[2][1] == 0.8  # RandomApply([...], p=0.8)
    assert ops[3][:2] == ("saturation", 0.2)  # RandomGrayscale(p=0.2)
    assert ops[4][0] == "gaussian_blur" and ops[4][2]["sigma"] == {"uniform": [0.1, 2.0]}
    strong = import_pipeline(ALB_STRONG)
    by = {}
    for t in strong.transforms:
        by.setdefault(t.call.name, t)
    blurs = strong.preset.steps[2]  # OneOf([MotionBlur(p=.2), MedianBlur(p=.1), Blur(p=.1)])
    assert isinstance(blurs, Group)
    assert (blurs.probability, blurs.pick, blurs.weights) == (0.2, 1, [0.2, 0.1, 0.1])
    assert [c.op for c in blurs.children] == ["filter", "experimental.median_blur", "filter"]
    assert all(c.probability == 1.0 for c in blurs.children)  # OneOf forces the picked one
    assert by["MotionBlur"].status == "imported" and by["MotionBlur"].steps == [2]
    assert by["MotionBlur"].inside == "OneOf p=0.2"
    colour = strong.preset.steps[5]  # OneOf of CLAHE, Sharpen, Emboss, RBC: default p, equal
    assert isinstance(colour, Group) and (colour.probability, colour.weights) == (0.3, None)
    assert by["OpticalDistortion"].status == "not imported"  # no mapping: its OneOf is empty
    assert by["Transpose"].nearest == "RandomRotate90 + flip"
    noise = next(s for s in strong.preset.steps if s.op == "noise.gaussian")
    assert noise.to_dict()["params"]["stddev"]["uniform"] == pytest.approx([51.0, 112.2])
    assert noise.probability == 0.5
    assert [s.op for s in strong.preset.steps][:2] == ["rotate", "noise.gaussian"]


def test_the_docs_example_with_oneof_blocks_imports_every_transform_with_a_mapping():
    strong = import_pipeline(ALB_STRONG)
    mapped = [t for t in strong.transforms
              if t.rule is not None and t.rule.kind == "transform"]
    assert len(mapped) == 11
    assert all(t.status == "imported" and t.steps for t in mapped), [
        (t.call.name, t.verdict.line()) for t in mapped if t.status != "imported"]
    assert {t.call.name for t in strong.not_imported} == {
        "Transpose", "OpticalDistortion", "GridDistortion"}


def test_what_has_no_equivalent_is_listed_with_the_nearest_and_the_rest_imports():
    cifar = import_pipeline(TV_CIFAR10)
    crop = cifar.transforms[0]
    assert crop.status == "not imported" and "padding" in crop.verdict.reason
    assert "paste" in crop.nearest
    assert [s.op for s in cifar.preset.steps] == ["flip"]
    assert cifar.preset.output.mean == (0.4914, 0.4822, 0.4465)
    cls = import_pipeline(ALB_CLASSIFICATION)
    assert [s.op for s in cls.preset.steps] == ["resize", "rotate", "warp_affine", "crop",
                                                "brightness"]
    shift = next(t for t in cls.transforms if t.call.name == "ShiftScaleRotate")
    assert shift.verdict.kind == "different" and "translation" in shift.verdict.reason


def test_values_out_of_the_catalogs_bounds_are_refused_not_clamped():
    result = import_pipeline("import torchvision.transforms as T\nT.Compose([T.RandomRotation("
                             "500), T.Resize(256, foo=1), T.RandomHorizontalFlip(p=1.5),"
                             " T.RandomInvert()])")
    rot, resize, flip, inv = result.transforms
    assert rot.status == "not imported"
    assert "'angle'" in rot.verdict.reason and "[-360, 360]" in rot.verdict.reason
    assert "'foo' is not an argument of Resize" in resize.verdict.reason
    assert "p=1.5 is not a probability" in flip.verdict.reason
    assert inv.status == "imported" and [s.op for s in result.preset.steps] == [
        "auto_aug.invert"]


def test_normalize_before_erasing_moves_to_the_tail_and_the_fill_follows():
    result = import_pipeline(
        "import torchvision.transforms as T\nT.Compose([T.ToTensor(), T.Normalize([0.5, 0.5, "
        "0.5], [0.25, 0.25, 0.25]), T.RandomErasing(p=1, value=0)])")
    erase = result.preset.steps[0]
    assert erase.op == "erase" and erase.params["fill_value"] == pytest.approx(127.5)
    kaggle = import_pipeline(ALB_KAGGLE)
    assert kaggle.preset.output.layout == "CHW"
    holes = [s for s in kaggle.preset.steps if s.op == "erase"]
    assert len(holes) == 1 and holes[0].probability == 0.3


def test_saved_and_pasted_albumentations_pipelines_import_alike():
    A = importlib.import_module("albumentations")
    from tests.pipelines.import_examples import ALB_README

    pasted = import_pipeline(ALB_README).preset
    saved_json = A.to_dict(A.Compose([A.RandomCrop(width=256, height=256),
                                      A.HorizontalFlip(p=0.5),
                                      A.RandomBrightnessContrast(p=0.2)]))
    import json

    saved = import_pipeline(json.dumps(saved_json)).preset
    assert [s.to_dict() for s in saved.steps] == [s.to_dict() for s in pasted.steps]
