"""The preview engine: stable draws, no rebuilds for run-time values, per-sample records taken
from the pipeline, errors naming the step, and recovery after them."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.pipelines import codegen
from dali_gallery.pipelines.catalog import CATALOG, unregister
from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.engine import MAX_BATCH, PreviewEngine, StepError
from dali_gallery.pipelines.params import Param
from dali_gallery.pipelines.preset import Preset, PresetError, Uniform, load, new_step
from tests.support import preset_dict, sample_engine


@pytest.fixture(scope="module")
def engine():
    eng = sample_engine(3)
    yield eng
    eng.close()


def chain(angle=None, stddev=8.0, p=0.5, seed=5) -> Preset:
    return load(preset_dict([
        {"op": "rotate", "probability": p,
         "params": {"angle": angle if angle is not None else {"uniform": [-40, 40]}}},
        {"op": "noise.gaussian", "params": {"stddev": stddev}},
        {"op": "hue", "params": {"hue": {"uniform": [-30, 30]}}},
    ], seed=seed))


def test_same_preset_same_draw(engine):
    a = engine.render(chain(), draws=3)
    b = engine.render(chain(), draws=3)
    assert not b.built
    for x, y in zip(a.images, b.images, strict=True):
        np.testing.assert_array_equal(x, y)
    assert [r.to_dict() for r in a.records] == [r.to_dict() for r in b.records]


def test_grid_layout_and_records(engine):
    r = engine.render(chain(), draws=4)
    assert (r.n_images, r.draws, len(r.images)) == (3, 4, 12)
    for i in range(3):
        for d in range(4):
            rec = r.record(i, d)
            assert (rec.image, rec.draw) == (i, d)
            assert r.tile(i, d).shape[2] == 3
            assert -40 <= rec.values[0]["angle"] <= 40
            assert -30 <= rec.values[2]["hue"] <= 30
            assert set(rec.fired) == {0}
    fired = [r.fired[0] for r in r.records]
    assert True in fired and False in fired, "p=0.5 over 12 samples should fire and not fire"
    draws = [rec.values[0]["angle"] for rec in r.records]
    assert len(set(draws)) == 12, "every sample draws its own angle"


def test_moving_one_slider_changes_only_that_operator(engine):
    base = engine.render(chain(stddev=8.0), draws=2)
    builds = engine.builds
    moved = engine.render(chain(stddev=30.0), draws=2)
    assert engine.builds == builds and not moved.built
    assert [r.values for r in base.records] == [r.values for r in moved.records]
    assert [r.fired for r in base.records] == [r.fired for r in moved.records]
    assert any(not np.array_equal(a, b) for a, b in zip(base.images, moved.images, strict=True))


def test_probability_and_fixed_values_are_fed_not_rebuilt(engine):
    engine.render(chain(angle=0.0, p=0.3))
    builds = engine.builds
    for k in range(10):
        r = engine.render(chain(angle=float(k * 9), p=0.1 + k * 0.08))
        assert not r.built
    assert engine.builds == builds


def test_seed_is_explicit(engine):
    a = engine.render(chain(seed=1))
    b = engine.render(chain(seed=2))
    assert b.built
    assert [r.values for r in a.records] != [r.values for r in b.records]


def test_disabled_steps_are_skipped(engine):
    p = chain()
    p.steps[1].enabled = False
    r = engine.render(p)
    assert set(r.records[0].values) == {0, 2}


def test_choice_records_the_drawn_value(engine):
    p = load(preset_dict([{"op": "flip", "params": {"horizontal": {"choice": [True, False]}}}]))
    r = engine.render(p, draws=6)
    values = {rec.values[0]["horizontal"] for rec in r.records}
    assert values == {0, 1}
    for rec, img, orig in zip(r.records, r.images, engine.images * 6, strict=False):
        if rec.values[0]["horizontal"] == 0:
            np.testing.assert_array_equal(img, orig)
        else:
            np.testing.assert_array_equal(img, orig[:, ::-1])


def test_unfired_samples_are_untouched(engine):
    p = load(preset_dict([{"op": "gaussian_blur", "probability": 0.5,
                           "params": {"sigma": 3.0}}]))
    r = engine.render(p, draws=4)
    for j, rec in enumerate(r.records):
        same = np.array_equal(r.images[j], engine.images[rec.image])
        assert same == (not rec.fired[0])


def test_dali_runtime_error_names_the_step_and_engine_recovers(engine):
    bad = load(preset_dict([
        {"op": "hue", "params": {"hue": 10.0}},
        {"op": "crop", "params": {"crop_w": 4000.0, "crop_h": 4000.0,
                                  "out_of_bounds_policy": "error"}},
    ]))
    with pytest.raises(StepError) as err:
        engine.render(bad)
    assert err.value.step == 1 and err.value.op == "crop"
    assert "step 1 (crop)" in str(err.value)
    assert "C++ context" not in str(err.value)
    ok = engine.render(chain())
    assert len(ok.images) == 3


def test_error_in_a_custom_python_operator_shows_its_traceback(engine):
    @custom_op("custom.test_broken", "Raises on purpose.", params=(
        Param("level", "float", 1.0, "A value", bounds=(0, 2), slider=(0, 2), step=0.1,
              runtime=True),))
    def broken(image, level):
        if float(level) > 1.5:
            raise ValueError(f"level {float(level)} is too high for this filter")
        return image

    try:
        p = load(preset_dict([{"op": "custom.test_broken", "params": {"level": 1.8}}]))
        with pytest.raises(StepError) as err:
            engine.render(p)
        assert err.value.op == "custom.test_broken"
        assert "too high for this filter" in str(err.value)
        p.steps[0].params["level"] = 0.5
        r = engine.render(p)
        np.testing.assert_array_equal(r.images[0], engine.images[0])
    finally:
        unregister(CATALOG, "custom.test_broken")


def test_batch_limit(engine):
    with pytest.raises(StepError, match="at most"):
        engine.render(chain(), draws=MAX_BATCH)


def test_render_subset_of_images(engine):
    r = engine.render(chain(), images=[2])
    assert r.n_images == 1
    assert r.images[0].shape == engine.images[2].shape  # rotate keeps the size


def test_sweep_runtime_parameter_in_one_run(engine):
    builds = engine.builds
    r = engine.render_sweep(new_step("brightness"), "brightness", [0.5, 1.0, 1.5])
    assert r.draws == 3 and engine.builds <= builds + 1
    np.testing.assert_array_equal(r.tile(0, 1), engine.images[0])
    assert r.tile(0, 0).mean() < r.tile(0, 1).mean() < r.tile(0, 2).mean()


def test_sweep_build_time_parameter(engine):
    r = engine.render_sweep(new_step("water"), "ampl_x", [0.0, 20.0])
    assert r.draws == 2
    assert not np.array_equal(r.tile(0, 0), r.tile(0, 1))


def test_sweep_checks_every_value_against_rules_across_parameters(engine):
    """A sweep feeds its values per sample, past the preset's checks: each value is checked
    as its own step first, so a singular shear pair is refused by name, not by DALI."""
    step = new_step("warp_affine")
    step.params["shear_x"] = 2.0
    builds = engine.builds
    with pytest.raises(PresetError, match=r"shear_x=2.0, shear_y=0.5 is not allowed"):
        engine.render_sweep(step, "shear_y", [0.0, 0.5])
    assert engine.builds == builds  # refused before any pipeline
    r = engine.render_sweep(step, "shear_y", [0.0, 0.25])
    assert r.draws == 2


def test_encoded_tiles(engine):
    r = engine.render(chain(), draws=2, encode="png")
    assert len(r.encoded) == 6 and all(b.startswith(b"\x89PNG") for b in r.encoded)


def test_preview_of_the_training_tail(engine):
    p = chain()
    p.output = load(preset_dict([], output={"crop": [64, 64]})).output
    r = engine.render(p, tail=True)
    assert r.images[0].shape == (3, 64, 64) and r.images[0].dtype == np.float32


def test_arrays_are_validated():
    eng = PreviewEngine("cpu")
    with pytest.raises(ValueError, match="HxWx3 uint8"):
        eng.set_arrays([np.zeros((4, 4), np.uint8)])
    with pytest.raises(StepError, match="no images"):
        eng.render(chain())
    eng.close()


def test_uniform_bounds_are_respected_for_ints(engine):
    p = Preset([new_step("grid_mask", tile=Uniform(10, 12))])
    r = engine.render(p, draws=6)
    assert {rec.values[0]["tile"] for rec in r.records} <= {10, 11, 12}


@pytest.mark.parametrize("op", ["auto_aug.shear_y", "auto_aug.brightness"])
def test_auto_aug_random_sign_switch(engine, op):
    """random_sign=False means no negation at all (DALI negates an unsigned bin at random on
    its own); True negates about half of the samples, so draws of one image differ."""
    def render(random_sign: bool):
        step = {"op": op, "params": {"magnitude_bin": 20, "random_sign": random_sign}}
        return engine.render(load(preset_dict([step], seed=3)), draws=4)

    fixed = render(False)
    for i in range(fixed.n_images):
        for d in range(1, 4):
            np.testing.assert_array_equal(fixed.tile(i, d), fixed.tile(i, 0))
    signed = render(True)
    tiles = [signed.tile(i, d) for i in range(signed.n_images) for d in range(4)]
    positive = [fixed.tile(i, 0) for i in range(fixed.n_images) for _ in range(4)]
    same = [np.array_equal(t, p) for t, p in zip(tiles, positive, strict=True)]
    assert True in same and False in same, "a random sign should keep some samples, flip others"


def test_a_failing_training_tail_is_not_blamed_on_a_step(engine, monkeypatch):
    """The step comes from the lines each step wrote (recorded by the code generator), so a
    failure in ``finish`` (after the last step's block) names no step; reading the nearest
    "# step N:" comment above the failing line blamed the last step. A valid tail no longer
    fails (its crop pads a smaller image), so a line that does is written into it here."""
    tail_lines = codegen.tail_lines

    def failing(*args, **kwargs):
        lines = tail_lines(*args, **kwargs)
        return [*lines[:-2], 'images = fn.crop(images, crop=(4000, 4000), '
                'out_of_bounds_policy="error")', *lines[-2:]]

    monkeypatch.setattr(codegen, "tail_lines", failing)
    p = load(preset_dict([{"op": "hue", "params": {"hue": 10.0}}],
                         output={"crop": [400, 400]}))
    with pytest.raises(StepError) as err:
        engine.render(p, tail=True)
    assert err.value.step is None and err.value.op is None
    assert "out of bounds" in str(err.value)
    assert len(engine.render(chain()).images) == 3


def test_an_operator_this_device_cannot_run_is_named_before_any_build(engine):
    op = next(name for name, spec in CATALOG.items() if engine.device not in spec.devices)
    builds = engine.builds
    with pytest.raises(StepError) as err:
        engine.render(load(preset_dict([{"op": "hue", "params": {}}, {"op": op, "params": {}}])))
    assert err.value.step == 1 and err.value.op == op
    assert err.value.detail.startswith(CATALOG[op].unavailable_on(engine.device))
    assert engine.builds == builds


def test_operators_dali_cannot_checkpoint_rebuild_instead(engine):
    """``OpSpec.checkpoints`` decides whether the RNG state is restored or the pipeline rebuilt;
    either way the same preset shows the same draw."""
    op = next(name for name, spec in CATALOG.items() if not spec.checkpoints and spec.cpu)
    p = load(preset_dict([{"op": op, "params": {}},
                          {"op": "noise.gaussian", "params": {"stddev": 20.0}}]))
    first = engine.render(p)
    builds = engine.builds
    again = engine.render(p)
    assert again.built and engine.builds == builds + 1
    for a, b in zip(first.images, again.images, strict=True):
        np.testing.assert_array_equal(a, b)
