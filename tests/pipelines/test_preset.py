"""Preset loading: every problem reported at once, naming step, operator, parameter and value."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.preset import (
    FORMAT,
    VERSION,
    Choice,
    Preset,
    PresetError,
    Uniform,
    load,
    loads,
    new_step,
)
from tests.support import preset_dict

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("preset_v*.json")), ids=lambda p: p.name)
def test_presets_of_every_version_load(path):
    """Presets saved by every released format version keep loading (and round-trip)."""
    preset = load(path)
    again = load(preset.to_dict())
    assert again.to_dict() == preset.to_dict()
    assert preset.to_dict()["version"] == VERSION


def test_fixture_values_are_typed():
    p = load(FIXTURES / "preset_v1.json")
    assert p.seed == 42
    assert p.steps[0].params["angle"] == Uniform(-30.0, 30.0)
    assert p.steps[0].params["interp_type"] == "linear"  # defaults are filled in
    assert p.steps[2].params["horizontal"] == Choice((True, False))
    assert p.steps[3].enabled is False
    assert [i for i, _ in p.active_steps()] == [0, 1, 2, 4]


def test_minimal_preset_gets_defaults():
    p = load(FIXTURES / "preset_v1_minimal.json")
    assert p.seed == 42 and p.steps[0].probability == 1.0 and p.steps[0].enabled
    assert p.steps[0].params == CATALOG["hue"].defaults()


def test_all_problems_are_reported_at_once():
    bad = preset_dict([
        {"op": "rotate", "params": {"angle": 999}},
        {"op": "rotat"},
        {"op": "gaussian_blur", "probability": 1.5, "params": {"sigma": {"uniform": [2, 1]}}},
        {"op": "water", "params": {"ampl_x": {"uniform": [1, 2]}}},
        {"op": "laplacian", "params": {"window_size": 4, "bogus": 1}},
    ])
    bad["extra"] = 1
    with pytest.raises(PresetError) as err:
        load(bad)
    text = str(err.value)
    problems = err.value.problems
    assert len(problems) == 8, text
    assert "step 0 (rotate): parameter 'angle': value 999 is not allowed; allowed range is " \
           "[-360, 360] deg" in text
    assert "step 1: unknown operator 'rotat'" in text and "rotate" in text
    assert "step 2 (gaussian_blur): probability 1.5" in text
    assert "step 2 (gaussian_blur): parameter 'sigma': uniform [2, 1] is empty" in text
    assert "step 3 (water): parameter 'ampl_x': cannot be drawn per sample" in text
    assert "step 4 (laplacian): parameter 'window_size': value 4 is not allowed; must be odd" \
        in text
    assert "step 4 (laplacian): unknown parameter 'bogus'" in text
    assert "preset: unknown key 'extra'" in text


@pytest.mark.parametrize("text,needle", [
    ('{"format": "dali-gallery/preset", "version": 1, "seed": NaN}', "NaN is not allowed"),
    ('{"format": "dali-gallery/preset", "version": 1, "steps": '
     '[{"op": "hue", "params": {"hue": Infinity}}]}', "Infinity is not allowed"),
    ('[1, 2]', "expected a JSON object"),
    ('{"format": "other"}', "'format' must be"),
    ('{"format": "dali-gallery/preset", "version": 99}', "newer than this"),
    ('{"format": "dali-gallery/preset", "version": 1, "steps": {}}', "'steps' must be a list"),
    ('{"format": "dali-gallery/preset", "version": 1, "seed": -1}', "'seed' must be"),
    ('{"format": "dali-gallery/preset", "version": 1, "output": {"crop": [1, 2, 3]}}',
     "output: crop"),
    ('{"format": "dali-gallery/preset", "version": 1, "output": {"std": [0, 1, 1]}}',
     "output: std"),
    ('not json', "not valid JSON"),
])
def test_bad_documents(text, needle):
    with pytest.raises(PresetError) as err:
        loads(text)
    assert needle in str(err.value)


def test_missing_file_is_a_preset_error(tmp_path):
    with pytest.raises(PresetError, match="cannot read it"):
        load(tmp_path / "nope.json")


def test_constraints_between_parameters():
    with pytest.raises(PresetError, match="area_min must not exceed area_max"):
        load(preset_dict([{"op": "random_resized_crop",
                           "params": {"area_min": 0.9, "area_max": 0.2}}]))


def test_build_time_and_enum_parameters_cannot_be_random():
    with pytest.raises(PresetError, match="DALI fixes it when the pipeline is built"):
        load(preset_dict([{"op": "clahe", "params": {"clip_limit": {"uniform": [1, 2]}}}]))
    with pytest.raises(PresetError, match="cannot be drawn per sample"):
        load(preset_dict([{"op": "rotate", "params": {"interp_type": {"choice": ["nn"]}}}]))


def test_save_and_load_round_trip(tmp_path):
    p = Preset([new_step("rotate", angle=Uniform(-10, 10)), new_step("hue", hue=12.0)], seed=3)
    p.steps[1].probability = 0.25
    p.save(tmp_path / "p.json")
    q = load(tmp_path / "p.json")
    assert q.to_dict() == p.to_dict()
    assert json.loads(q.to_json())["format"] == FORMAT


# ---- property-based: every valid value loads, every invalid one is named ----------------------

NUMERIC = [(op, p) for op, spec in CATALOG.items() for p in spec.params
           if p.kind in ("float", "int")]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(NUMERIC), st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
    st.text(max_size=5), st.none(), st.booleans()))
def test_any_literal_is_accepted_iff_within_declaration(op_param, value):
    op, p = op_param
    doc = preset_dict([{"op": op, "params": {p.name: value}}])
    why = p.check(value)
    if why is None:
        try:
            loaded = load(doc)
        except PresetError as e:  # only a cross-parameter constraint may still refuse it
            assert "must not exceed" in str(e)
            return
        assert loaded.steps[0].params[p.name] == p.coerce(value)
    else:
        with pytest.raises(PresetError) as err:
            load(doc)
        msg = str(err.value)
        assert f"step 0 ({op}): parameter {p.name!r}" in msg
        assert "not allowed" in msg
        if isinstance(value, float) and not math.isfinite(value):
            assert "finite" in msg


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(NUMERIC), st.floats(-1e4, 1e4), st.floats(-1e4, 1e4))
def test_uniform_ranges_are_checked(op_param, lo, hi):
    op, p = op_param
    doc = preset_dict([{"op": op, "params": {p.name: {"uniform": [lo, hi]}}}])
    ok = (p.runtime and not p.odd and lo < hi and p.check(lo) is None and p.check(hi) is None
          and (p.kind == "int" or np.float32(lo) < np.float32(hi)))
    if ok:
        assert load(doc).steps[0].params[p.name] == Uniform(p.coerce(lo), p.coerce(hi))
    else:
        with pytest.raises(PresetError, match=rf"step 0 \({op}\): parameter '{p.name}'"):
            load(doc)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10**9, 10**9) | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
OPS = st.sampled_from(list(CATALOG))


@st.composite
def mangled_presets(draw: st.DrawFn) -> dict:
    """Structurally plausible presets with random junk in random places."""
    steps = []
    for _ in range(draw(st.integers(0, 3))):
        op = draw(OPS)
        params = {p.name: draw(JSON) for p in CATALOG[op].params if draw(st.booleans())}
        step = {"op": op, "params": params}
        if draw(st.booleans()):
            step["probability"] = draw(JSON)
        if draw(st.booleans()):
            step[draw(st.text(max_size=6))] = draw(JSON)
        steps.append(step)
    doc = {"format": FORMAT, "version": 1, "steps": steps}
    if draw(st.booleans()):
        doc["output"] = draw(JSON)
    if draw(st.booleans()):
        doc["seed"] = draw(JSON)
    return doc


@settings(max_examples=300, deadline=None)
@given(mangled_presets())
def test_any_document_loads_or_raises_preset_error_only(doc):
    try:
        preset = load(doc)
    except PresetError as e:
        assert e.problems and all(isinstance(p, str) and p for p in e.problems)
        for p in e.problems:
            assert p.startswith(("preset", "step ", "output")), p
        return
    assert load(preset.to_dict()).to_dict() == preset.to_dict()


@settings(max_examples=200, deadline=None)
@given(JSON)
def test_arbitrary_json_never_crashes_the_loader(doc):
    try:
        preset = load(doc if isinstance(doc, dict) else json.dumps(doc))
    except PresetError as e:
        assert e.problems and all(isinstance(p, str) and p for p in e.problems)
        return
    assert load(preset.to_dict()).to_dict() == preset.to_dict()  # what loads, round-trips
