"""Controls are derived from the catalog's Param declarations alone, for every operator."""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import pytest

from dali_gallery.pipelines.catalog import CATALOG
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


def test_symmetric_range_mirrors_the_moved_end():
    c, proposed = control("rotate", "angle", value=Uniform(-15, 15))
    assert c.symmetric.value
    c.range.value = (-40.0, 15.0)
    assert proposed[-1] == ("angle", Uniform(-40.0, 40.0))
    assert c.range.value == (-40.0, 40.0)
    c.symmetric.value = False
    c.set_value(Uniform(-40.0, 40.0))
    c.range.value = (-40.0, 10.0)
    assert proposed[-1] == ("angle", Uniform(-40.0, 10.0))


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
