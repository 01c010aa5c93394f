"""Step cards: header buttons, refused values, collapse, and cards generated for every op."""

from __future__ import annotations

import pytest

from dali_gallery.pipelines.catalog import CATALOG
from tests.support import preset_dict
from tests.widgets.conftest import make_builder, settle


def ops(b):
    return [s.op for s in b.preset.steps]


def test_header_buttons_edit_the_chain(builder):
    for op in ("rotate", "hsv", "flip"):
        builder.add_step(op)
    cards = builder.cards
    assert cards[0].up.disabled and cards[2].down.disabled and not cards[1].up.disabled
    cards[0].down.click()
    assert ops(builder) == ["hsv", "rotate", "flip"]
    builder.cards[2].up.click()
    assert ops(builder) == ["hsv", "flip", "rotate"]
    builder.cards[1].duplicate.click()
    assert ops(builder) == ["hsv", "flip", "flip", "rotate"]
    builder.cards[0].remove.click()
    assert ops(builder) == ["flip", "flip", "rotate"]
    assert [c.index for c in builder.cards] == [0, 1, 2]
    assert all("dg-step-card" in c.widget._dom_classes for c in builder.cards)
    assert builder.chain.children == tuple(c.widget for c in builder.cards)
    settle(builder)


def test_duplicate_copies_values(builder):
    builder.add_step("rotate", angle=33.0)
    builder.set_probability(0, 0.7)
    builder.cards[0].duplicate.click()
    a, b = builder.preset.steps
    assert a == b and b.params["angle"] == 33.0 and b.probability == 0.7


def test_refused_value_is_explained_and_reverted(builder):
    builder.add_step("random_resized_crop")
    card = builder.cards[0]
    card.controls["area_max"].fixed.value = 0.05  # below area_min (0.08)
    control = card.controls["area_max"]
    assert "area_min must not exceed area_max" in control.error_message
    assert "kept 1" in control.error_message
    assert control.fixed.value == 1.0 and builder.preset.steps[0].params["area_max"] == 1.0
    card.controls["area_max"].fixed.value = 0.5
    assert control.error_message == "" and builder.preset.steps[0].params["area_max"] == 0.5


def test_collapse_hides_the_body_and_shows_a_summary(builder):
    builder.add_step("rotate", angle={"uniform": [-10, 10]})
    card = builder.cards[0]
    card.collapse.click()
    assert card.collapsed and card.body.layout.display == "none"
    assert "angle: -10 to 10 deg" in card.summary.value
    builder.add_step("hsv")  # a rebuild keeps the collapse state
    assert builder.cards[0].collapsed and not builder.cards[1].collapsed
    builder.cards[0].collapse.click()
    assert builder.cards[0].body.layout.display is None


def test_magnitude_control_comes_first_and_probability_is_fed(builder):
    builder.add_step("grid_mask")
    card = builder.cards[0]
    assert list(card.controls)[0] == CATALOG["grid_mask"].magnitude
    assert "dg-magnitude" in card.body.children[1]._dom_classes
    card.probability.value = 0.25
    assert builder.preset.steps[0].probability == 0.25
    assert "p=0.25" in card.title.value


@pytest.mark.parametrize("category", sorted({s.category for s in CATALOG.values()}))
def test_a_card_is_generated_for_every_operator(category):
    names = [n for n, s in CATALOG.items() if s.category == category]
    b = make_builder(preset=preset_dict([{"op": n, "enabled": False} for n in names]),
                     sync=True, max_images=1, draws=1)
    try:
        assert [c.spec.name for c in b.cards] == names
        for card, name in zip(b.cards, names, strict=True):
            spec = CATALOG[name]
            assert set(card.controls) == {p.name for p in spec.params}
            for p in spec.params:
                assert f"dg-param-{p.name}" in card.controls[p.name].widget._dom_classes
    finally:
        b.close()


def test_a_card_taken_off_the_page_edits_nothing(builder):
    """A double click on "remove" sends the second click to the card the first one took off
    the page (kept open for a while, see style.Retired): it removed the next step too, and
    a second "move down" moved the other step back up."""
    for op in ("rotate", "hue", "flip", "contrast"):
        builder.add_step(op)
    builder.set_seed(11)
    builder.model.group_steps(2, 2)  # rotate, hue, one_of(flip, contrast)
    settle(builder)
    old = builder.cards[0]
    old.remove.click()
    old.remove.click()
    assert [s.op for s in builder.preset.steps] == ["hue", "one_of"]
    old.down.click()
    old.controls["angle"].fixed.value = 12.0
    old.enabled.value = False
    old.probability.value = 0.5
    group = builder.cards[1]
    builder.move_step(1, -1)  # one_of, hue: the group's card is rebuilt
    before = builder.preset.to_dict()
    group.down.click()
    group.pick.value = 2
    group.weights[0].value = 3.0
    group.children[1].enabled.value = False
    group.children[0].controls["horizontal"].fixed.value = "off"
    group.ungroup_button.click()
    assert builder.preset.to_dict() == before
    settle(builder)


def test_structural_edits_keep_the_cards_of_the_steps_that_stay(builder):
    """Adding, duplicating, moving and removing make cards only for new steps (the browser
    then makes only their views); a kept card shows its new place and its step's values."""
    for op in ("rotate", "hsv", "flip"):
        builder.add_step(op)
    rotate, hsv, flip = builder.cards
    builder.duplicate_step(1)  # rotate, hsv, hsv', flip
    assert builder.cards[:2] == [rotate, hsv] and builder.cards[3] is flip
    copy = builder.cards[2]
    assert copy not in (rotate, hsv, flip)
    builder.move_step(3, -3)  # flip, rotate, hsv, hsv'
    assert builder.cards == [flip, rotate, hsv, copy]
    assert [c.index for c in builder.cards] == [0, 1, 2, 3]
    assert flip.up.disabled and not flip.down.disabled and copy.down.disabled
    assert flip.title.value.startswith("<b>0. flip")
    builder.set_param(1, "angle", 33.0)
    builder.remove_step(0)  # rotate, hsv, hsv'
    assert builder.cards == [rotate, hsv, copy] and flip.retired and not rotate.retired
    assert rotate.controls["angle"].fixed.value == 33.0
    assert [c.widget for c in builder.cards] == list(builder.chain.children)


def test_a_removed_card_is_not_kept_for_a_step_of_its_operator(builder):
    """Two steps of one operator, the first removed: the second keeps its own card, and the
    first's card (still open a while) is inert: a double click on "remove" removes one."""
    for op in ("hue", "hue", "flip"):
        builder.add_step(op)
    first, second, _ = builder.cards
    first.remove.click()
    first.remove.click()  # the second click of a double click
    assert ops(builder) == ["hue", "flip"]
    assert builder.cards[0] is second and first.retired and second.index == 0
