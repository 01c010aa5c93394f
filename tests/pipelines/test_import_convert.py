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


def test_random_affine_turns_clockwise_so_dalis_angle_is_its_negative():
    """torchvision's F.affine (RandomAffine, v1 and v2) turns clockwise for a positive angle,
    RandomRotation counter-clockwise as DALI's rotate does (numbers: test_import_parity)."""
    result = import_pipeline(
        "import torchvision.transforms as T\nfrom torchvision.transforms import v2\n"
        "T.Compose([v2.RandomAffine(degrees=(5, 25)), T.RandomAffine(15),"
        " v2.RandomAffine((30, 30), shear=10), v2.RandomRotation((5, 25))])")
    angles = [p["angle"] for op, _, p in steps_of(result) if op == "rotate"]
    assert angles == [{"uniform": [-25.0, -5.0]}, {"uniform": [-15.0, 15.0]}, -30.0,
                      {"uniform": [5.0, 25.0]}]
    shear = steps_of(result)[2][2]["shear_x"]["uniform"]  # shear keeps its sign (sheared
    assert steps_of(result)[2][0] == "warp_affine"  # first, then turned: test_import_parity)
    assert shear == pytest.approx([-np.tan(np.radians(10)), np.tan(np.radians(10))])


@pytest.mark.parametrize(("args", "interp", "verdict"), [
    ("degrees=10", "nn", "equivalent within 0 levels on 99.9%"),
    ("degrees=0, shear=10", "nn", "equivalent within 0 levels on 99.9%"),
    ("degrees=10, interpolation=v2.InterpolationMode.BILINEAR", "linear",
     "equivalent within 8 levels on 99%"),
    ("degrees=0, scale=(0.9, 1.1)", "nn", "different semantics: nearest neighbour with a zoom"),
    ("degrees=0, scale=(0.9, 1.1), interpolation=v2.InterpolationMode.BILINEAR", "linear",
     "equivalent within 8 levels on 99%"),
])
def test_random_affine_keeps_its_interpolation_and_claims_that_ones_bound(args, interp,
                                                                        verdict):
    """RandomAffine's default is NEAREST: imported as nn, with the nearest bound (the parity
    report checks both bounds; a zoom in nearest shifts whole rows, so it is different)."""
    result = import_pipeline(f"from torchvision.transforms import v2\n"
                             f"v2.Compose([v2.RandomAffine({args})])")
    (item,) = result.transforms
    assert {p["interp_type"] for _, _, p in steps_of(result)} == {interp}
    assert item.verdict.line().startswith(verdict)


NORMALIZE_UNSCALED = """
import torch
from torchvision.transforms import v2
t = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32), v2.Normalize({}, {}){}])
"""


@pytest.mark.parametrize(("mean", "std"), [([0.5] * 3, [0.5] * 3),
                                           ([123.675, 116.28, 103.53], [58.395, 57.12, 57.375])])
def test_normalize_after_an_unscaled_to_dtype_takes_grey_levels(mean, std):
    """ToDtype(float32) keeps 0-255 (scale=False by default): Normalize's mean and std are
    grey levels there, so pixel 200 becomes (200 - 0.5) / 0.5 = 399 (numbers against
    torchvision: test_import_parity)."""
    result = import_pipeline(NORMALIZE_UNSCALED.format(mean, std, ""))
    out = result.preset.output
    assert out.mean == pytest.approx([m / 255 for m in mean])
    assert out.std == pytest.approx([s / 255 for s in std])
    pixel = (200 - np.multiply(out.mean, 255)) / np.multiply(out.std, 255)
    assert pixel == pytest.approx([(200 - m) / s for m, s in zip(mean, std, strict=True)])
    scaled = import_pipeline(NORMALIZE_UNSCALED.format(mean, std, "").replace(
        "ToDtype(torch.float32)", "ToDtype(torch.float32, scale=True)")).preset.output
    assert (scaled.mean, scaled.std) == (tuple(mean), tuple(std))


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
    ssr = strong.preset.steps[3]  # ShiftScaleRotate(p=0.2): rotate + zoom on its one coin
    assert isinstance(ssr, Group) and (ssr.probability, ssr.pick) == (0.2, 2)
    assert [(c.op, c.probability) for c in ssr.children] == [("rotate", 1.0),
                                                             ("warp_affine", 1.0)]
    colour = strong.preset.steps[4]  # OneOf of CLAHE, Sharpen, Emboss, RBC: default p, equal
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
    assert [s.op for s in cls.preset.steps] == ["resize", "one_of", "crop", "brightness"]
    assert [c.op for c in cls.preset.steps[1].children] == ["rotate", "warp_affine"]
    shift = next(t for t in cls.transforms if t.call.name == "ShiftScaleRotate")
    assert shift.verdict.kind == "different" and "translation" in shift.verdict.reason


@pytest.mark.parametrize(("source", "refused", "kept"), [
    ("import torchvision.transforms as T\nT.Compose([T.ToTensor(), T.Normalize([0.5], [0.5]), "
     "T.ColorJitter(0.4), T.RandomSolarize(0.5), T.RandAugment(), T.RandomHorizontalFlip(), "
     "T.RandomRotation(10), T.GaussianBlur(3)])",
     ["ColorJitter", "RandomSolarize", "RandAugment"],
     ["RandomHorizontalFlip", "RandomRotation", "GaussianBlur"]),
    # a Kaggle habit: Normalize first, then more augmentations (albumentations examples)
    ("import albumentations as A\nA.Compose([A.Normalize(), A.RandomBrightnessContrast(p=1), "
     "A.GaussNoise(p=1), A.Solarize(p=1), A.HorizontalFlip(), A.GaussianBlur()])",
     ["RandomBrightnessContrast", "GaussNoise", "Solarize"], ["HorizontalFlip", "GaussianBlur"]),
])
def test_a_value_transform_after_normalize_is_refused(source, refused, kept):
    """After Normalize the library changes standardised values (torchvision's ColorJitter
    clamps them to 0-1, Solarize(0.5) thresholds at 0.5 standardised, level 191), while DALI's
    step would run on grey levels before the output tail normalises: these were imported as
    'equivalent' or 'identical' on the grey levels. Steps that only move pixels commute."""
    result = import_pipeline(source)
    status = {t.call.name: t for t in result.transforms}
    for name in refused:
        t = status[name]
        assert t.status == "not imported", name
        assert f"{name} comes after Normalize" in t.verdict.reason
        assert "while DALI's" in t.verdict.reason
        assert t.nearest == f"{name} before Normalize"
    assert all(status[name].status == "imported" for name in kept)
    before = import_pipeline(source.replace("Normalize", "Lambda"))  # no Normalize: imported
    assert all(t.status == "imported" for t in before.transforms if t.call.name in refused)


def test_a_random_crop_that_pads_with_a_colour_is_refused():
    """torchvision pads a small image with the fill (255 here); the import padded with 0 and
    claimed 'identical'. After ToTensor a fill of 1.0 is that same white."""
    import torch
    import torchvision.transforms as T

    out = T.RandomCrop(20, pad_if_needed=True, fill=255)(torch.full((3, 10, 10), 200,
                                                                    dtype=torch.uint8))
    assert set(out.unique().tolist()) == {200, 255}
    result = import_pipeline("import torchvision.transforms as T\nT.Compose(["
                             "T.RandomCrop(20, pad_if_needed=True, fill=255), "
                             "T.RandomCrop(20, pad_if_needed=True), T.ToTensor(), "
                             "T.RandomCrop(20, pad_if_needed=True, fill=1.0)])")
    white, black, _, white_after = result.transforms
    assert black.status == "imported"
    for item in (white, white_after):
        assert item.status == "not imported" and item.nearest == "fill=0"
        assert "pads with grey level 255; DALI's crop pads with 0" in item.verdict.reason


def test_a_random_affine_that_only_translates_is_not_imported():
    result = import_pipeline("import torchvision.transforms as T\nT.Compose(["
                             "T.RandomAffine(degrees=0, translate=(0.1, 0.1)), "
                             "T.RandomAffine(degrees=10, translate=(0, 0))])")
    moves, turns = result.transforms
    assert moves.status == "not imported" and moves.nearest.startswith("auto_aug.translate_x")
    assert "its one change is the random translation" in moves.verdict.reason
    assert turns.status == "imported" and "translat" not in turns.verdict.line()


def test_an_interpolation_given_as_a_pil_code_is_named_in_the_verdict():
    # facebookresearch/mae main_pretrain.py
    result = import_pipeline("import torchvision.transforms as transforms\n"
                             "transforms.Compose([transforms.RandomResizedCrop(224, scale=(0.2, "
                             "1.0), interpolation=3)])  # 3 is bicubic")
    assert result.transforms[0].verdict.reason == ("DALI's random_resized_crop resamples "
                                                   "linearly; torchvision uses bicubic")


def test_a_blur_kernel_torchvision_refuses_is_refused():
    import torchvision.transforms as T

    with pytest.raises(ValueError, match="odd and positive"):
        T.GaussianBlur(4)
    result = import_pipeline("import torchvision.transforms as T\nT.Compose(["
                             "T.GaussianBlur(4), T.GaussianBlur((5, 3))])")
    even, odd = result.transforms
    assert even.status == "not imported" and even.nearest == "kernel_size=[5, 5]"
    assert "kernel_size 4: torchvision takes odd, positive sizes" in even.verdict.reason
    assert odd.status == "imported"


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
    unscaled = import_pipeline(NORMALIZE_UNSCALED.format([127.5] * 3, [127.5] * 3,
                                                         ", v2.RandomErasing(p=1, value=-1)"))
    assert unscaled.preset.steps[0].params["fill_value"] == pytest.approx(0)
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


def test_a_fill_after_normalize_that_differs_per_channel_is_refused_not_averaged():
    """Normalize with a per-channel mean makes value 0 a different grey level in each channel
    (123.675, 116.28, 103.53 for ImageNet's); the catalog's fill is one level, so it is refused
    as single_fill refuses a per-channel fill, with the per-channel value that gives one level
    (numbers against torchvision: test_import_parity)."""
    source = ("import torchvision.transforms as T\nT.Compose([T.ToTensor(), T.Normalize(["
              "0.485, 0.456, 0.406], [0.229, 0.224, 0.225]), T.RandomErasing(p=1{}),"
              " T.RandomHorizontalFlip()])")
    result = import_pipeline(source.format(""))
    erasing, flip = result.transforms[2:]
    assert erasing.status == "not imported" and flip.status == "imported"
    assert "value=0.0 after Normalize is grey levels [123.675, 116.28, 103.53] per channel" \
        in erasing.verdict.reason
    assert erasing.nearest.startswith("value=[-0.165682, -0.039916, 0.182484] (grey 114 in")
    nearest = import_pipeline(source.format(", value=[-0.165682, -0.039916, 0.182484]"))
    assert nearest.preset.steps[0].params["fill_value"] == pytest.approx(114, abs=1e-3)
    rotate = import_pipeline(source.replace("T.RandomErasing(p=1{})", "T.RandomRotation(10)"))
    assert "fill=0 after Normalize is grey levels" in rotate.transforms[2].verdict.reason


# ---- a transform whose values the preset refuses is not imported alone ------------------------

TV = "import torchvision.transforms as T\nt = T.Compose([T.RandomHorizontalFlip(), {}])"
AL = "import albumentations as A\nt = A.Compose([A.HorizontalFlip(), {}])"


@pytest.mark.parametrize(("text", "name", "needle"), [
    # each of these refused the whole import with the output tail's PresetError
    (TV.format("T.ToTensor(), T.Normalize([0.5, 0.5], [0.2, 0.2])"), "Normalize",
     "mean [0.5, 0.5] is not allowed; expected 1 or 3"),
    (TV.format("T.ToTensor(), T.Normalize([0.5] * 3, [0, 0, 0])"), "Normalize",
     "std [0.0, 0.0, 0.0] is not allowed"),
    (TV.format("T.Resize(256), T.CenterCrop(300)"), "CenterCrop",
     "crop [300, 300] is not allowed with resize_shorter 256"),
    (AL.format("A.Normalize(std=1e-300)"), "Normalize", "beyond the float32 maximum"),
    (TV.format("T.RandomApply([T.ToTensor(), T.Normalize([0.5] * 3, [-1] * 3)], p=1)"),
     "Normalize", "std [-1.0, -1.0, -1.0] is not allowed"),
    # a container's p outside [0, 1] reached the preset as the group's probability
    (TV.format("T.RandomApply([T.RandomVerticalFlip(), T.ColorJitter(0.2)], p=3)"),
     "RandomApply", "p=3 is not a probability (expected [0, 1])"),
    (AL.format("A.OneOf([A.VerticalFlip(), A.Blur()], p=-1)"), "OneOf",
     "p=-1 is not a probability (expected [0, 1])"),
], ids=["normalize 2 values", "std 0", "crop over resize", "float32 overflow",
        "nested normalize", "RandomApply p=3", "OneOf p=-1"])
def test_a_transform_the_preset_refuses_is_not_imported_and_the_rest_imports(text, name,
                                                                            needle):
    result = import_pipeline(text)
    refused = [t for t in result.transforms if t.call.name == name]
    assert refused and refused[0].status == "not imported", [t.status for t in refused]
    assert needle in refused[0].verdict.reason, refused[0].verdict.reason
    assert refused[0].steps == [] and refused[0].tail == []
    first = result.transforms[0]
    assert first.status == "imported" and result.preset.steps[0].op == "flip"
    assert load(result.preset.to_dict()).to_dict() == result.preset.to_dict()


@pytest.mark.parametrize(("text", "name", "needle"), [
    # ZeroDivisionError / math domain error from the box sides
    (TV.format("T.RandomErasing(ratio=(0, 1))"), "RandomErasing",
     "ratio (0, 1) is not allowed; aspect ratios are above 0"),
    (TV.format("T.RandomErasing(ratio=(-1, 0.5))"), "RandomErasing",
     "ratio (-1, 0.5) is not allowed"),
    (TV.format("T.RandomErasing(scale=(-1, 0.5))"), "RandomErasing",
     "scale (-1, 0.5) is not allowed; torchvision takes areas between 0 and 1"),
    # ZeroDivisionError from the suggested grey level of an empty per-channel fill
    (TV.format("T.RandomPerspective(fill=[])"), "RandomPerspective", "fill [] holds no value"),
    (AL.format("A.Perspective(fill=[])"), "Perspective", "fill [] holds no value"),
], ids=["ratio 0", "ratio negative", "scale negative", "tv empty fill", "alb empty fill"])
def test_arguments_that_crashed_the_conversion_are_refused_by_name(text, name, needle):
    test_a_transform_the_preset_refuses_is_not_imported_and_the_rest_imports(text, name, needle)


@pytest.mark.parametrize("library,head,fill", [
    ("torchvision", "T.ToTensor(), T.Normalize(mean=[0.5] * 3, std=[0.0, 0.5, 0.5])",
     "T.RandomErasing(p=1, value=0)"),
    ("albumentations", "A.Normalize(mean=0.5, std=0.0)",
     "A.CoarseDropout(num_holes_range=(1, 1), fill=0, p=1)"),
])
def test_a_refused_normalize_leaves_later_fills_in_grey_levels(library, head, fill):
    """A Normalize the preset refuses (std 0) is not imported, so the fills after it are read
    as if it were not there: it used to leave its mean/std behind, and a fill of 0 became
    the 'mean colour' 127.5 of a normalisation the preset does not have."""
    r = import_pipeline((TV if library == "torchvision" else AL).format(f"{head}, {fill}"))
    normalize = next(t for t in r.transforms if t.call.name == "Normalize")
    assert normalize.status == "not imported" and "std" in normalize.verdict.reason
    fills = [v for s in r.preset.steps for k, v in s.params.items() if k == "fill_value"]
    assert fills and all(v == 0 for v in fills), fills


@pytest.mark.parametrize(("chain", "dtype"), [
    # float back to uint8: torchvision gives the grey levels again (x * 255.999, truncated)
    ("v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.ToDtype(torch.uint8, scale=True)",
     "uint8"),
    ("T.ToTensor(), T.ConvertImageDtype(torch.uint8)", "uint8"),
    # float to float never rescales: an earlier Normalize (or 0-255 floats) stay as they are
    ("v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize([0.5], [0.25]), "
     "v2.ToDtype(torch.float16, scale=True)", "float16"),
    ("v2.ToImage(), v2.ToDtype(torch.float32), v2.ToDtype(torch.float32, scale=True)", "float32"),
])
def test_a_dtype_conversion_after_another_gives_torchvisions_values(chain, dtype):
    """ToDtype(uint8, scale=True) after ToDtype(float32, scale=True) came out float32 in
    [0, 1] (the uint8 tail kept the float one's mean / std, so the preset forced float32);
    ToDtype(float16) after Normalize reset the tail to mean 0 / std 1, dropping the
    normalisation. The tail's output on a pixel ramp is compared with torchvision's."""
    torch = pytest.importorskip("torch")
    from torchvision import transforms as T
    from torchvision.transforms import v2

    r = import_pipeline(f"import torch\nimport torchvision.transforms as T\n"
                        f"from torchvision.transforms import v2\n"
                        f"t = v2.Compose([{chain}])\n")
    assert not r.not_imported
    out = r.preset.output
    assert out.dtype == dtype
    ramp = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(3, axis=2)
    expected = eval(f"v2.Compose([{chain}])",  # noqa: S307 - the test's own text
                    {"v2": v2, "T": T, "torch": torch})(ramp)
    expected = expected.float().permute(1, 2, 0).numpy()
    if out.mean is None:
        got = ramp.astype(np.float32)
    else:
        got = (ramp / 255.0 - np.asarray(out.mean)) / np.asarray(out.std)
    assert got == pytest.approx(expected, abs=1e-2)


def test_float_to_uint8_on_values_that_are_not_fractions_is_refused():
    r = import_pipeline("import torch\nfrom torchvision.transforms import v2\nt = v2.Compose(["
                        "v2.ToImage(), v2.ToDtype(torch.float32, scale=True), "
                        "v2.Normalize([0.5], [0.5]), v2.ToDtype(torch.uint8, scale=True)])\n")
    last = r.transforms[-1]
    assert last.status == "not imported"
    assert "uint8" in last.verdict.reason and "after Normalize" in last.verdict.reason
    assert r.preset.output.mean == (0.5,) and r.preset.output.dtype == "float32"
