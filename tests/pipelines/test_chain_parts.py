"""The seed-slot layout and the names of fed values (pipelines.chain_parts): every random node
of the longest chain gets a slot of its own, groups' children above the steps, the tail above
all, and fed names never collide."""

from __future__ import annotations

from dali_gallery.pipelines.chain_parts import (
    CHILD_SLOTS,
    SLOTS_PER_STEP,
    _At,
    child_slot,
    feed_name,
    seed_slot,
)
from dali_gallery.pipelines.module_parts import TAIL_SLOT
from dali_gallery.pipelines.preset_types import MAX_CHILDREN
from dali_gallery.pipelines.preset_validate import MAX_STEPS


def test_every_slot_of_the_longest_chain_is_distinct_and_in_its_range():
    steps = [seed_slot(s, k) for s in range(MAX_STEPS) for k in range(SLOTS_PER_STEP)]
    children = [child_slot(s, c, k) for s in range(MAX_STEPS) for c in range(MAX_CHILDREN)
                for k in range(SLOTS_PER_STEP)]
    assert len(set(steps)) == len(steps) and len(set(children)) == len(children)
    assert max(steps) < CHILD_SLOTS <= min(children)
    assert max(children) < TAIL_SLOT


def test_a_block_knows_its_tag_and_slots():
    assert (_At(3).tag, _At(3, 2).tag) == ("3", "3_2")
    assert _At(3).slot(5) == seed_slot(3, 5) and _At(3, 2).slot(5) == child_slot(3, 2, 5)


def test_fed_names_say_whose_value_they_are():
    names = {feed_name(1, "angle"), feed_name(1, "angle", "range"), feed_name(1, "angle",
             child=0), feed_name(11, "angle"), feed_name(1, "angle", child=1)}
    assert len(names) == 5
    assert feed_name(2, "probability", child=3) == "s2c3_probability"
