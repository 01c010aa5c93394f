"""Albumentations transforms whose meaning hangs on a detail, checked against the installed
Albumentations itself: independent x/y scale in Affine / ShiftScaleRotate, Normalize's
max_pixel_value, translations that are zero, the 1.x arguments Albumentations 2 ignores (and
refuses inside Compose(strict=True)), and a malformed size refused for its transform alone."""

from __future__ import annotations

import importlib
import json
import warnings

import numpy as np
import pytest

from dali_gallery.pipelines.importers import import_pipeline

A = importlib.import_module("albumentations")
HEAD = "import albumentations as A\nA.Compose([\n"


def imported(*transforms: str):
    """The import of A.Compose([...]) of the transforms (one a line, from line 3 on)."""
    return import_pipeline(HEAD + "".join(f"    A.{t},\n" for t in transforms) + "])")


def library(code: str):
    """The transform built by Albumentations itself, and the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = eval(f"A.{code}", {"A": A})  # the test's own literals
    return t, [str(w.message) for w in caught]


def drawn_scales(code: str, n: int = 200) -> np.ndarray:
    """(x, y) scale pairs Albumentations draws for the transform."""
    t, _ = library(code)
    t.set_random_seed(0)
    img = np.zeros((60, 80, 3), np.uint8)
    return np.array([[p["scale"]["x"], p["scale"]["y"]] for p in (
        t.get_params_dependent_on_data({"shape": img.shape}, {"image": img})
        for _ in range(n))])


# ---- Affine / ShiftScaleRotate: x and y scale -----------------------------------------------

ANISOTROPIC = ["Affine(scale=(0.8, 1.2), p=1)", "Affine(scale={'x': (0.8, 1.2), 'y': 1.0})",
               "ShiftScaleRotate(shift_limit=0, scale_limit=0.2, rotate_limit=0, p=1)"]
ISOTROPIC = ["Affine(scale=(0.8, 1.2), keep_ratio=True, p=1)", "Affine(scale=1.2, p=1)",
             "Affine(scale={'x': 1.1, 'y': 1.1})",
             "ShiftScaleRotate(shift_limit=0, scale_limit=0, rotate_limit=15, p=1)"]


@pytest.mark.parametrize("code", ANISOTROPIC)
def test_independent_x_and_y_scale_is_reported_as_a_difference(code):
    scales = drawn_scales(code)
    assert np.ptp(scales[:, 0] / scales[:, 1]) > 0.1  # Albumentations stretches the image
    item = imported(code).transforms[0]
    assert item.status == "imported" and item.verdict.kind == "different"
    assert "x and y scale independently" in item.verdict.reason
    assert any("one zoom factor" in n and "keep_ratio=True" in n for n in item.notes)


@pytest.mark.parametrize("code", ISOTROPIC)
def test_one_scale_for_both_axes_stays_equivalent(code):
    scales = drawn_scales(code)
    assert np.array_equal(scales[:, 0], scales[:, 1])  # y follows x, or one value for both
    item = imported(code).transforms[0]
    assert item.verdict.kind == "equivalent" and item.verdict.levels == 1, item.verdict.line()
    assert not item.notes


def test_keep_ratio_with_two_scale_ranges_is_refused_as_albumentations_refuses_it():
    code = "Affine(scale={'x': (0.8, 1.2), 'y': 1.0}, keep_ratio=True)"
    with pytest.raises(ValueError, match="keep_ratio"):
        library(code)
    item = imported(code).transforms[0]
    assert item.status == "not imported"
    assert "scale x [0.8, 1.2] and y [1.0, 1.0] differ with keep_ratio=True" in \
        item.verdict.reason


def test_balanced_scale_over_unequal_halves_is_a_difference():
    item = imported("Affine(scale=(0.5, 1.2), keep_ratio=True, balanced_scale=True)")
    assert item.transforms[0].verdict.kind == "different"
    assert "balanced_scale" in item.transforms[0].verdict.reason
    even = imported("Affine(scale=(0.8, 1.2), keep_ratio=True, balanced_scale=True)")
    assert even.transforms[0].verdict.kind == "equivalent"  # equal halves: uniform all over


# ---- translations that are zero ---------------------------------------------------------------


@pytest.mark.parametrize("code, moves", [
    ("Affine(rotate=10, translate_px={'x': (0, 0), 'y': (0, 0)}, keep_ratio=True)", False),
    ("Affine(rotate=10, translate_percent=0.0, keep_ratio=True)", False),
    ("Affine(rotate=10, translate_px={'x': (-4, 4)}, keep_ratio=True)", True),
    ("ShiftScaleRotate(shift_limit=0.2, shift_limit_x=0, shift_limit_y=0, scale_limit=0)", False),
    ("ShiftScaleRotate(shift_limit=0, shift_limit_y=0.1, scale_limit=0)", True),
    ("ShiftScaleRotate(scale_limit=0)", True),  # the default shift_limit, 0.0625
])
def test_a_translation_is_reported_only_when_the_library_moves_the_image(code, moves):
    t, _ = library(code)
    ranges = t.translate_px if t.translate_percent is None else t.translate_percent
    assert any(v != 0 for r in ranges.values() for v in r) == moves
    item = imported(code).transforms[0]
    assert ("translation" in item.verdict.reason) == moves, item.verdict.line()
    assert any("translation dropped" in n for n in item.notes) == moves


@pytest.mark.parametrize("code", ["Affine(translate_percent=0.1, p=0.5)",
                                  "ShiftScaleRotate(shift_limit=0.1, scale_limit=0, "
                                  "rotate_limit=0, p=0.5)"])
def test_a_translation_alone_is_not_imported(code):
    """Its one change is the translation, which is dropped: it was counted 'imported' with
    no step ("3 of 3 transforms imported ... into 0 steps")."""
    result = imported(code)
    item = result.transforms[0]
    assert item.status == "not imported" and not result.preset.steps
    assert "its one change is the random translation" in item.verdict.reason
    assert item.nearest == "auto_aug.translate_x / translate_y"


# ---- Normalize --------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [
    "Normalize(mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25), max_pixel_value=127.5)",
    "Normalize(mean=(123.675, 116.28, 103.53), std=(58.395, 57.12, 57.375), "
    "max_pixel_value=1.0)",
    "Normalize()",
    "Normalize(mean=0.5, std=0.2, max_pixel_value=100)",
])
def test_normalize_matches_albumentations_for_any_max_pixel_value(code):
    result = imported(code)
    assert result.transforms[0].status == "tail"
    out = result.preset.output
    img = np.random.default_rng(0).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    ours = (img - np.asarray(out.mean) * 255) / (np.asarray(out.std) * 255)
    theirs = library(code)[0](image=img)["image"]
    np.testing.assert_allclose(ours, theirs, atol=1e-4)


@pytest.mark.parametrize("codes", [
    ("ToFloat(max_value=255)", "Normalize(mean=(0.485, 0.456, 0.406), std=(0.229, 0.224, "
     "0.225), max_pixel_value=1.0)"),
    ("ToFloat(max_value=65535)", "Normalize(mean=0.5, std=0.25, max_pixel_value=1.0)"),
    ("Normalize()", "ToFloat()"),  # float32 input: ToFloat leaves it as it is
    ("Normalize()", "ToFloat(max_value=2)"),
])
def test_a_normalize_or_to_float_after_the_other_matches_albumentations(codes):
    """ToFloat then Normalize(max_pixel_value=1.0) normalises the 0-1 values: the import read
    the Normalize as if on 0-255 (white came out 1100, not 2.2); a ToFloat after Normalize reset
    the tail to a plain division (Albumentations leaves float32 input alone)."""
    result = imported(*codes)
    assert all(t.status in ("tail", "conversion") for t in result.transforms)
    out = result.preset.output
    img = np.random.default_rng(0).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    ours = (img - np.asarray(out.mean) * 255) / (np.asarray(out.std) * 255)
    theirs = A.Compose([library(c)[0] for c in codes])(image=img)["image"]
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-5)


def test_normalize_at_max_pixel_value_127_5_gives_albumentations_number():
    out = imported("Normalize(mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25), "
                   "max_pixel_value=127.5)").preset.output
    assert (200 - out.mean[0] * 255) / (out.std[0] * 255) == pytest.approx(4.2745, abs=1e-4)


@pytest.mark.parametrize("code, needle", [
    ("Normalize(max_pixel_value=None)", "max_pixel_value must be a number, got None"),
    ("Normalize(max_pixel_value=0)", "max_pixel_value 0 must be positive"),
    ("Normalize(mean=(1, 2, 3, 4), std=(1, 1, 1, 1))", "has 4 values"),
])
def test_a_normalize_the_tail_cannot_hold_is_refused_alone(code, needle):
    result = imported("HorizontalFlip()", code)
    flip, norm = result.transforms
    assert flip.status == "imported" and norm.status == "not imported"
    assert needle in norm.verdict.reason, norm.verdict.reason
    assert result.preset.output is None


# ---- fills after Normalize / ToFloat ---------------------------------------------------------

FILLED = ["Rotate(limit=(45, 45), fill={f}, p=1)", "Affine(rotate=45, fill={f}, p=1)",
          "Perspective(scale=(0.1, 0.1), fill={f}, p=1)",
          "CoarseDropout(num_holes_range=(1, 1), hole_height_range=(0.5, 0.5), "
          "hole_width_range=(0.5, 0.5), fill={f}, p=1)"]


@pytest.mark.parametrize("code", FILLED)
def test_a_fill_after_normalize_is_in_normalised_units(code):
    """After Normalize Albumentations fills with the value as it is (a Kaggle pipeline's
    CoarseDropout(fill=0) after Normalize fills with the mean colour, not black); DALI's steps
    run before the tail normalises, so the fill is the grey level that normalises to it."""
    head = "Normalize(mean=0.5, std=0.25)"
    if not code.startswith("Perspective"):  # its corners move inwards: it shows no border
        t, _ = library(f"Compose([A.{head}, A.{code.format(f=-1)}])")
        out = t(image=np.full((32, 32, 3), 200, np.uint8))["image"]
        assert np.isclose(out, -1).all(axis=-1).any()  # the fill as written is in the output
    result = imported(head, code.format(f=-1))
    fills = {c.to_dict()["params"]["fill_value"] for s in result.preset.steps
             for c in getattr(s, "children", [s])}
    assert fills == {0.5 * 255 - 0.25 * 255}, fills  # normalises to -1
    assert result.transforms[1].status == "imported"


@pytest.mark.parametrize("code", [*FILLED, "GridDropout(unit_size_range=(10, 20), fill={f})"])
def test_a_fill_that_normalises_to_a_colour_per_channel_is_refused(code):
    result = imported("Normalize()", code.format(f=0))
    item = result.transforms[1]
    assert item.status == "not imported"
    assert "fill=0 after Normalize is grey levels [123.675, 116.28, 103.53]" in \
        item.verdict.reason


def test_a_fill_after_to_float_is_a_fraction_of_max_value():
    result = imported("ToFloat(max_value=100)", "Rotate(limit=10, fill=0.5, p=1)")
    assert result.preset.steps[0].to_dict()["params"]["fill_value"] == 50.0


def test_grid_dropout_fills_black_only():
    item = imported("GridDropout(unit_size_range=(10, 20), fill=128)").transforms[0]
    assert item.status == "not imported" and item.nearest == "fill=0.0"
    assert "fill=128 is grey level 128 here; DALI's grid_mask masks with black" in \
        item.verdict.reason
    after = imported("Normalize()", "GridDropout(unit_size_range=(10, 20))").transforms[1]
    assert after.status == "not imported"  # the nearest is black there, not a mean grey
    assert after.nearest == ("fill=[-2.117904, -2.035714, -1.804444] (black: DALI's grid_mask "
                             "masks with black)")
    black = imported("Normalize()", "GridDropout(unit_size_range=(10, 20), "
                     "fill=(-2.117904, -2.035714, -1.804444))").transforms[1]
    assert black.status == "imported"


# ---- the output tail applies to every sample ----------------------------------------------------


@pytest.mark.parametrize("code", ["A.Normalize(p=0.5)", "A.ToFloat(p=0.5)",
                                  "ToTensorV2(p=0.5)"])
def test_a_conversion_on_a_coin_is_refused(code):
    """Albumentations leaves half the images as they were (uint8 beside float32, HWC beside
    CHW); the output tail converts every sample, so the import claimed a conversion of all."""
    from albumentations.pytorch import ToTensorV2

    c = A.Compose([eval(code, {"A": A, "ToTensorV2": ToTensorV2})])  # the test's own literal
    c.set_random_seed(0)
    img = np.zeros((8, 6, 3), np.uint8)
    kinds = {(str(o.dtype), tuple(o.shape)) for o in (c(image=img)["image"] for _ in range(64))}
    assert len(kinds) == 2, kinds  # some converted, some not
    result = import_pipeline("import albumentations as A\nfrom albumentations.pytorch import "
                             f"ToTensorV2\nA.Compose([A.HorizontalFlip(), {code}])")
    item = result.transforms[1]
    assert item.status == "not imported" and item.nearest == "p=1"
    assert "p=0.5): the output tail applies to every sample, Albumentations to 50%" in \
        item.verdict.reason
    assert result.preset.output is None


def test_smallest_max_size_on_a_coin_stays_a_step():
    """At the end of the pipeline SmallestMaxSize(INTER_AREA) is the tail's resize, which
    resizes every sample: with p=0.5 it became that, and half the images lost their coin."""
    result = imported("HorizontalFlip()", "SmallestMaxSize(max_size=256, interpolation=3, p=0.5)")
    assert result.preset.output is None
    assert [(s.op, s.probability) for s in result.preset.steps] == [("flip", 0.5),
                                                                    ("resize", 0.5)]
    whole = imported("HorizontalFlip()", "SmallestMaxSize(max_size=256, interpolation=3)")
    assert whole.preset.output.resize_shorter == 256


# ---- padding crops, grey outputs --------------------------------------------------------------


@pytest.mark.parametrize(("code", "needle"), [
    ("RandomCrop(height=20, width=20, pad_if_needed=True, fill=255, p=1)",
     "fill=255 pads with grey level 255; DALI's crop pads with 0"),
    ("CenterCrop(height=20, width=20, pad_if_needed=True, border_mode=4, p=1)",
     "border_mode 4: DALI's warps fill with a constant"),
])
def test_a_crop_that_pads_otherwise_than_with_black_is_refused(code, needle):
    """The library pads a 10x10 image with the fill (or reflects it); the import dropped both
    and claimed 'identical', padding with 0."""
    out = library(code)[0](image=np.full((10, 10, 3), 200, np.uint8))["image"]
    assert np.unique(out).tolist() != [0, 200]
    item = imported(code).transforms[0]
    assert item.status == "not imported" and needle in item.verdict.reason


def test_a_random_crop_that_pads_says_where_the_library_puts_the_image():
    item = imported("RandomCrop(height=20, width=20, pad_if_needed=True, p=1)").transforms[0]
    assert item.status == "imported"
    assert any("pad_position='center'" in n for n in item.notes), item.notes


def test_to_gray_with_one_output_channel_says_three_are_kept():
    out = library("ToGray(num_output_channels=1, p=1)")[0](image=np.zeros((4, 6, 3), np.uint8))
    assert out["image"].shape in ((4, 6), (4, 6, 1))  # one channel
    item = imported("ToGray(num_output_channels=1, p=1)").transforms[0]
    assert item.notes == ["3 channels are kept (grey in each); Albumentations returns 1"]


def test_motion_blur_names_the_line_lengths_it_was_given():
    assert library("MotionBlur(blur_limit=5)")[0].blur_limit == (3, 5)
    item = imported("MotionBlur(blur_limit=5)").transforms[0]
    assert "a random line of 3-5 px" in item.verdict.reason


def test_bbox_params_say_what_becomes_of_the_box_thresholds():
    """jokober/BirdMOT: a detection Compose whose boxes Albumentations drops under 10% visible
    or 1024 px; dali-gallery's labels drop under 25% kept, and nothing said so."""
    source = ("import albumentations as A\ntransform = A.Compose([A.RandomCrop(width=450, "
              "height=450), A.HorizontalFlip(p=0.5)], bbox_params=A.BboxParams(format='coco', "
              "min_area=1024, min_visibility=0.1, label_fields=['class_labels']))")
    note = ("bbox_params are not imported (a preset holds no label settings): with labels, "
            "dali-gallery drops a box that keeps less than 25% of its area after a step; this "
            "Compose has Albumentations drop boxes under min_visibility=0.1 of their area and "
            "min_area=1024 px")
    assert note in import_pipeline(source).notes
    t = eval(source.split("transform = ", 1)[1], {"A": A})  # the test's own literal
    saved = import_pipeline(json.dumps(A.to_dict(t)))  # a saved pipeline says it too
    assert note in saved.notes
    assert not any("bbox_params" in n for n in imported("HorizontalFlip()").notes)


@pytest.mark.parametrize(("code", "sizes"), [
    ("MedianBlur(blur_limit=4, p=1)", {"choice": [3, 5]}),
    ("MedianBlur(blur_limit=(4, 6), p=1)", {"choice": [5, 7]}),
    ("MedianBlur(blur_limit=5, p=1)", {"choice": [3, 5]}),
])
def test_an_even_blur_limit_is_read_as_albumentations_rounds_it_up(code, sizes):
    """Albumentations 2 makes every kernel bound odd (4 -> 5); MedianBlur(blur_limit=4) was
    imported as window 3 only and claimed 'identical'."""
    lo, hi = library(code)[0].blur_limit
    assert sizes["choice"] == list(range(lo, hi + 1, 2))
    item = imported(code)
    assert item.preset.steps[0].to_dict()["params"]["window_size"] == sizes
    assert bool(item.transforms[0].notes) == ("5," not in code)
    blur = imported(code.replace("MedianBlur", "Blur")).transforms[0]
    assert f"Albumentations draws {lo} to {hi} px" in blur.verdict.reason


# ---- transforms Albumentations 2 removed ------------------------------------------------------


def test_a_transform_albumentations_2_removed_is_named_so_with_its_replacement():
    """Kaggle notebooks still write A.Cutout, A.JpegCompression, A.RandomBrightness: the import
    said 'no mapping in dali-gallery yet', as if the pipeline ran and only the mapping lacked."""
    from dali_gallery.pipelines.importers.albumentations_legacy import REMOVED

    for old, new in REMOVED.items():
        assert not hasattr(A, old), old
        assert all(hasattr(A, n.split("(")[0].strip()) for n in new.split(" / ")), new
    item = imported("Cutout(num_holes=8, max_h_size=8, max_w_size=8, p=0.5)").transforms[0]
    assert item.status == "not imported" and item.nearest == "A.CoarseDropout"
    assert "albumentations.Cutout is an Albumentations 1.x transform that Albumentations 2 " \
        "removed" in item.verdict.reason


# ---- arguments of Albumentations 1.x ---------------------------------------------------------

LEGACY = [  # (1.x call, the same without the 1.x argument, the 2.x argument, the 1.x one)
    ("HorizontalFlip(always_apply=True)", "HorizontalFlip()", "p", "always_apply"),
    ("Normalize(always_apply=True)", "Normalize()", "p", "always_apply"),
    ("CoarseDropout(max_holes=8, max_height=0.1, max_width=0.1, p=0.5)",
     "CoarseDropout(p=0.5)", "num_holes_range", "max_holes"),
    ("GaussNoise(var_limit=(10, 50), p=1)", "GaussNoise(p=1)", "std_range", "var_limit"),
    ("Rotate(limit=10, value=5, p=1)", "Rotate(limit=10, p=1)", "fill", "value"),
    ("ShiftScaleRotate(value=5, mask_value=1)", "ShiftScaleRotate()", "fill", "value"),
    ("ImageCompression(quality_lower=50)", "ImageCompression()", "quality_range",
     "quality_lower"),
]


@pytest.mark.parametrize("old, new, now, name", LEGACY)
def test_1x_arguments_are_ignored_as_albumentations_2_ignores_them(old, new, now, name):
    t_old, said = library(old)
    t_new, _ = library(new)
    assert any(f"'{name}" in w and "are not valid" in w for w in said), said
    assert getattr(t_old, now) == getattr(t_new, now)  # the 2.x argument keeps its value
    ours, plain = imported(old), imported(new)
    assert ours.preset.to_dict() == plain.preset.to_dict()
    item = ours.transforms[0]
    assert item.status == plain.transforms[0].status != "not imported"
    assert item.verdict == plain.transforms[0].verdict
    note = item.notes[0]
    assert note.startswith(f"{name}=") and "ignored, as Albumentations 2 does" in note
    assert f"keeping {now}=" in note and f"(2.x: {now})" in note


def test_every_declared_1x_argument_is_gone_from_albumentations_2_and_names_its_successor():
    from dali_gallery.pipelines.importers.albumentations_legacy import AlbumentationsRule
    from dali_gallery.pipelines.importers.table import all_rules

    rules = [r for r in all_rules().values() if r.library == "albumentations"]
    assert all(isinstance(r, AlbumentationsRule) for r in rules if r.kind != "container")
    declared = [(r, old, now) for r in rules if isinstance(r, AlbumentationsRule)
                for old, (now, _) in r.ignored.items()]
    assert len(declared) >= 25
    for rule, old, now in declared:
        assert old not in rule.params and now in rule.params, (rule.name, old, now)


def test_always_apply_false_changes_nothing_and_says_nothing():
    item = imported("HorizontalFlip(always_apply=False)").transforms[0]
    assert item.status == "imported" and not item.notes


def test_an_unknown_argument_is_still_refused_and_containers_refuse_always_apply():
    result = imported("Blur(blur_limt=3)", "OneOf([A.Blur()], always_apply=True)",
                      "VerticalFlip()")
    blur, oneof, flip = result.transforms
    assert blur.status == "not imported" and "'blur_limt' is not an argument of Blur" in \
        blur.verdict.reason
    with pytest.raises(TypeError):  # Albumentations' containers take no always_apply
        library("OneOf([A.Blur()], always_apply=True)")
    assert oneof.status == "not imported" and "'always_apply'" in oneof.verdict.reason
    assert flip.status == "imported"


# ---- Compose(strict=True) --------------------------------------------------------------------

STRICT = [old for old, *_ in LEGACY] + ["HorizontalFlip(always_apply=False)"]


@pytest.mark.parametrize("old", STRICT)
def test_1x_arguments_inside_a_strict_compose_are_refused_as_albumentations_2_raises(old):
    with pytest.raises(ValueError, match="are not valid for transform"):
        library(f"Compose([A.{old}], strict=True)")
    result = import_pipeline(HEAD + f"    A.{old},\n    A.VerticalFlip(),\n], strict=True)")
    bad, flip = result.transforms
    name = old.split("(")[0]
    assert bad.status == "not imported" and not bad.steps
    assert "inside Compose(strict=True): Albumentations 2 raises ValueError" in \
        bad.verdict.reason and f"for transform {name}" in bad.verdict.reason
    assert "or Compose(strict=False)" in bad.nearest
    assert flip.status == "imported" and [s.op for s in result.preset.steps] == ["flip"]


def test_a_strict_compose_of_2x_arguments_imports_as_without_strict():
    """strict only checks arguments and input keys: the chain runs the same (accepted, with
    no note, as seed, bbox_params and the other Compose arguments that change no pixel)."""
    code = ("HorizontalFlip(p=0.3)", "Blur(blur_limit=3)")
    library(f"Compose([A.{code[0]}, A.{code[1]}], strict=True)")  # builds
    strict = import_pipeline(HEAD + "".join(f"    A.{t},\n" for t in code) + "], strict=True)")
    plain = imported(*code)
    assert strict.preset.to_dict() == plain.preset.to_dict()
    assert strict.notes == plain.notes == []
    assert [t.status for t in strict.transforms] == ["imported", "imported"]


def test_strict_holds_inside_a_nested_strict_compose_only():
    with pytest.raises(ValueError, match="'always_apply' are not valid"):
        library("Compose([A.Compose([A.Blur(always_apply=True)], strict=True)])")
    result = import_pipeline(HEAD + "    A.HorizontalFlip(always_apply=True),\n"
                             "    A.Compose([A.Blur(always_apply=True)], strict=True),\n])")
    flip, blur = result.transforms
    assert flip.status == "imported" and "ignored, as Albumentations 2 does" in flip.notes[0]
    assert blur.status == "not imported" and "Compose(strict=True)" in blur.verdict.reason


def test_a_saved_strict_compose_refuses_its_1x_arguments_too():
    saved = ('{"__version__": "2.0.8", "transform": {"__class_fullname__": "Compose", "p": 1.0, '
             '"strict": true, "transforms": [{"__class_fullname__": "HorizontalFlip", '
             '"always_apply": true, "p": 0.5}]}}')
    with pytest.raises(ValueError, match="'always_apply' are not valid"), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        A.from_dict(json.loads(saved))
    (flip,) = import_pipeline(saved).transforms
    assert flip.status == "not imported" and "Compose(strict=True)" in flip.verdict.reason


# ---- a malformed argument refuses its transform only -----------------------------------------


@pytest.mark.parametrize("code, needle, nearest", [
    ("RandomResizedCrop(size=224)", "size=224: Albumentations takes size=(height, width)",
     "size=(224, 224)"),
    ("RandomResizedCrop(size=(224,))", "size=[224]", "size=(224, 224)"),
    ("CLAHE(tile_grid_size=8)", "tile_grid_size=8: CLAHE takes (rows, columns)",
     "tile_grid_size=(8, 8)"),
])
def test_a_malformed_size_refuses_that_transform_and_the_rest_imports(code, needle, nearest):
    with pytest.raises(ValueError):  # Albumentations rejects it when the transform is built
        library(code)
    result = imported("HorizontalFlip()", code, "VerticalFlip()")
    flip, bad, vflip = result.transforms
    assert bad.status == "not imported" and bad.call.line == 4
    assert needle in bad.verdict.reason and bad.nearest == nearest
    assert flip.status == vflip.status == "imported" and len(result.preset.steps) == 2


def test_a_huge_kernel_or_bit_range_is_refused_before_it_is_listed():
    """blur_limit (3, 1e9) once listed half a billion window sizes (memory ran out)."""
    result = imported("MedianBlur(blur_limit=(3, 1e9))", "Posterize(num_bits=(4, 1e9))",
                      "MedianBlur(blur_limit=(3, 7))")
    median, bits, small = result.transforms
    assert median.status == bits.status == "not imported"
    assert "at most 31 px" in median.verdict.reason and "4 to 7 bits" in bits.verdict.reason
    assert small.status == "imported"
