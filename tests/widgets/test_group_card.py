"""Group cards: one card per group with a card per child; every control edits the pipeline,
a refused edit is explained and reverted, and the header acts on the group as a whole."""

from __future__ import annotations

import pytest

from dali_gallery.pipelines.preset import Group
from dali_gallery.widgets.group_card import GroupCard
from dali_gallery.widgets.step_card import StepCard
from tests.support import preset_dict
from tests.widgets.conftest import make_builder, settle

STEPS = [{"op": "flip"}, {"one_of": [
    {"op": "rotate", "params": {"angle": 10.0}},
    {"op": "hue", "probability": 0.5, "params": {"hue": 20.0}},
    {"op": "flip", "params": {"vertical": True}}], "probability": 0.5, "weights": [1, 1, 2]}]


@pytest.fixture
def grouped():
    b = make_builder(preset=preset_dict(STEPS, seed=2))
    assert b.wait_idle(60)
    yield b
    b.close()


def group_of(b) -> Group:
    step = b.preset.steps[1]
    assert isinstance(step, Group)
    return step


def test_a_group_is_one_card_with_a_card_per_child(grouped):
    flip, card = grouped.cards
    assert isinstance(flip, StepCard) and isinstance(card, GroupCard)
    assert "dg-group-card" in card.widget._dom_classes
    assert "dg-step-card" in card.widget._dom_classes  # counted with the steps
    assert [c.spec.name for c in card.children] == ["rotate", "hue", "flip"]
    assert all("dg-group-child" in c.widget._dom_classes and
               "dg-step-card" not in c.widget._dom_classes for c in card.children)
    assert all(c.remove.layout.display == "none" for c in card.children)
    assert "1. one_of" in card.title.value and "pick 1 of 3" in card.title.value
    assert [box.value for box in card.weights] == [1.0, 1.0, 2.0]
    assert "picked on 50% of the samples" in card.shares[2].value
    assert card.children[1].probability.value == 0.5 and "1.1. hue" in \
        card.children[1].title.value


def test_child_controls_weights_and_pick_edit_the_pipeline(grouped):
    card = grouped.cards[1]
    card.children[0].controls["angle"].fixed.value = 33.0
    assert group_of(grouped).children[0].params["angle"] == 33.0
    card.children[1].probability.value = 0.25
    assert group_of(grouped).children[1].probability == 0.25
    card = grouped.cards[1]  # the same card, synced (the children's operators did not change)
    card.weights[0].value = 4.0
    assert group_of(grouped).weights == [4.0, 1.0, 2.0]
    assert "picked on 57% of the samples" in grouped.cards[1].shares[0].value
    grouped.cards[1].pick.value = 3
    assert group_of(grouped).pick == 3 and "all children, in order" in \
        grouped.cards[1].title.value
    assert all(box.disabled for box in grouped.cards[1].weights)  # nothing is drawn
    grouped.cards[1].probability.value = 0.8
    assert group_of(grouped).probability == 0.8
    settle(grouped)
    assert grouped.last_error is None


def test_a_refused_edit_is_explained_and_the_card_shows_the_pipeline_again(grouped):
    card = grouped.cards[1]
    card.children[0].enabled.value = False
    card.children[1].enabled.value = False
    card.children[2].enabled.value = False  # the last one: refused
    card = grouped.cards[1]
    assert [c.enabled for c in group_of(grouped).children] == [False, False, True]
    assert card.children[2].enabled.value is True
    assert "every child is disabled" in card.error.value and card.error.layout.display is None

    grouped.model.add_step("random_resized_crop")
    grouped.model.ungroup(1)
    grouped.model.group_steps(3, 2)  # flip (vertical) and the crop
    crop = grouped.cards[3].children[1]
    crop.controls["area_max"].fixed.value = 0.05  # below area_min (0.08): the child refuses it
    control = crop.controls["area_max"]
    assert "area_min must not exceed area_max" in control.error_message
    assert "step 3 (one_of), child 1 (random_resized_crop)" in control.error_message
    assert control.fixed.value == 1.0 and grouped.preset.steps[3].children[1].params[
        "area_max"] == 1.0


def test_the_header_acts_on_the_whole_group(grouped):
    grouped.cards[1].up.click()
    assert [s.op for s in grouped.preset.steps] == ["one_of", "flip"]
    grouped.cards[0].duplicate.click()
    assert [s.op for s in grouped.preset.steps] == ["one_of", "one_of", "flip"]
    grouped.cards[1].remove.click()
    grouped.cards[0].enabled.value = False
    assert not grouped.preset.steps[0].enabled
    assert "dg-step-disabled" in grouped.cards[0].widget._dom_classes
    grouped.cards[0].ungroup_button.click()
    assert [s.op for s in grouped.preset.steps] == ["rotate", "hue", "flip", "flip"]
    assert all(isinstance(c, StepCard) for c in grouped.cards)
    grouped.model.group_steps(0, 2)
    card = grouped.cards[0]
    assert isinstance(card, GroupCard) and [c.spec.name for c in card.children] == [
        "rotate", "hue"]
    card.collapse.click()
    assert card.body.layout.display == "none" and "rotate, hue" in card.summary.value
    settle(grouped)
    assert grouped.last_error is None
