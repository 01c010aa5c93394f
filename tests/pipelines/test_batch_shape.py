"""Whether a preset's batches have one image size: the prediction from the catalog's canvas
rules against what real DALI renders on images of different sizes."""

from __future__ import annotations

import pytest

from dali_gallery.pipelines.batch_shape import batch_shape, mixed_size_warning, size_fixing_ops
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import load
from tests.support import SAMPLES, preset_dict

TAIL = {"resize_shorter": 72, "crop": [64, 48], "mean": [0.485, 0.456, 0.406],
        "std": [0.229, 0.224, 0.225], "layout": "CHW", "dtype": "float32"}
RRC = {"op": "random_resized_crop", "params": {"size": 64}}
SPIN = {"op": "rotate", "params": {"angle": {"uniform": [-25, 25]}, "keep_size": False}}

CASES = {
    "no steps": ([], None),
    "rotate keeping the size": ([{"op": "rotate", "params": {"angle": {"uniform": [-20, 20]},
                                                             "keep_size": True}}], None),
    "random resized crop": ([RRC], None),
    "random resized crop, half the time": ([{**RRC, "probability": 0.5}], None),
    "crop, then a colour change": ([{"op": "crop", "params": {"crop_h": 60, "crop_w": 40}},
                                    {"op": "hue", "params": {"hue": 20.0}}], None),
    "crop then resize": ([{"op": "crop", "params": {"crop_h": 60, "crop_w": 40}},
                          {"op": "resize", "params": {"resize_shorter": 50}}], None),
    "crop of a drawn height": ([{"op": "crop", "params": {"crop_h": {"uniform": [40, 80]},
                                                          "crop_w": 40}}], None),
    "random crop, then a drawn rotation": ([RRC, SPIN], None),
    "random crop, then a fixed rotation": ([RRC, {**SPIN, "params": {"angle": 30.0,
                                                                     "keep_size": False}}],
                                           None),
    "random crop, then a drawn zoom-out": ([RRC, {"op": "paste",
                                                  "params": {"ratio": {"uniform": [1, 2]}}}],
                                           None),
    # sizes drawn or trimmed at run time, after a step that fixed them: not one size again
    "random crop, then a detection crop": ([RRC, {"op": "random_bbox_crop", "params": {}}],
                                           None),
    "crop trimmed to smaller images": ([{"op": "crop", "params": {
        "crop_h": 80, "crop_w": 90, "out_of_bounds_policy": "trim_to_shape"}}], None),
    "random crop, then a crop trimmed to it": ([RRC, {"op": "crop", "params": {
        "crop_h": 80, "crop_w": 90, "out_of_bounds_policy": "trim_to_shape"}}], None),
    "crop padded to smaller images": ([{"op": "crop", "params": {
        "crop_h": 80, "crop_w": 90, "out_of_bounds_policy": "pad"}}], None),
    "tail with a crop": ([SPIN], TAIL),
    "tail without a crop": ([], {**TAIL, "crop": None}),
}


@pytest.fixture(scope="module")
def engine():
    e = PreviewEngine("cpu")
    assert e.set_images(SAMPLES, max_side=96) == []
    sizes = {a.shape[:2] for a in e.images}
    assert len(sizes) > 2, "the test needs images of different sizes"
    yield e
    e.close()


@pytest.mark.parametrize("case", list(CASES))
def test_the_prediction_matches_real_dali(engine, case):
    steps, output = CASES[case]
    preset = load(preset_dict(steps, seed=3, output=output))
    shape = batch_shape(preset)
    render = engine.render(preset, draws=4, tail=output is not None)
    chw = output is not None and output["layout"] == "CHW"
    sizes = {tuple(t.shape[1:]) if chw else t.shape[:2] for t in render.images}
    assert shape.fixed == (len(sizes) == 1), (case, shape, sizes)
    if shape.fixed and (output is not None or steps[-1]["op"] in ("crop", "resize")):
        assert sizes == {shape.size}, (case, shape, sizes)  # exact where DALI is exact
    assert (mixed_size_warning(preset) is None) == shape.fixed


def test_the_warning_names_the_step_and_the_remedy():
    preset = load(preset_dict([RRC, {"op": "hue", "params": {"hue": 5.0}}, SPIN]))
    warning = mixed_size_warning(preset)
    assert warning is not None and "step 2 (rotate) gives each sample its own size" in warning
    assert "The batch must be representable as a tensor" in warning
    assert "crop, random_resized_crop" in warning
    half = load(preset_dict([{**RRC, "probability": 0.25}]))
    assert "on 25% of the samples only" in mixed_size_warning(half)


def test_size_fixing_operators_come_from_the_canvas_declarations():
    fixing = size_fixing_ops()
    assert fixing, "the catalog has operators that set the size"
    for name in fixing:
        assert CATALOG[name].canvas.params, name  # never an operator keeping the input's size
    assert "rotate" not in fixing and "resize" not in fixing
