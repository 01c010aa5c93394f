"""Controls are derived from the catalog's Param declarations alone, for every operator."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import pytest

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.params import Param
from dali_gallery.pipelines.preset import Choice, PresetError, Uniform, load
from dali_gallery.widgets.controls import ParamControl
from dali_gallery.widgets.param_values import (
    CHOICE,
    FIXED,
    RANGE,
    decimals,
    default_range,
    describe_value,
    slider_range,
    tooltip,
)
from tests.support import preset_dict

PARAMS = [(op, p) for op, spec in CATALOG.items() for p in spec.params]


def control(op: str, name: str, value: Any = None, **kw: Any) -> tuple[ParamControl, list]:
    spec = CATALOG[op]
    p = spec.param(name)
    proposed: list[tuple[str, Any]] = []
    symmetric = p.neutral if spec.signed and p.neutral is not None else None
    c = ParamControl(p, p.default if value is None else value,
                     lambda n, v: proposed.append((n, v)), symmetric_about=symmetric, **kw)
    return c, proposed


def validates(op: str, name: str, value: Any) -> bool:
    raw = value.to_json() if isinstance(value, (Uniform, Choice)) else value
    try:
        load(preset_dict([{"op": op, "params": {name: raw}}]))
    except PresetError:
        return False
    return True


@pytest.mark.parametrize(("op", "p"), PARAMS, ids=[f"{o}.{p.name}" for o, p in PARAMS])
def test_every_parameter_gets_a_control_matching_its_declaration(op, p):
    c, proposed = control(op, p.name)
    assert f"dg-param-{p.name}" in c.widget._dom_classes
    assert p.describe() in c.label.tooltip
    if p.kind == "enum":
        assert isinstance(c.fixed, w.Dropdown)
        assert [v for _, v in c.fixed.options] == list(p.choices)
        assert c.fixed.value == p.default
    elif p.kind == "bool":
        assert isinstance(c.fixed, (w.Checkbox, w.ToggleButtons))
    else:
        assert isinstance(c.fixed, w.IntSlider if p.kind == "int" else w.FloatSlider)
        assert (c.fixed.min, c.fixed.max) == slider_range(p, (p.default,))
        assert c.fixed.value == p.default
        if p.step:
            assert c.fixed.step == p.step
    assert proposed == []  # showing a value never proposes it back
    c.close()


@pytest.mark.parametrize(("op", "p"), PARAMS, ids=[f"{o}.{p.name}" for o, p in PARAMS])
def test_offered_modes_are_exactly_what_presets_accept(op, p):
    """The widget offers a per-sample range / list exactly where preset validation (and so
    DALI) accepts one."""
    modes = p.modes
    if p.kind in ("float", "int"):
        rng = Uniform(*default_range(p, float(p.default), None))
        assert validates(op, p.name, rng) == (RANGE in modes)
        assert validates(op, p.name, Choice((p.default,))) == (CHOICE in modes)
    elif p.kind == "bool":
        assert validates(op, p.name, Choice((False, True))) == (CHOICE in modes)
    assert FIXED in modes


def test_fixed_slider_proposes_a_literal():
    c, proposed = control("rotate", "angle", magnitude=True)
    c.fixed.value = 30.0
    assert proposed == [("angle", 30.0)]
    assert "dg-magnitude" in c.widget._dom_classes


def test_signed_magnitude_switches_to_a_range_symmetric_about_neutral():
    c, proposed = control("rotate", "angle", magnitude=True)
    assert c.symmetric is not None
    c.mode.value = RANGE
    assert proposed[-1] == ("angle", Uniform(-15.0, 15.0))  # the catalog's random_default
    c2, proposed2 = control("rotate", "angle", value=20.0)
    c2.mode.value = RANGE
    assert proposed2[-1] == ("angle", Uniform(-20.0, 20.0))
    c3, proposed3 = control("brightness", "brightness", value=1.5)
    c3.mode.value = RANGE
    lo, hi = proposed3[-1][1].lo, proposed3[-1][1].hi
    assert lo == pytest.approx(0.5) and hi == pytest.approx(1.5)


def accepting(op: str, name: str, value: Any = None) -> tuple[ParamControl, list]:
    """A control whose proposals the model accepts at once (shown back via set_value), as a
    step card's are; a value the preset refuses is kept, as the card keeps it."""
    c, proposed = control(op, name, value)

    def accept(n: str, v: Any) -> None:
        proposed.append((n, v))
        if validates(op, n, v):
            c.set_value(v)
        else:
            c.set_value(c.value, force=True)

    c.on_change = accept
    return c, proposed


def shown(c: ParamControl) -> list[str]:
    """The value widgets on screen."""
    widgets = {"fixed": c.fixed, "half": c.half, "range": c.range, "choice": c.choice}
    return [k for k, wd in widgets.items() if wd is not None and wd.layout.display is None]


def test_a_symmetric_range_is_one_half_width_slider():
    """A symmetric range shows one slider for the half-width d, which proposes n - d, n + d:
    the two-handled slider used to mirror the moved end and write it back into the slider
    being moved, which raced with the browser (handles jumped back on quick key presses)."""
    c, proposed = accepting("rotate", "angle", value=Uniform(-15, 15))
    assert c.symmetric.value and shown(c) == ["half"]
    assert isinstance(c.half, w.FloatSlider) and "dg-param-half-width" in c.half._dom_classes
    assert "dg-param-symmetric" in c.symmetric._dom_classes
    assert c.half.value == 15 and (c.half.min, c.half.max) == (1, 90)  # the slider's reach
    assert c.half.step == c.range.step and c.half.readout_format == c.range.readout_format
    assert "± d about 0" in c.half.tooltip and c.half.description == "±"
    c.half.value = 40.0
    assert proposed == [("angle", Uniform(-40.0, 40.0))]
    assert c.value == Uniform(-40.0, 40.0) and c.range.value == (-40.0, 40.0)
    c.half.value = 20.000000000000004  # browser noise
    assert proposed[-1] == ("angle", Uniform(-20.0, 20.0))


def test_a_factor_is_symmetric_about_one():
    c, proposed = accepting("brightness", "brightness", value=Uniform(0.7, 1.3))
    assert shown(c) == ["half"] and c.half.value == pytest.approx(0.3)
    assert c.half.max == pytest.approx(1.0)  # 1 - 1 and 1 + 1 fit the slider (0, 2)
    c.half.value = 0.5
    assert proposed[-1] == ("brightness", Uniform(0.5, 1.5))


def test_moving_the_half_width_slider_never_writes_a_slider_back():
    """As a frontend does: the half-width value set N times in a row. Each proposal is exactly
    n - d, n + d of the value set, and the kernel side changes no slider's value the user
    might be moving (the hidden range slider shows the accepted range)."""
    c, proposed = accepting("rotate", "angle", value=Uniform(-15, 15))
    writes: list[Any] = []
    c.half.observe(lambda ch: writes.append(ch["new"]), "value")
    c.fixed.observe(lambda ch: writes.append(("fixed", ch["new"])), "value")
    frontend = [16.000000000000004, 17.0, 18.0, 17.0, 30.0, 30.000000000000004, 89.0, 90.0,
                2.0, 1.0]
    for d in frontend:
        c.half.value = d
    assert writes == frontend  # only the frontend's own values: not even 16.0 for 16.00...04
    assert [v for _, v in proposed] == [Uniform(-d, d) for d in
                                        [16.0, 17.0, 18.0, 17.0, 30.0, 89.0, 90.0, 2.0, 1.0]]
    assert c.value == Uniform(-1.0, 1.0) and c.range.value == (-1.0, 1.0)
    assert c.symmetric.value and shown(c) == ["half"]


def test_unticking_symmetric_shows_the_range_slider_with_the_same_range():
    c, proposed = accepting("rotate", "angle", value=Uniform(-15, 15))
    c.half.value = 40.0
    c.symmetric.value = False
    assert shown(c) == ["range"] and c.range.value == (-40.0, 40.0)
    assert proposed == [("angle", Uniform(-40.0, 40.0))]  # unticking proposes nothing
    c.range.value = (-40.0, 10.0)  # the ends move apart, nothing mirrored
    assert proposed[-1] == ("angle", Uniform(-40.0, 10.0)) and c.range.value == (-40.0, 10.0)
    assert not c.symmetric.value


def test_ticking_symmetric_on_an_asymmetric_range_proposes_the_symmetric_one():
    c, proposed = accepting("rotate", "angle", value=Uniform(-10, 30))
    assert not c.symmetric.value and shown(c) == ["range"]
    c.symmetric.value = True
    assert proposed == [("angle", Uniform(-30.0, 30.0))]  # the farther end decides
    assert c.symmetric.value and shown(c) == ["half"] and c.half.value == 30
    c2, proposed2 = accepting("brightness", "brightness", value=Uniform(0.8, 4.0))
    c2.symmetric.value = True  # 4 is beyond the reach about 1 (the slider starts at 0)
    assert proposed2 == [("brightness", Uniform(0.0, 2.0))] and shown(c2) == ["half"]


def test_ticking_symmetric_when_the_model_refuses_unticks_the_box():
    c, proposed = control("rotate", "angle", value=Uniform(-10, 30))  # nothing is accepted
    c.symmetric.value = True
    assert proposed == [("angle", Uniform(-30.0, 30.0))]
    assert not c.symmetric.value and shown(c) == ["range"] and c.range.value == (-10, 30)


def test_loading_an_asymmetric_range_unticks_symmetric():
    c, proposed = control("rotate", "angle", value=Uniform(-15, 15))
    assert c.symmetric.value and shown(c) == ["half"]
    c.set_value(Uniform(-5.0, 25.0))
    assert not c.symmetric.value and shown(c) == ["range"] and c.range.value == (-5.0, 25.0)
    c.set_value(Uniform(-20.0, 20.0))  # symmetric, but the box stays as the user left it
    assert not c.symmetric.value and shown(c) == ["range"]
    c.symmetric.value = True
    assert shown(c) == ["half"] and c.half.value == 20 and proposed == []
    c.set_value(Uniform(-300.0, 300.0))  # beyond the slider: the half-width slider widens
    assert c.half.value == 300 and c.half.max == 300
    assert proposed == []


def test_an_int_parameter_gets_an_int_half_width_slider():
    p = Param("shift", "int", 0, "a signed whole-number shift", bounds=(-50, 50),
              slider=(-10, 10), neutral=0, runtime=True, random_default=(-3, 3))
    proposed: list[tuple[str, Any]] = []
    c = ParamControl(p, Uniform(-3, 3), lambda n, v: proposed.append((n, v)),
                     symmetric_about=0)
    assert isinstance(c.half, w.IntSlider) and isinstance(c.range, w.IntRangeSlider)
    assert c.half.value == 3 and (c.half.min, c.half.max) == (1, 10) and c.half.step == 1
    c.half.value = 7
    assert proposed == [("shift", Uniform(-7, 7))]
    c.set_value(Uniform(-2, 5))
    c.symmetric.value = True
    assert proposed[-1] == ("shift", Uniform(-5, 5))
    assert all(type(v) is int for v in (proposed[-1][1].lo, proposed[-1][1].hi))


def test_unsigned_operator_range_uses_random_default():
    c, proposed = control("noise.gaussian", "stddev")
    assert c.symmetric is None
    c.mode.value = RANGE
    assert proposed[-1] == ("stddev", Uniform(5.0, 25.0))


def test_range_back_to_fixed():
    c, proposed = control("rotate", "angle", value=Uniform(-15, 15))
    c.mode.value = FIXED
    assert proposed[-1] == ("angle", 15.0)  # the magnitude of a signed range
    c2, proposed2 = control("noise.gaussian", "stddev", value=Uniform(5, 25))
    c2.mode.value = FIXED
    assert proposed2[-1] == ("stddev", 15.0)  # the middle otherwise


def test_a_refused_mode_switch_shows_the_kept_mode():
    c, _ = control("rotate", "angle")  # the proposal is not accepted (set_value not called)
    c.mode.value = RANGE
    assert c.mode.value == FIXED
    assert c.fixed.layout.display is None and c.range.layout.display == "none"
    assert c.half.layout.display == "none"


def test_choice_list_parses_and_reports_bad_items():
    c, proposed = control("grid_mask", "tile")
    c.mode.value = CHOICE
    assert proposed[-1] == ("tile", Choice((64,)))
    c.set_value(Choice((64,)))
    c.choice.value = "32, 48; 96"
    assert proposed[-1] == ("tile", Choice((32, 48, 96)))
    n = len(proposed)
    c.choice.value = "32, big"
    assert len(proposed) == n
    assert c.error_message == "tile: 'big' is not an integer"
    assert c.error.layout.display is None


def test_odd_parameter_steps_by_two_and_offers_a_list_not_a_range():
    c, _ = control("laplacian", "window_size")
    assert c.param.modes == (FIXED, CHOICE)
    assert c.fixed.step == 2 and c.fixed.min % 2 == 1


def test_per_sample_boolean_is_off_on_random():
    c, proposed = control("flip", "horizontal")
    assert isinstance(c.fixed, w.ToggleButtons) and c.fixed.value == "on"
    c.fixed.value = "random"
    assert proposed[-1] == ("horizontal", Choice((False, True)))
    c.set_value(Choice((True, False)))
    assert c.fixed.value == "random"
    c.fixed.value = "off"
    assert proposed[-1] == ("horizontal", False)


def test_build_time_boolean_is_a_checkbox_and_enum_a_dropdown():
    c, proposed = control("rotate", "keep_size")
    assert isinstance(c.fixed, w.Checkbox) and c.mode is None
    c.fixed.value = False
    assert proposed == [("keep_size", False)]
    d, proposed = control("rotate", "interp_type")
    other = CATALOG["rotate"].param("interp_type").choices[-1]
    d.fixed.value = other
    assert proposed == [("interp_type", other)]


def test_fill_value_shows_a_grey_swatch():
    c, _ = control("rotate", "fill_value", value=128.0)
    assert "rgb(128,128,128)" in c.swatch.value


def test_values_outside_the_slider_widen_it_within_bounds():
    c, proposed = control("rotate", "angle")
    c.set_value(200.0)
    assert c.fixed.max == 200 and c.fixed.value == 200.0
    c.set_value(Uniform(-300.0, 10.0))
    assert c.range.min == -300 and c.range.value == (-300.0, 10.0)
    assert c.mode.value == RANGE and c.fixed.layout.display == "none"
    assert proposed == []


def test_tooltip_and_helpers():
    p = CATALOG["rotate"].param("angle")
    t = tooltip(p)
    assert "Rotation" in t or "angle" in t
    assert "bounds [-360, 360] deg" in t and "slider -90 to 90" in t and "no effect at 0" in t
    assert decimals(0.005) == 3 and decimals(1) == 0 and decimals(0.01) == 2
    assert describe_value(p, Uniform(-15, 15)) == "-15 to 15 deg"
    assert describe_value(CATALOG["flip"].param("horizontal"), True) == "on"


def test_a_list_shows_its_values_exactly_so_adding_one_keeps_the_others():
    """The list field is sent back whole: shown rounded (6 digits), adding a value to it
    rewrote the values already there (0.123456789 became 0.123457)."""
    c, proposed = control("rotate", "angle", Choice((0.123456789, 12.5)))
    assert c.choice.value == "0.123456789, 12.5"
    c.choice.value += ", 30"
    assert proposed[-1] == ("angle", Choice((0.123456789, 12.5, 30.0)))
