"""Widgets taken off the page are closed later, not at once: a Voilà page still restoring its
widgets (it lists the kernel's models, then fetches each) failed once with "Cannot read
properties of undefined (reading 'create_view')" when the builder rebuilt its cards meanwhile."""

from __future__ import annotations

import ipywidgets as w

from dali_gallery.widgets import style
from tests.widgets.conftest import make_builder, settle


def _open(widget: w.Widget) -> bool:
    return widget.comm is not None


def test_retired_widgets_close_with_their_children_after_the_delay(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(style.time, "monotonic", lambda: clock[0])
    retired = style.Retired()
    inner = w.HTML("x")
    outer = w.VBox([inner])
    retired.add([outer])
    assert _open(outer) and _open(inner) and len(retired) == 1
    clock[0] += style.RETIRE_S - 1
    retired.add([])
    assert _open(outer)
    clock[0] += 1
    retired.add([w.HTML("newer")])  # the old one is due, the new one is not
    assert not _open(outer) and not _open(inner) and len(retired) == 1
    retired.close()
    assert len(retired) == 0


def test_the_builder_retires_replaced_cards_and_closes_them_when_it_closes():
    b = make_builder()
    try:
        b.add_step("rotate", angle=10.0)
        settle(b)
        first = b.cards[0].widget
        b.add_step("hue", hue=5.0)  # a structural edit: rotate's card is kept
        settle(b)
        assert b.cards[0].widget is first
        b.remove_step(0)  # rotate's card is taken off the page
        settle(b)
        assert b.cards[0].widget is not first and _open(first)  # off the page, still open
        assert first not in b.chain.children
    finally:
        b.close()
    assert not _open(first)
