"""The way back: a preset written as torchvision v2 or Albumentations code that runs in that
library and imports back into the same steps."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from dali_gallery.pipelines.importers import import_pipeline
from dali_gallery.pipelines.importers.reverse import to_library_code
from dali_gallery.pipelines.preset import load
from tests.support import preset_dict

OUTPUT = {"resize_shorter": 64, "crop": [48, 48], "mean": [0.485, 0.456, 0.406],
          "std": [0.229, 0.224, 0.225], "layout": "CHW", "dtype": "float32"}

TV_STEPS = [
    {"op": "random_resized_crop", "params": {"size": 96, "area_min": 0.2, "area_max": 1.0,
                                             "aspect_min": 0.75, "aspect_max": 4 / 3}},
    {"op": "flip", "probability": 0.5, "params": {"horizontal": True, "vertical": False}},
    {"op": "flip", "probability": 0.25, "params": {"horizontal": False, "vertical": True}},
    {"op": "rotate", "params": {"angle": {"uniform": [-20, 20]}, "keep_size": True,
                                "fill_value": 0, "interp_type": "linear"}},
    {"op": "color_twist", "probability": 0.8,
     "params": {"brightness": {"uniform": [0.7, 1.3]}, "contrast": 1.0,
                "saturation": {"uniform": [0.6, 1.4]}, "hue": {"uniform": [-18, 18]}}},
    {"op": "gaussian_blur", "params": {"sigma": {"uniform": [0.1, 2.0]}}},
    {"op": "auto_aug.solarize", "probability": 0.5, "params": {"magnitude_bin": 7}},
    {"op": "auto_aug.posterize", "probability": 0.5, "params": {"magnitude_bin": 15}},
    {"op": "auto_aug.sharpness", "probability": 0.5,
     "params": {"magnitude_bin": 10, "random_sign": False}},
    {"op": "auto_aug.invert", "probability": 0.5, "params": {}},
    {"op": "auto_aug.auto_contrast", "probability": 0.5, "params": {}},
    {"op": "equalize", "probability": 0.5, "params": {}},
    {"op": "saturation", "probability": 0.1, "params": {"saturation": 0.0}},
    {"op": "rand_augment", "params": {"n": 2, "m": 9}},
    {"op": "jpeg_compression_distortion", "params": {"quality": 50}},
]

ALB_STEPS = [
    {"op": "flip", "probability": 0.5, "params": {"horizontal": True, "vertical": False}},
    {"op": "rotate", "probability": 0.7, "params": {"angle": {"uniform": [-30, 30]},
                                                    "keep_size": True, "fill_value": 0,
                                                    "interp_type": "linear"}},
    {"op": "random_resized_crop", "params": {"size": 96, "area_min": 0.3, "area_max": 1.0,
                                             "aspect_min": 0.75, "aspect_max": 4 / 3,
                                             "antialias": False}},
    {"op": "brightness", "probability": 0.5,
     "params": {"brightness": {"uniform": [0.8, 1.2]},
                "brightness_shift": {"uniform": [-0.2, 0.2]}}},
    {"op": "noise.gaussian", "probability": 0.5, "params": {"stddev": {"uniform": [10, 30]}}},
    {"op": "gaussian_blur", "probability": 0.5, "params": {"sigma": {"uniform": [0.5, 3.0]}}},
    {"op": "jpeg_compression_distortion", "probability": 0.5,
     "params": {"quality": {"uniform": [40, 90]}}},
    {"op": "clahe", "probability": 0.5, "params": {"tiles_x": 8, "tiles_y": 8,
                                                   "clip_limit": 2.0}},
    {"op": "auto_aug.posterize", "probability": 0.5, "params": {"magnitude_bin": 15}},
    {"op": "auto_aug.solarize", "probability": 0.5, "params": {"magnitude_bin": 15}},
    {"op": "equalize", "probability": 0.5, "params": {}},
    {"op": "saturation", "probability": 0.05, "params": {"saturation": 0.0}},
    {"op": "resize", "params": {"resize_shorter": 80, "antialias": False,
                                "interp_type": "linear"}},
    {"op": "crop", "params": {"crop_h": 64, "crop_w": 64, "crop_pos_x": 0.5, "crop_pos_y": 0.5}},
]


def run_code(code: str):
    namespace: dict = {}
    exec(compile(code, "written_by_dali_gallery.py", "exec"), namespace)  # our own output
    return namespace["transform"]


@pytest.mark.parametrize(("library", "steps"), [("torchvision", TV_STEPS),
                                                 ("albumentations", ALB_STEPS)])
def test_written_code_runs_in_the_library_and_imports_back_to_the_same_steps(library, steps):
    importlib.import_module(library)
    preset = load(preset_dict(steps, output=OUTPUT))
    code = to_library_code(preset, library)
    assert "no " + library + " equivalent" not in code.split('"""', 2)[2], code
    transform = run_code(code)
    img = np.random.default_rng(0).integers(0, 256, (120, 160, 3), dtype=np.uint8)
    if library == "torchvision":
        import torch

        out = transform(torch.from_numpy(img).permute(2, 0, 1).contiguous())
        assert tuple(out.shape) == (3, 48, 48) and out.dtype == torch.float32
    else:
        out = transform(image=img)["image"]
        assert tuple(out.shape) == (3, 48, 48)
    back = import_pipeline(code)
    assert [s.to_dict() for s in back.preset.steps] == [s.to_dict() for s in preset.steps]
    assert back.preset.output.to_dict() == {**preset.output.to_dict(),
                                            "resize_shorter": 64.0}


def test_steps_without_an_equivalent_stay_as_comments():
    preset = load(preset_dict([
        {"op": "water", "params": {}},
        {"op": "rotate", "probability": 0.5, "params": {"angle": 10.0}},
    ]))
    code = to_library_code(preset, "torchvision")
    assert "# step 0 (water): no torchvision equivalent" in code
    assert "v2.RandomApply([v2.RandomRotation((10, 10)" in code and "p=0.5)" in code
    assert "1 step(s) have no torchvision equivalent" in code
    with pytest.raises(ValueError, match="library 'keras' is not allowed"):
        to_library_code(preset, "keras")


def test_a_colour_jitter_with_a_probability_is_one_random_apply():
    """SimCLR's RandomApply([ColorJitter(...)], p=0.8) is written back with one RandomApply,
    and imports back with p=0.8 (not 0.8 x 0.8)."""
    from tests.pipelines.import_examples import TV_SIMCLR

    code = to_library_code(import_pipeline(TV_SIMCLR).preset, "torchvision")
    (line,) = [x for x in code.splitlines() if "ColorJitter" in x]
    assert line.strip().startswith("v2.RandomApply([v2.ColorJitter(") and \
        line.count("RandomApply") == 1 and line.strip().endswith("], p=0.8),")
    run_code(code)
    back = [s for s in import_pipeline(code).preset.steps if s.op == "color_twist"]
    assert [s.probability for s in back] == [0.8]


def test_a_rotation_imported_from_random_affine_is_written_back_turning_the_same_way():
    """RandomAffine turns clockwise: its imported rotate (DALI's angle, counter-clockwise) is
    written as RandomRotation with the negated range, which torchvision turns exactly as the
    original, and which imports back to the same step."""
    import torch
    from torchvision.transforms import v2

    for degrees, written in (("(5, 25)", "(-25, -5)"), ("(30, 30)", "(-30, -30)")):
        preset = import_pipeline("from torchvision.transforms import v2\nv2.Compose(["
                                 f"v2.RandomAffine(degrees={degrees})])").preset
        code = to_library_code(preset, "torchvision")
        assert f"v2.RandomRotation({written}, interpolation=v2.InterpolationMode.NEAREST" in code
        back = import_pipeline(code).preset
        assert [s.to_dict() for s in back.steps] == [s.to_dict() for s in preset.steps]
    img = torch.from_numpy(np.random.default_rng(1).integers(0, 256, (3, 40, 50), np.uint8))
    assert torch.equal(run_code(code)(img), v2.RandomAffine(degrees=(30, 30))(img))


def _library_output(library: str, code: str, img: np.ndarray) -> np.ndarray:
    """The written transform run on an HWC uint8 image, as a numpy array."""
    transform = run_code(code)
    if library == "torchvision":
        import torch

        return transform(torch.from_numpy(img).permute(2, 0, 1).contiguous()).numpy()
    out = transform(image=img)["image"]
    return out.numpy() if hasattr(out, "numpy") else out


@pytest.mark.parametrize("output", [
    {"crop": [32, 32], "mean": [0.5, 0.5, 0.5]},  # the hunt's case: std absent
    {"mean": [0.485, 0.456, 0.406]},
    {"crop": [32, 32], "std": [0.25]},
    {"crop": [32, 32], "mean": [0.5], "std": [0.25, 0.5, 1.0]},
    {"crop": [32, 32]},  # float32 0..255, not normalised
])
def test_the_written_tail_gives_dalis_numbers_and_imports_back(tmp_path, output):
    """DALI's tail is (x - mean * 255) / (std * 255) with std 1/255 when absent: a mean
    without a std leaves grey levels (-127.5..127.5 for mean 0.5), so the written std is
    1 / 255, not 1 (which gave -0.5..0.5, a factor 255 off). Both libraries' code gives the
    DALI export's numbers on the same image, and imports back to the same normalisation."""
    from PIL import Image

    from tests.support import first_batch

    img = np.random.default_rng(3).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    Image.fromarray(img).save(tmp_path / "a.png")  # even margins: no centre-rounding shift
    preset = load(preset_dict([], output=output))
    dali = first_batch(preset, tmp_path, 1, tmp_path)[0]
    for library in ("torchvision", "albumentations"):
        code = to_library_code(preset, library)
        ours = _library_output(library, code, img)
        assert ours.shape == dali.shape and ours.dtype == dali.dtype, (library, code)
        np.testing.assert_allclose(ours, dali, atol=1e-3, err_msg=f"{library}\n{code}")
        back = import_pipeline(code).preset.output
        assert back.layout == "CHW" and back.dtype == "float32"
        if output.get("mean") or output.get("std"):
            want = preset.output  # 1 value is 3 alike; an absent std is 1/255 back
            np.testing.assert_allclose(back.mean, np.broadcast_to(want.mean or (0.0,), 3))
            np.testing.assert_allclose(back.std, np.broadcast_to(want.std or (1 / 255,), 3),
                                       rtol=1e-9)


def test_tail_settings_a_library_cannot_write_are_comments_naming_them(tmp_path):
    """torchvision's layout is CHW and Albumentations' dtype float32; both resize to whole
    sizes: each difference is a ``# output.`` comment naming the setting and value, counted in
    the header. The shorter side written is DALI's (which rounds half up: 40.5 -> 41), and a
    fractional resize step is a comment naming its size (it was truncated, or failed)."""
    from PIL import Image

    from tests.support import first_batch

    img = np.random.default_rng(4).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    Image.fromarray(img).save(tmp_path / "a.png")
    output = {"resize_shorter": 40.5, "crop": [32, 32], "mean": [0.5], "std": [0.25],
              "layout": "HWC", "dtype": "float16"}
    step = {"op": "resize", "params": {"resize_shorter": 50.5, "antialias": True,
                                       "interp_type": "linear"}}
    preset = load(preset_dict([step], output=output))
    dali_side = min(first_batch(load(preset_dict([], output={"resize_shorter": 40.5})),
                                tmp_path, 1, tmp_path)[0].shape[1:])
    assert dali_side == 41
    tv = to_library_code(preset, "torchvision")
    alb = to_library_code(preset, "albumentations")
    for library, code in (("torchvision", tv), ("albumentations", alb)):
        assert (f"# step 0 (resize): no {library} equivalent (resize_shorter 50.5: the "
                "library takes whole sizes)") in code
        assert f"# output.resize_shorter 40.5: {library} takes whole sizes; 41 is DALI's" in code
    assert "v2.Resize(41)," in tv and "A.SmallestMaxSize(max_size=41, interpolation=3)," in alb
    assert "# output.layout 'HWC': torchvision tensors are CHW" in tv
    assert "# output.dtype 'float16': Albumentations gives float32" in alb
    assert "2 output setting(s) differ from DALI's tail" in tv and \
        "2 output setting(s) differ from DALI's tail" in alb
    assert "1 step(s) have no" in tv and "1 step(s) have no" in alb
    out_tv, out_alb = _library_output("torchvision", tv, img), _library_output("albumentations",
                                                                               alb, img)
    assert out_tv.shape == (3, 32, 32) and out_tv.dtype == np.float16  # as the comment says
    assert out_alb.shape == (32, 32, 3) and out_alb.dtype == np.float32
    back_tv, back_alb = import_pipeline(tv).preset, import_pipeline(alb).preset
    assert back_tv.steps == [] and back_alb.steps == []
    assert (back_tv.output.resize_shorter, back_tv.output.layout, back_tv.output.dtype) == \
        (41.0, "CHW", "float16")
    assert (back_alb.output.resize_shorter, back_alb.output.layout, back_alb.output.dtype) == \
        (41.0, "HWC", "float32")
    exact = load(preset_dict([], output={**output, "resize_shorter": 40, "layout": "CHW",
                                         "dtype": "float32"}))
    for library in ("torchvision", "albumentations"):  # nothing to say: no comment
        assert "# output." not in to_library_code(exact, library)
