"""One card for a group step (``one_of``): a header like a step's, and one card per child.

The header has what a step's has (enable, probability, collapse, duplicate, move, remove) plus
how many children the group applies per sample and a button that puts the children back into
the chain. Each child is a :class:`StepCard` (its parameters, probability and enable box) with
its weight above it. Edits go to the :class:`ChainModel` like every other edit; a refused one
is shown on the card, which then shows the pipeline's values again.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from html import escape
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.catalog import Catalog
from dali_gallery.pipelines.preset import GROUP_KEY, Group, PresetError, Step
from dali_gallery.pipelines.preset_validate import MAX_WEIGHT, MIN_WEIGHT

from . import style
from .model import ChainModel
from .step_card import EXPANDED, CardActions, CardFrame, StepCard, _button


def card_key(step: Step | Group) -> Hashable:
    """What a card is built for: a step's operator, or a group's children's operators (a
    card is rebuilt when this changes, and synced otherwise)."""
    if isinstance(step, Group):
        return (GROUP_KEY, *(c.op for c in step.children))
    return step.op


def make_card(index: int, step: Step | Group, actions: CardActions, model: ChainModel,
              catalog: Catalog, *, count: int, collapsed: bool,
              unavailable: Callable[[str], str]) -> StepCard | GroupCard:
    """The card of step ``index``: a :class:`StepCard`, or a :class:`GroupCard` for a group."""
    if isinstance(step, Group):
        return GroupCard(index, step, actions, model, catalog, count=count,
                         collapsed=collapsed, unavailable=unavailable)
    return StepCard(index, step, catalog[step.op], actions, count=count, collapsed=collapsed,
                    unavailable=unavailable(step.op))


class _ChildActions:
    """What a child's card asks for, sent to that child of the group in the model."""

    def __init__(self, card: GroupCard, child: int) -> None:
        self.card = card
        self.child = child

    def set_param(self, index: int, name: str, value: Any) -> None:
        # a refused value raises: the child's card shows why next to the control
        if not self.card.retired:
            self.card.model.set_param(index, name, value, child=self.child)

    def set_probability(self, index: int, probability: float) -> None:
        self.card.edit(lambda: self.card.model.set_probability(index, probability,
                                                               child=self.child))

    def set_enabled(self, index: int, enabled: bool) -> None:
        self.card.edit(lambda: self.card.model.set_enabled(index, enabled, child=self.child))

    # a child moves, is copied and is removed with its group (its card hides these buttons)
    def duplicate_step(self, index: int) -> int:
        return self.card.actions.duplicate_step(index)

    def move_step(self, index: int, delta: int) -> int:
        return self.card.actions.move_step(index, delta)

    def remove_step(self, index: int) -> None:
        self.card.actions.remove_step(index)


class GroupCard(CardFrame):
    """Widgets of the group at ``index``; rebuilt when its children's operators change."""

    def __init__(self, index: int, group: Group, actions: CardActions, model: ChainModel,
                 catalog: Catalog, *, count: int, collapsed: bool = False,
                 unavailable: Callable[[str], str] = lambda op: "") -> None:
        self.actions = actions
        self.model = model
        self.key = card_key(group)
        self.group = group
        self._quiet = False
        self.enabled = style.classed(w.Checkbox(
            value=group.enabled, indent=False, tooltip="enable / disable this group",
            layout=w.Layout(width="22px")), style.STEP_ENABLED)
        self.title = style.classed(w.HTML(layout=w.Layout(flex="1 1 auto", min_width="0")),
                                   style.STEP_TITLE)
        self.probability = style.classed(w.FloatSlider(
            value=group.probability, min=0, max=1, step=0.01, description="p",
            readout_format=".2f", tooltip="the group fires on this fraction of samples; then "
            "it picks its children", style={"description_width": "14px"},
            layout=w.Layout(width="180px", min_width="180px")), style.STEP_PROBABILITY)
        self.pick = style.classed(w.BoundedIntText(
            value=group.pick, min=1, max=len(group.children), description="pick",
            tooltip="how many distinct children are applied per sample (all of them: every "
            "child, in order)", style={"description_width": "30px"},
            layout=w.Layout(width="90px")), style.GROUP_PICK)
        self.collapse = _button(EXPANDED, "collapse / expand", style.STEP_COLLAPSE)
        self.ungroup_button = _button("\u2922", "ungroup: the children become steps of their "
                                      "own (each on its own coin)", style.GROUP_UNGROUP)
        self.duplicate = _button("\u2750", "duplicate this group", style.STEP_DUPLICATE)
        self.up = _button("\u2191", "move up", style.STEP_UP)
        self.down = _button("\u2193", "move down", style.STEP_DOWN)
        self.remove = _button("\u2715", "remove this group", style.STEP_REMOVE)
        self.reindex(index, count)
        header = w.HBox([self.enabled, self.title, self.probability, self.pick, self.collapse,
                         self.ungroup_button, self.duplicate, self.up, self.down, self.remove],
                        layout=w.Layout(align_items="center"))
        self.summary = w.HTML(layout=w.Layout(display="none"))
        self.error = style.classed(w.HTML(layout=w.Layout(display="none")), style.ERROR,
                                   style.STEP_ERROR)
        self.children: list[StepCard] = []
        self.weights: list[w.BoundedFloatText] = []
        self.shares: list[w.HTML] = []
        rows = []
        for j, child in enumerate(group.children):
            card = StepCard(index, child, catalog[child.op], _ChildActions(self, j),
                            count=count, child=j, unavailable=unavailable(child.op))
            weight = style.classed(w.BoundedFloatText(
                value=1.0, min=MIN_WEIGHT, max=MAX_WEIGHT, step=0.1, description="weight",
                tooltip="how often this child is picked, relative to the others",
                style={"description_width": "44px"}, layout=w.Layout(width="140px")),
                style.GROUP_WEIGHT)
            weight.observe(lambda change, j=j: self._on_weight(j, change), "value")
            share = w.HTML()
            self.children.append(card)
            self.weights.append(weight)
            self.shares.append(share)
            rows.append(w.VBox([w.HBox([weight, share], layout=w.Layout(
                align_items="center")), card.widget], layout=w.Layout(
                margin="2px 0 2px 16px", border_left="2px solid #bbb", padding="0 0 0 6px")))
        self.body = w.VBox(rows)
        self.widget = style.classed(w.VBox([header, self.summary, self.error, self.body]),
                                    style.STEP_CARD, style.GROUP_CARD)
        self.enabled.observe(self._on_enabled, "value")
        self.probability.observe(self._on_probability, "value")
        self.pick.observe(self._on_pick, "value")
        self.collapse.on_click(lambda _: self.set_collapsed(not self.collapsed))
        self.ungroup_button.on_click(lambda _: self.edit(lambda: model.ungroup(self.index)))
        self.duplicate.on_click(lambda _: self.actions.duplicate_step(self.index))
        self.up.on_click(lambda _: self.actions.move_step(self.index, -1))
        self.down.on_click(lambda _: self.actions.move_step(self.index, 1))
        self.remove.on_click(lambda _: self.actions.remove_step(self.index))
        self.collapsed = False
        self.sync(group)
        self.set_collapsed(collapsed)

    # ---- public -------------------------------------------------------------------------------

    def sync(self, group: Group) -> None:
        """Show the pipeline's values for this group (no-ops for values already shown)."""
        self.group = group
        n = len(group.children)
        raw = group.weights if group.weights is not None else [1.0] * n
        self._quiet = True
        try:
            self.enabled.value = group.enabled
            self.probability.value = group.probability
            self.pick.value = group.pick
            for box, weight in zip(self.weights, raw, strict=True):
                box.value = weight
        finally:
            self._quiet = False
        for card, child in zip(self.children, group.children, strict=True):
            card.sync(child)
        shares = dict(zip([j for j, _ in group.active_children()], group.normalised_weights(),
                          strict=True))
        for j, (share, box) in enumerate(zip(self.shares, self.weights, strict=True)):
            box.disabled = group.picks_all() or j not in shares
            share.value = _share_text(group, j, shares.get(j))
        active = len(group.active_children())
        what = "all children, in order" if group.picks_all() else \
            f"pick {group.pick} of {active}"
        p_text = "" if group.probability >= 1 else f" &middot; p={group.probability:g}"
        self.title.value = (f"<b>{self.index}. {GROUP_KEY}</b>"
                            f'<span style="opacity:.6"> {what}{p_text}</span>')
        if group.enabled:
            self.widget.remove_class(style.STEP_DISABLED)
        else:
            self.widget.add_class(style.STEP_DISABLED)
        ops = ", ".join(c.op for _, c in group.active_children())
        self.summary.value = f'<span style="opacity:.75;font-size:12px">{escape(ops)}</span>'

    def retire(self) -> None:
        """Off the page: neither the group's widgets nor its children's edit anything."""
        super().retire()
        for card in self.children:
            card.retire()

    def edit(self, change: Callable[[], Any]) -> None:
        """Apply an edit of the group or a child; a refused one is shown here and the
        card goes back to the pipeline's values. A retired card edits nothing."""
        if self.retired:
            return
        try:
            change()
        except PresetError as e:
            self.error.value = style.error_html(e.problems, "not changed:")
            self.error.layout.display = None
            self.sync(self.group)

    def close(self) -> None:
        style.close_tree(self.widget)

    # ---- internals ----------------------------------------------------------------------------

    def _on_enabled(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self.actions.set_enabled(self.index, bool(change["new"]))

    def _on_probability(self, change: dict[str, Any]) -> None:
        value = round(float(change["new"]), 6)
        if not self._quiet and value != self.group.probability:
            self.actions.set_probability(self.index, value)

    def _on_pick(self, change: dict[str, Any]) -> None:
        if not self._quiet and change["new"] != self.group.pick:
            self.edit(lambda: self.model.set_pick(self.index, int(change["new"])))

    def _on_weight(self, child: int, change: dict[str, Any]) -> None:
        if not self._quiet:
            value = round(float(change["new"]), 6)
            self.edit(lambda: self.model.set_weight(self.index, child, value))


def _share_text(group: Group, child: int, share: float | None) -> str:
    if share is None:
        return '<span style="opacity:.6">disabled: never picked</span>'
    if group.picks_all():
        return '<span style="opacity:.6">always applied when the group fires</span>'
    if group.pick > 1:
        return f'<span style="opacity:.6">weight share {share:.0%}</span>'
    return f'<span style="opacity:.6">picked on {share:.0%} of the samples the group fires on' \
           "</span>"


def kept_cards(cards: list[StepCard | GroupCard], steps: list[Step | Group],
               removed: int | None) -> list[StepCard | None]:
    """For each of ``steps``, a step card of ``cards`` (the page's, before a structural edit)
    to keep for it: one built for the same operator, taken in page order, or None (a card is
    made). Synced, a kept card shows its new step exactly, and the browser need not make its
    views again: rebuilding every card on each edit kept the new preview ~1 s behind its
    render on the 2-core machine. Group cards are always made anew. The card at ``removed``
    (the step an edit removed) is never kept: the second click of a double click on its
    "remove" must find it inert, not remove the step of the same operator that took its
    place."""
    free: dict[Hashable, list[StepCard]] = {}
    for i, card in enumerate(cards):
        if isinstance(card, StepCard) and i != removed:
            free.setdefault(card.key, []).append(card)
    out: list[StepCard | None] = []
    for step in steps:
        pool = free.get(card_key(step)) if not isinstance(step, Group) else None
        out.append(pool.pop(0) if pool else None)
    return out


def arrange_cards(cards: list[StepCard | GroupCard], steps: list[Step | Group],
                  removed: int | None,
                  make: Callable[[int, Step | Group, bool], StepCard | GroupCard]
                  ) -> list[StepCard | GroupCard]:
    """The cards of ``steps`` after a structural edit: those :func:`kept_cards` keeps,
    re-indexed and synced, and new ones from ``make(index, step, collapsed)`` (collapsed as
    the same occurrence of its operator was: :func:`collapsed_by_op`)."""
    kept = kept_cards(cards, steps, removed)
    collapsed = collapsed_by_op(cards)
    out: list[StepCard | GroupCard] = []
    seen: dict[Hashable, int] = {}
    for i, (step, card) in enumerate(zip(steps, kept, strict=True)):
        key = card_key(step)
        k = seen[key] = seen.get(key, -1) + 1
        if card is None:
            out.append(make(i, step, collapsed.get((key, k), False)))
            continue
        card.reindex(i, len(steps))
        card.sync(step)  # type: ignore[arg-type]  # kept for a step of its operator
        out.append(card)
    return out


def retire(cards: list[StepCard | GroupCard]) -> list[w.Widget]:
    """Make cards taken off the page inert (see :meth:`CardFrame.retire`); their widgets."""
    for card in cards:
        card.retire()
    return [card.widget for card in cards]


def collapsed_by_op(cards: list[StepCard | GroupCard]) -> dict[tuple[Any, int], bool]:
    """Collapse state by (operator or group, occurrence), carried across card rebuilds."""
    out: dict[tuple[Any, int], bool] = {}
    seen: dict[Any, int] = {}
    for c in cards:
        k = seen[c.key] = seen.get(c.key, -1) + 1
        out[(c.key, k)] = c.collapsed
    return out
