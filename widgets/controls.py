"""One control per catalog parameter, derived from its :class:`Param` declaration only.

Kind, bounds, slider range, step, unit, neutral value and whether DALI takes the value at run
time decide the widget: sliders for numbers (a range slider when the value is drawn per sample,
a text list for a per-sample choice), a checkbox or an on/off/random switch for booleans, a
dropdown for enums, and a grey-level slider with a swatch for fill values. No operator is named
here. The control never changes the pipeline itself: it proposes values through ``on_change``
and shows what the model accepted (``set_value``) or why it refused (``show_error``).

A signed parameter's range is "symmetric about" its neutral value ``n`` by default, and then
shown as one slider for the half-width ``d`` (the range is ``n - d`` to ``n + d``) instead of
the two-handled range slider. The kernel used to keep a two-handled range symmetric by
mirroring the moved end and writing the result back into the slider the user was moving; that
write-back raced with the browser (ipywidgets 8's frontend applies the kernel's updates while
its own later changes are still pending, and it throttles its sends), so quick key presses or a
drag on a slow kernel made the handles jump. Nothing here writes into a slider being moved
other than ``set_value`` showing what the model accepted, which skips float noise.
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
    half_width_reach,
    is_fill,
    is_symmetric,
    mode_of,
    parse_choice,
    slider_range,
    symmetric_range,
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
    a "symmetric" switch for signed parameters, and an error line. One value widget shows at a
    time: the fixed slider, the half-width slider (``half``: a range while "symmetric" is on),
    the two-handled ``range`` slider, or the list field. The half-width slider proposes
    ``n - d, n + d`` itself, so no mirrored range is ever written back into a slider the
    user is moving (that raced with the browser, see the module docstring).
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
        self.half: w.FloatSlider | w.IntSlider | None = None
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
                    tooltip=f"one slider for the half-width d: the range is {about} ± d "
                            "(untick to move the two ends apart)",
                    layout=w.Layout(width="auto")), style.PARAM_SYMMETRIC)
                self.symmetric.observe(self._on_symmetric, "value")
                extra.append(self.symmetric)
                self.half = self._half_widget(about)
                row.insert(row.index(self.range) + 1, self.half)
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

    def _half_widget(self, about: str) -> w.FloatSlider | w.IntSlider:
        """The half-width ``d`` of a range symmetric about the neutral value, with the range
        slider's step and readout; its bounds are set by :meth:`_show`."""
        assert self.range is not None
        tip = (f"± d about {about}: drawn per sample, uniformly from [{about} - d, "
               f"{about} + d]")
        common: dict[str, Any] = {
            "description": "±", "tooltip": tip, "continuous_update": True,
            "style": {"description_width": "initial"}, "layout": w.Layout(flex="1 1 auto")}
        if self.param.kind == "int":
            wd: w.FloatSlider | w.IntSlider = w.IntSlider(min=0, max=1, step=self.range.step,
                                                          **common)
        else:
            wd = w.FloatSlider(min=0, max=1, step=self.range.step,
                               readout_format=self.range.readout_format, **common)
        style.classed(wd, style.PARAM_HALF_WIDTH)
        wd.observe(self._on_half, "value")
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
            bounds = slider_range(p, (value.lo, value.hi))
            _set_slider(self.range, (value.lo, value.hi), bounds)
            if self.symmetric is not None and not is_symmetric(value, self.symmetric_about):
                self.symmetric.value = False  # an asymmetric range was loaded or typed
            elif self.half is not None:
                d = (value.hi - value.lo) / 2
                d = round(d) if p.kind == "int" else d
                reach = half_width_reach(p, self.symmetric_about, bounds)
                _set_slider(self.half, d, (min(self.half.step, d), max(reach, d)))
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
        half = mode == RANGE and self.symmetric is not None and self.symmetric.value
        if self.half is not None:
            self.half.layout.display = None if half else "none"
        if self.range is not None:
            self.range.layout.display = None if mode == RANGE and not half else "none"
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
        self._propose(Uniform(clean(p, change["new"][0]), clean(p, change["new"][1])))

    def _on_half(self, change: dict[str, Any]) -> None:
        """The half-width slider moved: propose the range ``n - d, n + d``. Nothing is
        written back into the slider (what the model accepts comes back via set_value)."""
        if self._quiet:
            return
        p = self.param
        rng = symmetric_range(p, self.symmetric_about, abs(clean(p, change["new"])))
        if rng is not None:
            self._propose(rng)

    def _on_symmetric(self, change: dict[str, Any]) -> None:
        """Unticked: the range slider shows the current range. Ticked on an asymmetric range:
        propose the symmetric one reaching as far as its farther end (within the slider); a
        refusal unticks the box again."""
        if self._quiet:
            return
        p, n, v = self.param, self.symmetric_about, self._value
        if change["new"] and isinstance(v, Uniform) and not is_symmetric(v, n):
            reach = half_width_reach(p, n, slider_range(p, (v.lo, v.hi)))
            rng = symmetric_range(p, n, min(max(abs(v.lo - n), abs(v.hi - n)), reach))
            if rng is not None:
                self._propose(rng)
            if not is_symmetric(self._value, n) and self.symmetric is not None:
                with self._silenced():
                    self.symmetric.value = False
        self._layout(mode_of(self._value))

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
    """Set min/max then value without the slider clamping the value on the way. A value that
    differs from the slider's only by float noise (the browser's 0.30000000000000004 for the
    0.3 the model kept) is not written: that write would reach a browser whose user may
    already have moved the slider further, and move it back."""
    lo, hi = bounds
    if lo > wd.max:
        wd.max = hi
        wd.min = lo
    else:
        wd.min = lo
        wd.max = hi
    if not _close(wd.value, value):
        wd.value = value


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b
