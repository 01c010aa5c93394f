"""One control per catalog parameter, derived from its :class:`Param` declaration only.

Kind, bounds, slider range, step, unit, neutral value and whether DALI takes the value at run
time decide the widget: sliders for numbers (a range slider when the value is drawn per sample,
a text list for a per-sample choice), a checkbox or an on/off/random switch for booleans, a
dropdown for enums, and a grey-level slider with a swatch for fill values. No operator is named
here. The control never changes the pipeline itself: it proposes values through ``on_change``
and shows what the model accepted (``set_value``) or why it refused (``show_error``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from html import escape
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.params import Param
from dali_gallery.pipelines.preset import Choice, Uniform

from . import style
from .param_values import (
    CHOICE,
    FIXED,
    RANGE,
    clean,
    decimals,
    default_range,
    exact_number,
    fixed_from_range,
    fmt_number,
    is_fill,
    mode_of,
    parse_choice,
    slider_range,
    tooltip,
)

MODE_LABELS = {FIXED: "fixed", RANGE: "range", CHOICE: "list"}
MODE_TIPS = {
    FIXED: "fixed value: the same for every sample",
    RANGE: "drawn per sample, uniformly from [lo, hi]",
    CHOICE: "drawn per sample from a list of values",
}
BOOL_STATES = (("off", "off"), ("on", "on"), ("random", "random"))
LABEL_WIDTH = "118px"

OnChange = Callable[[str, Any], None]


class ParamControl:
    """The widgets of one parameter of one step.

    ``widget`` holds a label (tooltip: :func:`tooltip`), the value widget(s), the mode switch
    (fixed / per-sample range / per-sample list) when the parameter can be drawn per sample,
    a "symmetric" switch for signed parameters, and an error line.
    """

    def __init__(self, p: Param, value: Any, on_change: OnChange, *, magnitude: bool = False,
                 symmetric_about: float | None = None) -> None:
        self.param = p
        self.on_change = on_change
        self.symmetric_about = symmetric_about
        self._value = value
        self._quiet = False
        self.error_message = ""
        self.modes = p.modes
        tip = tooltip(p)
        unit = f' <span class="dg-unit" style="opacity:.65">{escape(p.unit)}</span>' \
            if p.unit else ""
        name = f"<b>{escape(p.name)}</b>" if magnitude else escape(p.name)
        self.label = w.HTML(f"{name}{unit}", tooltip=tip,
                            layout=w.Layout(width=LABEL_WIDTH, min_width=LABEL_WIDTH))
        self.error = style.classed(w.HTML("", layout=w.Layout(display="none")),
                                   style.ERROR, style.PARAM_ERROR)
        self.mode: w.ToggleButtons | None = None
        self.symmetric: w.Checkbox | None = None
        self.fixed = self._fixed_widget(tip)
        self.range: w.FloatRangeSlider | w.IntRangeSlider | None = None
        self.choice: w.Text | None = None
        self.swatch: w.HTML | None = None
        row = [self.label, self.fixed]
        if RANGE in self.modes:
            self.range = self._range_widget(tip)
            row.append(self.range)
        if CHOICE in self.modes and p.kind != "bool":
            self.choice = w.Text(placeholder="values, e.g. 1, 2, 3", tooltip=tip,
                                 continuous_update=False, layout=w.Layout(flex="1 1 auto"))
            self.choice.observe(self._on_choice, "value")
            row.append(self.choice)
        if is_fill(p):
            self.swatch = w.HTML(layout=w.Layout(width="22px"))
            row.append(self.swatch)
        extra: list[w.Widget] = []
        if len(self.modes) > 1 and p.kind != "bool":
            self.mode = style.classed(w.ToggleButtons(
                options=[(MODE_LABELS[m], m) for m in self.modes],
                tooltips=[MODE_TIPS[m] for m in self.modes],
                style={"button_width": "40px"},
                layout=w.Layout(width="132px", min_width="132px")), style.PARAM_MODE)
            self.mode.observe(self._on_mode, "value")
            row.append(self.mode)
            if symmetric_about is not None and RANGE in self.modes:
                about = fmt_number(symmetric_about)
                self.symmetric = style.classed(w.Checkbox(
                    value=True, indent=False, description=f"symmetric about {about}",
                    tooltip="moving one end of the range mirrors the other about the neutral "
                            "value", layout=w.Layout(width="auto")), style.PARAM_SYMMETRIC)
                extra.append(self.symmetric)
        rows: list[w.Widget] = [w.HBox(row, layout=w.Layout(align_items="center"))]
        if extra:
            rows.append(w.HBox(extra, layout=w.Layout(margin="0 0 0 " + LABEL_WIDTH,
                                                      align_items="center")))
        rows.append(self.error)
        self.widget = style.classed(w.VBox(rows), style.PARAM, style.param_class(p.name))
        if magnitude:
            self.widget.add_class(style.MAGNITUDE)
        self.set_value(value, force=True)

    # ---- public -------------------------------------------------------------------------------

    @property
    def value(self) -> Any:
        """The value last accepted by the pipeline (what the preset holds)."""
        return self._value

    def set_value(self, value: Any, force: bool = False) -> None:
        """Show ``value`` without proposing it back (undo, load, API edits)."""
        if not force and _same(value, self._value):
            return
        self._value = value
        with self._silenced():
            self._show(value)

    def show_error(self, message: str | None) -> None:
        """A refused value: say why next to the control (None clears it)."""
        self.error_message = message or ""
        self.error.value = escape(message) if message else ""
        self.error.layout.display = None if message else "none"

    def close(self) -> None:
        style.close_tree(self.widget)

    # ---- building -----------------------------------------------------------------------------

    def _fixed_widget(self, tip: str) -> w.Widget:
        p = self.param
        if p.kind == "enum":
            wd: w.Widget = w.Dropdown(options=[(str(c), c) for c in p.choices], tooltip=tip,
                                      layout=w.Layout(width="auto"))
        elif p.kind == "bool" and CHOICE in self.modes:
            wd = w.ToggleButtons(options=list(BOOL_STATES), tooltip=tip,
                                 tooltips=["always off", "always on",
                                           "drawn per sample (half on, half off)"],
                                 style={"button_width": "58px"})
        elif p.kind == "bool":
            wd = w.Checkbox(indent=False, tooltip=tip, layout=w.Layout(width="auto"))
        elif p.kind == "int":
            lo, hi = slider_range(p)
            wd = w.IntSlider(min=lo, max=hi, step=int(p.step or 1), tooltip=tip,
                             continuous_update=True, layout=w.Layout(flex="1 1 auto"))
        else:
            lo, hi = slider_range(p)
            step = p.step or (hi - lo) / 100
            wd = w.FloatSlider(min=lo, max=hi, step=step, tooltip=tip,
                               readout_format=f".{decimals(step)}f", continuous_update=True,
                               layout=w.Layout(flex="1 1 auto"))
        wd.observe(self._on_fixed, "value")
        return wd

    def _range_widget(self, tip: str) -> w.FloatRangeSlider | w.IntRangeSlider:
        p = self.param
        lo, hi = slider_range(p)
        if p.kind == "int":
            wd: w.FloatRangeSlider | w.IntRangeSlider = w.IntRangeSlider(
                min=lo, max=hi, value=(lo, hi), step=int(p.step or 1), tooltip=tip,
                layout=w.Layout(flex="1 1 auto"))
        else:
            step = p.step or (hi - lo) / 100
            wd = w.FloatRangeSlider(min=lo, max=hi, value=(lo, hi), step=step, tooltip=tip,
                                    readout_format=f".{decimals(step)}f",
                                    layout=w.Layout(flex="1 1 auto"))
        wd.observe(self._on_range, "value")
        return wd

    # ---- showing values -----------------------------------------------------------------------

    def _show(self, value: Any) -> None:
        p = self.param
        mode = mode_of(value)
        if self.mode is not None:
            self.mode.value = mode
        if p.kind == "bool" and CHOICE in self.modes:
            self.fixed.value = "random" if mode == CHOICE else ("on" if value else "off")
        elif p.kind in ("bool", "enum"):
            self.fixed.value = value
        elif mode == FIXED:
            _set_slider(self.fixed, value, slider_range(p, (value,)))
        elif mode == RANGE and self.range is not None:
            _set_slider(self.range, (value.lo, value.hi), slider_range(p, (value.lo, value.hi)))
            if self.symmetric is not None and not math.isclose(
                    value.lo + value.hi, 2 * self.symmetric_about, abs_tol=1e-6):
                self.symmetric.value = False  # an asymmetric range was loaded or typed
        elif mode == CHOICE and self.choice is not None:
            self.choice.value = ", ".join(exact_number(v) for v in value.values)
        if self.swatch is not None and mode == FIXED:
            g = max(0, min(255, round(float(value))))
            self.swatch.value = (f'<div title="grey level {g}" style="width:18px;height:18px;'
                                 f'border:1px solid #888;background:rgb({g},{g},{g})"></div>')
        self._layout(mode)

    def _layout(self, mode: str) -> None:
        show_fixed = mode == FIXED or self.param.kind == "bool"
        self.fixed.layout.display = None if show_fixed else "none"
        if self.range is not None:
            self.range.layout.display = None if mode == RANGE else "none"
        if self.choice is not None:
            self.choice.layout.display = None if mode == CHOICE else "none"
        if self.symmetric is not None:
            self.symmetric.layout.display = None if mode == RANGE else "none"

    # ---- user input ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _silenced(self) -> Iterator[None]:
        old, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = old

    def _propose(self, value: Any) -> None:
        if not _same(value, self._value):
            self.on_change(self.param.name, value)

    def _on_fixed(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        p = self.param
        if p.kind == "bool" and CHOICE in self.modes:
            state = change["new"]
            if state == "random":
                keep = self._value if isinstance(self._value, Choice) else None
                self._propose(keep or Choice((False, True)))
            else:
                self._propose(state == "on")
        else:
            self._propose(clean(p, change["new"]) if p.kind in ("int", "float") else change["new"])

    def _on_range(self, change: dict[str, Any]) -> None:
        if self._quiet or self.range is None:
            return
        p = self.param
        lo, hi = clean(p, change["new"][0]), clean(p, change["new"][1])
        if self.symmetric is not None and self.symmetric.value:
            lo, hi = self._mirror(change["old"], (lo, hi))
        self._propose(Uniform(clean(p, lo), clean(p, hi)))

    def _mirror(self, old: tuple[float, float], new: tuple[float, float]) -> tuple[float, float]:
        """Keep the range symmetric about the neutral value: the moved end decides."""
        assert self.range is not None and self.symmetric_about is not None
        n = self.symmetric_about
        moved_lo = not math.isclose(new[0], old[0]) and math.isclose(new[1], old[1])
        d = abs(n - new[0]) if moved_lo else abs(new[1] - n)
        d = min(d, n - self.range.min, self.range.max - n)
        lo, hi = n - d, n + d
        if self.param.kind == "int":
            lo, hi = math.ceil(lo), math.floor(hi)
        if hi <= lo:
            return new
        with self._silenced():
            self.range.value = (lo, hi)
        return lo, hi

    def _on_choice(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        try:
            values = parse_choice(self.param, change["new"])
        except ValueError as e:
            self.show_error(f"{self.param.name}: {e}")
            return
        self._propose(Choice(values))

    def _on_mode(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        p, v, mode = self.param, self._value, change["new"]
        if isinstance(v, Uniform):
            fixed = fixed_from_range(p, v.lo, v.hi, self.symmetric_about)
        elif isinstance(v, Choice):
            fixed = p.coerce(v.values[0])
        else:
            fixed = v
        if mode == FIXED:
            self._propose(fixed)
        elif mode == RANGE:
            self._propose(Uniform(*default_range(p, float(fixed), self.symmetric_about)))
        else:
            self._propose(Choice((fixed,)))
        if self.mode is not None:  # a refused switch shows the mode the pipeline still has
            with self._silenced():
                self.mode.value = mode_of(self._value)
        self._layout(mode_of(self._value))


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _set_slider(wd: w.Widget, value: Any, bounds: tuple[float, float]) -> None:
    """Set min/max then value without the slider clamping the value on the way."""
    lo, hi = bounds
    if lo > wd.max:
        wd.max = hi
        wd.min = lo
    else:
        wd.min = lo
        wd.max = hi
    wd.value = value
