"""One card per step of the chain: header actions plus one control per parameter.

The card is generated from the operator's catalog entry: the magnitude parameter first (the
one the catalog names as the operator's strength), then the others in declaration order.
Edits go to the builder through :class:`CardActions`; a refused value is shown next to its
control and a render failure of this step next to the card's title.
"""

from __future__ import annotations

from collections.abc import Hashable
from html import escape
from typing import Any, Protocol

import ipywidgets as w

from dali_gallery.pipelines.catalog import OpSpec
from dali_gallery.pipelines.preset import PresetError, Step

from . import style
from .controls import ParamControl
from .param_values import describe_value

EXPANDED, COLLAPSED = "\u25be", "\u25b8"


class CardActions(Protocol):
    """What a card asks of the builder (indices are the step's position in the chain)."""

    def set_param(self, index: int, name: str, value: Any) -> None: ...
    def set_probability(self, index: int, probability: float) -> None: ...
    def set_enabled(self, index: int, enabled: bool) -> None: ...
    def duplicate_step(self, index: int) -> int: ...
    def move_step(self, index: int, delta: int) -> int: ...
    def remove_step(self, index: int) -> None: ...


def _button(label: str, tip: str, css: str) -> w.Button:
    """A small text button: Unicode symbols need no icon font (Voila may have none offline)."""
    return style.classed(w.Button(description=label, tooltip=tip, layout=w.Layout(
        width="30px", min_width="30px", padding="0")), css)


class _Inert:
    """The actions of a card taken off the page: its widgets stay open a while
    (:class:`~.style.Retired`), and a click already on its way (the second of a double
    click) must not edit the step that now has the card's index."""

    def set_param(self, index: int, name: str, value: Any) -> None:
        pass

    def set_probability(self, index: int, probability: float) -> None:
        pass

    def set_enabled(self, index: int, enabled: bool) -> None:
        pass

    def duplicate_step(self, index: int) -> int:
        return index

    def move_step(self, index: int, delta: int) -> int:
        return index

    def remove_step(self, index: int) -> None:
        pass


class CardFrame:
    """Place, collapse and render-error display shared by step and group cards (they hold
    ``body``, ``summary``, ``collapse``, ``up``, ``down``, ``error`` and ``widget``)."""

    index: int
    collapsed: bool
    actions: CardActions
    retired = False
    body: w.Box
    summary: w.HTML
    collapse: w.Button
    up: w.Button
    down: w.Button
    error: w.HTML
    widget: w.Box

    def reindex(self, index: int, count: int) -> None:
        """The card shows item ``index`` of ``count`` in the chain: made there, or kept there
        by a structural edit (see :func:`~.group_card.kept_cards`; :meth:`sync` then shows the
        step); its first cannot move up, its last down."""
        self.index = index
        self.up.disabled = index == 0
        self.down.disabled = index == count - 1

    def retire(self) -> None:
        """The card is off the page: its widgets edit nothing from now on."""
        self.retired = True
        self.actions = _Inert()

    def set_collapsed(self, collapsed: bool) -> None:
        self.collapsed = collapsed
        self.body.layout.display = "none" if collapsed else None
        self.summary.layout.display = None if collapsed else "none"
        self.collapse.description = COLLAPSED if collapsed else EXPANDED

    def show_error(self, message: str | None) -> None:
        """A render failure caused by this step or group (None clears it); expands the
        card."""
        if message:
            self.error.value = f"<b>render failed:</b> {escape(message)}"
            self.error.layout.display = None
            self.widget.add_class(style.STEP_CARD_ERROR)
            self.set_collapsed(False)
        else:
            self.error.value = ""
            self.error.layout.display = "none"
            self.widget.remove_class(style.STEP_CARD_ERROR)

    @property
    def error_text(self) -> str:
        return self.error.value


class StepCard(CardFrame):
    """Widgets of step ``index``; kept across structural edits for a step of the same operator
    (:meth:`reindex`), made anew for a new one. ``child``: the
    card is that child of the group at ``index`` (a :class:`~.group_card.GroupCard` holds it;
    ``actions`` then edit the child, and the chain's buttons are the group's)."""

    def __init__(self, index: int, step: Step, spec: OpSpec, actions: CardActions, *,
                 count: int, collapsed: bool = False, unavailable: str = "",
                 child: int | None = None) -> None:
        self.child = child
        self.key: Hashable = spec.name  # what the card is built for (see group_card.card_key)
        self.spec = spec
        self.actions = actions
        self._quiet = False
        self.enabled = style.classed(w.Checkbox(
            value=step.enabled, indent=False, tooltip="enable / disable this step (disabled "
            "steps are kept in the preset but neither previewed nor exported)",
            layout=w.Layout(width="22px")), style.STEP_ENABLED)
        self.title = style.classed(w.HTML(tooltip=spec.doc, layout=w.Layout(
            flex="1 1 auto", min_width="0")), style.STEP_TITLE)
        self.probability = style.classed(w.FloatSlider(
            value=step.probability, min=0, max=1, step=0.01, description="p",
            readout_format=".2f", continuous_update=True,
            tooltip="apply probability: the step fires on this fraction of samples "
                    "(a per-sample coin flip)",
            style={"description_width": "14px"},
            layout=w.Layout(width="180px", min_width="180px")), style.STEP_PROBABILITY)
        self.collapse = _button(EXPANDED, "collapse / expand", style.STEP_COLLAPSE)
        self.duplicate = _button("\u2750", "duplicate this step", style.STEP_DUPLICATE)
        self.up = _button("\u2191", "move up", style.STEP_UP)
        self.down = _button("\u2193", "move down", style.STEP_DOWN)
        self.remove = _button("\u2715", "remove this step", style.STEP_REMOVE)
        self.reindex(index, count)
        if child is not None:  # moved, copied and removed with its group
            for b in (self.duplicate, self.up, self.down, self.remove):
                b.layout.display = "none"
            self.probability.tooltip = ("apply probability once picked: the child fires on "
                                        "this fraction of the samples its group picks it for")
        header = w.HBox([self.enabled, self.title, self.probability, self.collapse,
                         self.duplicate, self.up, self.down, self.remove],
                        layout=w.Layout(align_items="center"))
        self.summary = w.HTML(layout=w.Layout(display="none"))
        self.error = style.classed(w.HTML(layout=w.Layout(display="none")), style.ERROR,
                                   style.STEP_ERROR)
        note = "" if not unavailable else (
            f'<div class="{style.ERROR}">{escape(unavailable)}</div>')
        doc = w.HTML(f'<div style="opacity:.7;font-size:12px">{escape(spec.doc)} '
                     f"<i>({escape(spec.category)})</i></div>{note}")
        self.controls: dict[str, ParamControl] = {}
        ordered = sorted(spec.params, key=lambda p: p.name != spec.magnitude)
        for p in ordered:
            symmetric = p.neutral if (spec.signed and p.neutral is not None
                                      and p.kind in ("float", "int")) else None
            self.controls[p.name] = ParamControl(
                p, step.params[p.name], self._on_param, magnitude=p.name == spec.magnitude,
                symmetric_about=symmetric)
        self.body = w.VBox([doc] + [c.widget for c in self.controls.values()])
        self.widget = style.classed(w.VBox([header, self.summary, self.error, self.body]),
                                    style.STEP_CARD if child is None else style.GROUP_CHILD)
        self.enabled.observe(self._on_enabled, "value")
        self.probability.observe(self._on_probability, "value")
        self.collapse.on_click(lambda _: self.set_collapsed(not self.collapsed))
        self.duplicate.on_click(lambda _: self.actions.duplicate_step(self.index))
        self.up.on_click(lambda _: self.actions.move_step(self.index, -1))
        self.down.on_click(lambda _: self.actions.move_step(self.index, 1))
        self.remove.on_click(lambda _: self.actions.remove_step(self.index))
        self.collapsed = False
        self.sync(step)
        self.set_collapsed(collapsed)

    # ---- public -------------------------------------------------------------------------------

    def sync(self, step: Step) -> None:
        """Show the pipeline's values for this step (no-ops for values already shown)."""
        self.step = step
        self._quiet = True
        try:
            self.enabled.value = step.enabled
            self.probability.value = step.probability
        finally:
            self._quiet = False
        for name, control in self.controls.items():
            control.set_value(step.params[name])
        p_text = "" if step.probability >= 1 else f" &middot; p={step.probability:g}"
        number = self.index if self.child is None else f"{self.index}.{self.child}"
        self.title.value = (f"<b>{number}. {escape(self.spec.name)}</b>"
                            f'<span style="opacity:.6">{p_text}</span>')
        if step.enabled:
            self.widget.remove_class(style.STEP_DISABLED)
        else:
            self.widget.add_class(style.STEP_DISABLED)
        self.summary.value = self._summary(step)

    def close(self) -> None:
        style.close_tree(self.widget)

    # ---- internals ----------------------------------------------------------------------------

    def _summary(self, step: Step) -> str:
        if not self.spec.params:
            return ""
        name = self.spec.magnitude or self.spec.params[0].name
        p = self.spec.param(name)
        text = f"{name}: {describe_value(p, step.params[name])}"
        return f'<span style="opacity:.75;font-size:12px">{escape(text)}</span>'

    def _on_param(self, name: str, value: Any) -> None:
        control = self.controls[name]
        try:
            self.actions.set_param(self.index, name, value)
        except PresetError as e:  # refused: show why, and the value the pipeline kept
            control.set_value(self.step.params[name], force=True)
            control.show_error("; ".join(e.problems) + " (kept "
                               f"{describe_value(control.param, control.value)})")
        else:
            control.show_error(None)

    def _on_enabled(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self.actions.set_enabled(self.index, bool(change["new"]))

    def _on_probability(self, change: dict[str, Any]) -> None:
        value = round(float(change["new"]), 6)  # no binary noise from the browser's slider
        if not self._quiet and value != self.step.probability:
            self.actions.set_probability(self.index, value)
