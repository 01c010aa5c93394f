"""One validation for JSON documents and Presets built in code, including output tails that are
valid field by field but fail (or give inf) in DALI. The refused and accepted cases are checked
against plain DALI, so the rules follow what DALI does, not what we think it does."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nvidia.dali import fn, pipeline_def, types

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.preset import (
    Group,
    Output,
    Preset,
    PresetError,
    Step,
    Uniform,
    load,
    new_step,
    validate_preset,
)
from tests.pipelines.test_preset import JSON
from tests.support import SAMPLES, preset_dict

JPEG = sorted(SAMPLES.glob("*.jpg"))[0]


def dali_tail(resize_shorter: float, crop: tuple[int, int]) -> np.ndarray:
    """Plain DALI: the exported tail's resize then crop on a real sample image."""
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        data = fn.external_source(source=lambda: [np.frombuffer(JPEG.read_bytes(), np.uint8)],
                                  batch=True)
        images = fn.resize(fn.decoders.image(data), resize_shorter=resize_shorter)
        return fn.crop_mirror_normalize(images, crop=crop, dtype=types.FLOAT)

    p = pipe()
    p.build()
    return np.array(p.run()[0][0])


def dali_normalize(mean: float, std: float, dtype: str) -> np.ndarray:
    """Plain DALI crop_mirror_normalize (as exported: mean and std times 255) on black and
    white pixels, the two ends of the input range."""
    dali_type = {"float32": types.FLOAT, "float16": types.FLOAT16, "uint8": types.UINT8}[dtype]
    pixels = np.array([[[0, 0, 0], [255, 255, 255]]], np.uint8)

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        images = fn.external_source(source=lambda: [pixels], batch=True, layout="HWC")
        return fn.crop_mirror_normalize(images, mean=[mean * 255], std=[std * 255],
                                        dtype=dali_type)

    p = pipe()
    p.build()
    return np.array(p.run()[0][0]).astype(np.float64)


def tail_problem(output: dict) -> str | None:
    try:
        load(preset_dict([], output=output))
    except PresetError as e:
        return str(e)
    return None


# ---- 4. output tails that validate but fail later ---------------------------------------------


def test_a_crop_larger_than_the_resize_is_refused_as_dali_refuses_it():
    with pytest.raises(RuntimeError):  # the truth: DALI's crop does not fit the resized image
        dali_tail(128, (160, 160))
    assert dali_tail(128, (128, 128)).shape == (3, 128, 128)  # the largest crop that fits
    msg = tail_problem({"resize_shorter": 128, "crop": [160, 160]})
    assert msg is not None and msg.startswith("output: crop [160, 160] is not allowed with "
                                              "resize_shorter 128")
    assert "must be at most 128" in msg
    assert tail_problem({"resize_shorter": 128, "crop": [128, 96]}) is None
    assert tail_problem({"resize_shorter": 128, "crop": [96, 129]}) is not None  # either side


@pytest.mark.parametrize("mean,std,dtype", [(0.5, 1e-30, "float16"), (0.0, 1 / 70000, "float16"),
                                            (0.5, 1e-45, "float32")])
def test_a_normalisation_beyond_the_dtype_is_refused_as_it_gives_inf(mean, std, dtype):
    assert not np.isfinite(dali_normalize(mean, std, dtype)).all()  # the truth: inf in DALI
    msg = tail_problem({"mean": [mean], "std": [std], "dtype": dtype})
    assert msg is not None and msg.startswith(f"output: std [{std!r}] is not allowed")
    assert f"dtype {dtype!r}" in msg and "maximum" in msg and "allowed:" in msg


@pytest.mark.parametrize("mean,std,dtype", [(0.5, 1e-30, "float32"), (0.0, 1 / 60000, "float16"),
                                            (0.485, 0.229, "float16")])
def test_a_normalisation_within_the_dtype_is_accepted_and_finite(mean, std, dtype):
    assert np.isfinite(dali_normalize(mean, std, dtype)).all()
    assert tail_problem({"mean": [mean], "std": [std], "dtype": dtype}) is None


def test_a_mean_alone_can_overflow_float16():
    assert tail_problem({"mean": [300.0], "dtype": "float16"}) is not None  # 255 * 300 > 65504
    assert tail_problem({"mean": [300.0], "dtype": "float32"}) is None


def test_a_normalisation_into_uint8_is_refused_as_dali_would_lose_it():
    """Plain DALI saturates ImageNet-normalised values into 0..2 of uint8: refused, with the
    span and what is allowed; no mean and std, or the identity, pass."""
    lost = dali_normalize(0.485, 0.229, "uint8")
    assert set(np.unique(lost)) <= {0.0, 1.0, 2.0, 3.0}  # what training would have seen
    problem = tail_problem({"mean": [0.485], "std": [0.229], "dtype": "uint8"})
    assert problem is not None and "dtype 'uint8'" in problem and "-2.12 to 2.25" in problem
    assert "allowed: a float32 or float16 dtype, or no mean and std" in problem
    assert tail_problem({"mean": [0.0], "std": [1.0], "dtype": "uint8"}) is not None  # 0..1
    assert tail_problem({"dtype": "uint8"}) is None
    assert tail_problem({"mean": [0.0], "std": [1 / 255], "dtype": "uint8"}) is None
    kept = dali_normalize(0.0, 1 / 255, "uint8")  # the identity: black and white stay
    assert (kept.min(), kept.max()) == (0.0, 255.0)


# ---- 5. one validation for documents and Presets built in code --------------------------------


def bad_code_preset() -> Preset:
    return Preset([new_step("rotate", angle=1000.0), Step("no_such_op")],
                  output=Output(resize_shorter=100, crop=(300, 300)))


def test_a_preset_built_in_code_is_validated_like_a_document():
    preset = bad_code_preset()
    with pytest.raises(PresetError) as from_code:
        validate_preset(preset)
    with pytest.raises(PresetError) as from_json:
        load(preset.to_dict())
    assert from_code.value.problems == from_json.value.problems
    assert from_code.value.problems == [
        "step 0 (rotate): parameter 'angle': value 1000.0 is not allowed; allowed range is "
        "[-360, 360] deg",
        "step 1: unknown operator 'no_such_op' (see `dali-gallery ops`)",
        "output: crop [300, 300] is not allowed with resize_shorter 100; the resized image's "
        "shorter side is 100 px, so the crop's height and width must be at most 100 (or "
        "resize to at least 300)",
    ]


def test_validate_returns_the_normalised_copy():
    preset = Preset([new_step("rotate", angle=Uniform(-10, 10))], seed=3)
    checked = validate_preset(preset)
    assert checked is not preset and checked.to_dict() == load(preset.to_dict()).to_dict()
    assert validate_preset(preset.to_dict()).to_dict() == checked.to_dict()


def test_members_of_the_wrong_type_are_reported_not_crashed_on():
    preset = Preset(steps=[{"op": "rotate"}, 42], output="tail")  # type: ignore[list-item]
    with pytest.raises(PresetError) as err:
        validate_preset(preset)
    text = str(err.value)
    assert "step 1: expected an object with 'op' and 'params', got 42" in text
    assert "output: expected an object or null, got 'tail'" in text


def test_the_engine_and_the_export_refuse_an_invalid_preset_from_code():
    engine = PreviewEngine("cpu", num_threads=1)
    try:
        engine.set_arrays([np.zeros((32, 32, 3), np.uint8)], ["black"])
        with pytest.raises(PresetError, match=r"step 0 \(rotate\): parameter 'angle'"):
            engine.render(bad_code_preset())
        good = Preset([new_step("rotate", angle=5.0)])
        assert engine.render(good).n_images == 1
    finally:
        engine.close()
    with pytest.raises(PresetError, match="output: crop"):
        export_code(bad_code_preset())


# ---- rules across parameters ---------------------------------------------------------------------


def dali_shear(shear_x: float, shear_y: float) -> str | None:
    """Plain DALI: warp_affine with transforms.shear about the centre; the error, if any."""
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        images = fn.external_source(source=lambda: [np.zeros((5, 7, 3), np.uint8)], batch=True)
        matrix = fn.transforms.shear(shear=[shear_x, shear_y], center=[3.5, 2.5])
        return fn.warp_affine(images, matrix=matrix, inverse_map=False)

    p = pipe()
    p.build()
    try:
        p.run()
    except (RuntimeError, ValueError) as e:  # DALI 2.4 raises ValueError
        return str(e)
    return None


@pytest.mark.parametrize(("shear_x", "shear_y"), [(2.0, 0.5), (1.0, 1.0), (-1.0, -1.0),
                                                  (1.25, 0.8)])
def test_a_shear_pair_whose_matrix_dali_cannot_invert_is_refused_by_the_loader(shear_x, shear_y):
    # each shear is within its bounds [-2, 2], but 1 - shear_x*shear_y = 0: the preview used to
    # reach DALI and fail there ("Cannot calculate the inverse of a singular matrix")
    assert "singular matrix" in dali_shear(shear_x, shear_y)
    problems = problems_of([{"op": "warp_affine",
                             "params": {"shear_x": shear_x, "shear_y": shear_y}}])
    assert problems == [f"step 0 (warp_affine): shear_x={shear_x!r}, shear_y={shear_y!r} is not "
                        "allowed; shear_x x shear_y must not be 1: the warp would flatten the "
                        "image onto a line (a singular matrix DALI cannot invert)"]


def test_a_shear_pair_near_the_singular_one_renders_as_dali_does():
    assert dali_shear(1.0, 0.99) is None
    load(preset_dict([{"op": "warp_affine", "params": {"shear_x": 1.0, "shear_y": 0.99}}]))


def test_a_rule_across_parameters_holds_for_every_combination_choices_can_draw():
    problems = problems_of([{"op": "warp_affine", "params": {
        "shear_x": {"choice": [0.0, -1.0, 1.0]}, "shear_y": {"choice": [0.2, 1.0]}}}])
    assert problems == ["step 0 (warp_affine): shear_x=1.0, shear_y=1.0 (a combination the "
                        "choices can draw) is not allowed; shear_x x shear_y must not be 1: the "
                        "warp would flatten the image onto a line (a singular matrix DALI cannot "
                        "invert)"]
    # a range drawn from is not refused for one point inside it
    load(preset_dict([{"op": "warp_affine", "params": {
        "shear_x": {"uniform": [0.5, 2.0]}, "shear_y": 0.5}}]))
    load(preset_dict([{"op": "warp_affine", "params": {
        "shear_x": {"choice": [-1.0, 1.0]}, "shear_y": {"choice": [0.5, -0.5]}}}]))


# ---- groups (one_of) ---------------------------------------------------------------------------

ROT = {"op": "rotate", "params": {"angle": {"uniform": [-10, 10]}}}
FLIP = {"op": "flip", "probability": 0.5}


def problems_of(steps: list) -> list[str]:
    with pytest.raises(PresetError) as err:
        load(preset_dict(steps))
    return err.value.problems


def test_a_group_loads_and_round_trips_and_old_presets_are_unchanged():
    doc = preset_dict([FLIP, {"one_of": [ROT, FLIP], "probability": 0.5, "weights": [2, 1]}])
    preset = load(doc)
    group = preset.steps[1]
    assert isinstance(group, Group) and (group.pick, group.weights) == (1, [2.0, 1.0])
    assert [c.op for c in group.children] == ["rotate", "flip"]
    assert group.to_dict()["one_of"][1]["probability"] == 0.5
    assert load(preset.to_dict()).to_dict() == preset.to_dict()
    assert validate_preset(preset).to_dict() == preset.to_dict()  # built in code, too
    assert preset.to_dict()["version"] == 1  # a group needs no new format version
    assert "weights" not in load(preset_dict([{"one_of": [ROT, FLIP]}])).steps[0].to_dict()


def test_problems_inside_a_group_name_the_group_and_the_child():
    problems = problems_of([FLIP, FLIP, {"one_of": [
        FLIP, {"op": "rotate", "params": {"angle": "x"}}, {"op": "nope"}], "color": 1}])
    assert "step 2 (one_of), child 1 (rotate): parameter 'angle': value 'x' is not allowed; " \
           "expected a float number" in problems
    assert any(p.startswith("step 2 (one_of), child 2: unknown operator 'nope'")
               for p in problems)
    assert any(p.startswith("step 2 (one_of): unknown key 'color' (allowed: enabled, one_of, "
                            "pick, probability, weights)") for p in problems)
    nan = ('{"format": "dali-gallery/preset", "version": 1, "steps": [{"one_of": '
           '[{"op": "flip"}, {"op": "rotate", "params": {"angle": NaN}}]}]}')
    with pytest.raises(PresetError, match=r"step 0 \(one_of\), child 1 \(rotate\): parameter "
                                          r"'angle'.*NaN is not allowed"):
        load(nan)


@pytest.mark.parametrize(("group", "needle"), [
    ({"one_of": [ROT, {"one_of": [ROT, FLIP]}]},
     "step 0 (one_of), child 1: a group inside a group is not allowed"),
    ({"one_of": [ROT]}, "'one_of' is a list of 2 to 16 steps"),
    ({"one_of": [ROT] * 17}, "'one_of' is a list of 2 to 16 steps"),
    ({"one_of": {"op": "rotate"}}, "'one_of' is a list of 2 to 16 steps"),
    ({"one_of": [ROT, FLIP], "weights": [1]}, "expected a list of 2 numbers, one per child"),
    ({"one_of": [ROT, FLIP], "weights": [1, 0]}, "weight 0 is not allowed; each weight is a "
                                                 "number in [1e-06, 1e+06]"),
    ({"one_of": [ROT, FLIP], "weights": [1, True]}, "weight True is not allowed"),
    ({"one_of": [ROT, FLIP], "pick": 3}, "pick 3 is not allowed; expected an integer from 1 "
                                         "to 2, the number of children"),
    ({"one_of": [ROT, FLIP], "pick": 1.0}, "pick 1.0 is not allowed"),
    ({"one_of": [ROT, FLIP], "probability": 2}, "probability 2 is not allowed"),
    ({"one_of": [{**ROT, "enabled": False}, {**FLIP, "enabled": False}]},
     "every child is disabled; enable one, or disable the group"),
])
def test_malformed_groups_are_refused_with_what_is_allowed(group, needle):
    problems = problems_of([group])
    assert any(needle in p and p.startswith("step 0 (one_of)") for p in problems), problems


def test_children_count_in_the_operator_budget():
    group = {"one_of": [FLIP] * 16}
    assert len(load(preset_dict([group] * 8)).active_ops()) == 128
    assert any("129 operators (steps and the children of groups); at most 128" in p
               for p in problems_of([group] * 8 + [FLIP]))


def test_a_pick_beyond_the_enabled_children_applies_them_all():
    preset = load(preset_dict([{"one_of": [ROT, {**FLIP, "enabled": False}, FLIP],
                                "pick": 3}]))
    group = preset.steps[0]
    assert group.picks_all() and [j for j, _ in group.active_children()] == [0, 2]
    assert [s.op for _, s in preset.active_ops()] == ["rotate", "flip"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(
    st.fixed_dictionaries({"op": st.sampled_from(["flip", "rotate"])}),
    st.dictionaries(st.sampled_from(["one_of", "pick", "weights", "probability", "enabled",
                                     "op", "x"]), JSON, min_size=1, max_size=4),
    st.fixed_dictionaries({"one_of": st.lists(st.one_of(
        st.fixed_dictionaries({"op": st.sampled_from(["flip", "rotate"])}), JSON),
        max_size=5)}, optional={"pick": JSON, "weights": JSON, "probability": JSON})),
    max_size=3))
def test_any_group_document_loads_or_raises_preset_error_only(steps):
    try:
        preset = load(preset_dict(steps))
    except PresetError as e:
        assert e.problems and all(p.startswith(("preset", "step ")) for p in e.problems)
        return
    assert load(preset.to_dict()).to_dict() == preset.to_dict()


@pytest.mark.parametrize("name", ["half \ud800 pair", "\udfff", "ok \ud83d"])
def test_a_name_that_is_not_unicode_text_is_refused(name):
    """A lone surrogate (a JSON "\\ud800" escape) is not text: the share link, the exported
    module and the preset file are UTF-8, and could not be written with it."""
    with pytest.raises(PresetError) as info:
        load({**preset_dict([]), "name": name})
    assert any("'name'" in p and "surrogate" in p for p in info.value.problems), \
        info.value.problems
    assert load({**preset_dict([]), "name": "Ünïcødé ✓ 日本 \U0001f600"}).name.endswith(
        "\U0001f600")
