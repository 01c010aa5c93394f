"""Undo / redo snapshots: one entry per gesture, exact restore, redo branch dropped."""

from __future__ import annotations

from dali_gallery.widgets.history import History


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_undo_redo_walks_the_states():
    h = History("a")
    assert not h.can_undo and not h.can_redo
    assert h.record("b") and h.record("c")
    assert h.undo() == "b" and h.undo() == "a" and h.undo() is None
    assert h.redo() == "b" and h.redo() == "c" and h.redo() is None


def test_unchanged_state_is_not_recorded():
    h = History("a")
    assert not h.record("a")
    assert len(h) == 1


def test_a_drag_is_one_entry_within_the_window():
    clock = Clock()
    h = History("v0", window_s=1.0, clock=clock)
    for k in range(1, 6):
        clock.t += 0.1
        h.record(f"v{k}", key=("param", 0, "angle"))
    assert len(h) == 2 and h.current == "v5"
    assert h.undo() == "v0"


def test_pause_longer_than_the_window_starts_a_new_entry():
    clock = Clock()
    h = History("v0", window_s=1.0, clock=clock)
    h.record("v1", key="k")
    clock.t += 5
    h.record("v2", key="k")
    assert h.undo() == "v1"


def test_other_key_starts_a_new_entry():
    h = History("v0")
    h.record("v1", key="a")
    h.record("v2", key="b")
    assert h.undo() == "v1"


def test_dragging_back_to_the_start_leaves_no_entry():
    h = History("v0")
    h.record("v1", key="k")
    h.record("v0", key="k")
    assert len(h) == 1 and not h.can_undo


def test_edit_after_undo_drops_the_redo_branch_and_never_merges_into_history():
    h = History("v0")
    h.record("v1", key="k")
    h.undo()
    h.record("w1", key="k")
    assert not h.can_redo
    assert h.undo() == "v0"
    assert h.redo() == "w1"


def test_limit_keeps_the_newest():
    h = History("s0", limit=5)
    for k in range(1, 10):
        h.record(f"s{k}")
    assert len(h) == 5
    states = []
    while (s := h.undo()) is not None:
        states.append(s)
    assert states == ["s8", "s7", "s6", "s5"]
