"""The pipeline model: every edit validated like a preset file, undoable, announced."""

from __future__ import annotations

import json

import pytest

from dali_gallery.pipelines.preset import Choice, PresetError, Uniform, load
from dali_gallery.widgets.model import ChainModel, Change
from tests.support import preset_dict


@pytest.fixture
def model() -> ChainModel:
    return ChainModel()


def test_add_step_uses_catalog_defaults_and_overrides(model):
    changes: list[Change] = []
    model.listen(changes.append)
    i = model.add_step("rotate", {"angle": Uniform(-10, 10)})
    j = model.add_step("hsv")
    assert (i, j) == (0, 1)
    step = model.preset.steps[0]
    assert step.params["angle"] == Uniform(-10.0, 10.0)
    assert step.params["keep_size"] is True and step.params["interp_type"] == "linear"
    assert changes == [Change("structure", 0), Change("structure", 1)]


def test_unknown_operator_is_named_with_suggestions(model):
    with pytest.raises(PresetError) as err:
        model.add_step("rotatee")
    assert "rotatee" in str(err.value)
    with pytest.raises(PresetError, match="did you mean .*gaussian_blur"):
        model.add_step("blur.gaussian_blur")
    assert len(model) == 0


def test_bad_value_names_step_operator_parameter_and_value_and_changes_nothing(model):
    model.add_step("rotate")
    before = model.preset.to_json()
    with pytest.raises(PresetError) as err:
        model.set_param(0, "angle", 999.0)
    text = str(err.value)
    assert "step 0 (rotate)" in text and "'angle'" in text and "999" in text
    assert "[-360, 360]" in text
    assert model.preset.to_json() == before
    assert not model.history.can_redo and len(model.history) == 2


def test_build_time_parameter_cannot_be_drawn_per_sample(model):
    model.add_step("rotate")
    with pytest.raises(PresetError, match="fill_value.*cannot be drawn per sample"):
        model.set_param(0, "fill_value", Uniform(0, 10))


def test_constraints_are_checked(model):
    model.add_step("random_resized_crop")
    assert model.preset.steps[0].params["area_min"] == 0.08
    with pytest.raises(PresetError, match="area_min must not exceed area_max"):
        model.set_param(0, "area_max", 0.05)
    assert model.preset.steps[0].params["area_max"] == 1.0


def test_unknown_parameter_lists_the_parameters(model):
    model.add_step("hue")
    with pytest.raises(PresetError, match=r"unknown parameter 'angle' \(parameters: hue\)"):
        model.set_param(0, "angle", 3.0)


def test_json_forms_and_numpy_scalars_are_accepted(model):
    import numpy as np

    model.add_step("flip")
    model.set_param(0, "horizontal", {"choice": [True, False]})
    assert model.preset.steps[0].params["horizontal"] == Choice((True, False))
    model.add_step("grid_mask")
    model.set_param(1, "tile", np.int64(40))
    assert model.preset.steps[1].params["tile"] == 40


def test_move_duplicate_remove(model):
    for op in ("rotate", "hsv", "flip"):
        model.add_step(op)
    assert model.move_step(2, -5) == 0
    assert [s.op for s in model.preset.steps] == ["flip", "rotate", "hsv"]
    assert model.move_step(0, 0) == 0
    assert model.duplicate_step(1) == 2
    assert [s.op for s in model.preset.steps] == ["flip", "rotate", "rotate", "hsv"]
    model.remove_step(0)
    assert [s.op for s in model.preset.steps] == ["rotate", "rotate", "hsv"]
    with pytest.raises(IndexError, match="step 7 does not exist; the chain has 3"):
        model.remove_step(7)


def test_probability_crossing_one_is_a_structure_change(model):
    changes: list[Change] = []
    model.add_step("hue")
    model.listen(changes.append)
    model.set_probability(0, 0.5)
    model.set_probability(0, 0.4)
    model.set_probability(0, 1.0)
    assert [c.kind for c in changes] == ["structure", "value", "structure"]
    with pytest.raises(PresetError, match="probability 1.5 is not allowed"):
        model.set_probability(0, 1.5)


def test_undo_redo_restore_exact_presets(model):
    model.add_step("rotate")
    model.set_param(0, "angle", 12.0)
    model.add_step("hsv")
    states = [model.preset.to_json()]
    assert model.undo()
    states.append(model.preset.to_json())
    assert model.undo() and model.undo()
    assert model.preset.steps == []
    assert not model.undo()
    assert model.redo() and model.redo()
    assert model.preset.to_json() == states[1]
    assert model.redo() and model.preset.to_json() == states[0]
    assert not model.redo()


def test_a_drag_is_one_undo_step_and_a_mode_switch_another(model):
    model.add_step("rotate")
    for v in (1.0, 2.0, 3.0, 4.0):
        model.set_param(0, "angle", v)
    model.set_param(0, "angle", Uniform(-4, 4))
    model.set_param(0, "angle", Uniform(-6, 6))
    assert model.undo()
    assert model.preset.steps[0].params["angle"] == 4.0
    assert model.undo()
    assert model.preset.steps[0].params["angle"] == 0.0


def test_replace_loads_and_is_undoable(model):
    model.add_step("hue")
    model.replace(preset_dict([{"op": "rotate", "params": {"angle": 5}}], seed=9))
    assert model.preset.seed == 9 and model.preset.steps[0].op == "rotate"
    model.undo()
    assert model.preset.steps[0].op == "hue"
    bad = json.dumps(preset_dict([{"op": "rotate", "params": {"angle": "x"}}]))
    with pytest.raises(PresetError):
        model.replace(bad)
    assert model.preset.steps[0].op == "hue"


def test_seed_and_name(model):
    model.set_seed(123)
    model.set_name("mine")
    assert model.preset.seed == 123 and model.preset.name == "mine"
    with pytest.raises(PresetError, match="seed"):
        model.set_seed(-1)
    assert load(model.preset.to_dict()).seed == 123


# ---- groups (one_of) ---------------------------------------------------------------------------

GROUP = preset_dict([{"op": "flip"}, {"one_of": [
    {"op": "rotate", "params": {"angle": 10.0}}, {"op": "hue", "probability": 0.5},
    {"op": "flip"}], "probability": 0.5}])


def test_a_childs_parameter_probability_and_enable_are_edited_and_validated():
    model = ChainModel(load(GROUP))
    changes: list[Change] = []
    model.listen(changes.append)
    model.set_param(1, "angle", 25.0, child=0)
    group = model.preset.steps[1]
    assert group.children[0].params["angle"] == 25.0
    assert changes[-1] == Change("value", 1, "angle", 0)
    model.set_probability(1, 0.7, child=1)
    assert group is not model.preset.steps[1] and model.preset.steps[1].children[1].probability \
        == 0.7 and changes[-1].kind == "value"
    model.set_probability(1, 1.0, child=1)  # the child's coin goes: the graph changes
    assert changes[-1].kind == "structure"
    model.set_enabled(1, False, child=2)
    assert not model.preset.steps[1].children[2].enabled
    with pytest.raises(PresetError, match=r"step 1 \(one_of\), child 0 \(rotate\): parameter "
                                          r"'angle': value 'x' is not allowed"):
        model.set_param(1, "angle", "x", child=0)
    with pytest.raises(PresetError, match=r"step 1 \(one_of\), child 0 \(rotate\): unknown "
                                          "parameter 'hue'"):
        model.set_param(1, "hue", 3.0, child=0)
    with pytest.raises(IndexError, match="child 3 of step 1 does not exist"):
        model.set_param(1, "angle", 1.0, child=3)
    with pytest.raises(IndexError, match=r"step 0 \(flip\) is not a group"):
        model.set_param(0, "horizontal", True, child=0)
    assert model.preset.steps[1].children[0].params["angle"] == 25.0  # refused: unchanged


def test_weights_pick_grouping_and_ungrouping_are_undoable_edits():
    model = ChainModel(load(GROUP))
    model.set_weight(1, 2, 3.0)
    assert model.preset.steps[1].weights == [1.0, 1.0, 3.0]  # the others keep equal weights
    model.set_pick(1, 2)
    assert model.preset.steps[1].pick == 2
    with pytest.raises(PresetError, match="pick 4 is not allowed"):
        model.set_pick(1, 4)
    with pytest.raises(PresetError, match="weight 0 is not allowed"):
        model.set_weight(1, 0, 0)
    model.ungroup(1)
    assert [s.op for s in model.preset.steps] == ["flip", "rotate", "hue", "flip"]
    assert model.group_steps(1, 3) == 1
    group = model.preset.steps[1]
    assert group.op == "one_of" and [c.op for c in group.children] == ["rotate", "hue", "flip"]
    assert (group.pick, group.weights, group.probability) == (1, None, 1.0)
    with pytest.raises(PresetError, match="a group inside a group is not allowed"):
        model.group_steps(0, 2)
    with pytest.raises(PresetError, match="a group needs 2 or more steps"):
        model.group_steps(1, 1)
    for _ in range(4):
        assert model.undo()
    assert model.preset.to_dict() == load(GROUP).to_dict()


def test_top_level_edits_move_copy_and_remove_a_group_whole():
    model = ChainModel(load(GROUP))
    model.set_probability(1, 0.9)
    model.set_enabled(1, False)
    assert (model.preset.steps[1].probability, model.preset.steps[1].enabled) == (0.9, False)
    assert model.move_step(1, -1) == 0
    assert model.duplicate_step(0) == 1
    assert [s.op for s in model.preset.steps] == ["one_of", "one_of", "flip"]
    model.remove_step(0)
    assert [s.op for s in model.preset.steps] == ["one_of", "flip"]


def test_a_mode_switch_given_as_json_is_its_own_undo_step_too(model):
    """Range and list as JSON are both dicts: keyed on the type, the switch from one to the
    other merged into the range's undo entry (one undo lost both)."""
    model.add_step("rotate")
    model.set_param(0, "angle", {"uniform": [-4, 4]})
    model.set_param(0, "angle", {"choice": [1.0, 2.0]})
    model.set_param(0, "angle", 3)
    model.set_param(0, "angle", 3.5)  # a literal either way: one drag
    assert model.undo()
    assert model.preset.steps[0].params["angle"] == Choice((1.0, 2.0))
    assert model.undo()
    assert model.preset.steps[0].params["angle"] == Uniform(-4.0, 4.0)
