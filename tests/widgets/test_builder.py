"""The builder end to end through its widgets: real DALI renders on the bundled samples."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.preset import PresetError, Uniform, load
from dali_gallery.widgets import Builder
from dali_gallery.widgets.encode import encode
from dali_gallery.widgets.render import DISPLAY_MAX
from tests.support import SAMPLES, first_batch, preset_dict
from tests.widgets.conftest import make_builder, settle

JPEG = b"\xff\xd8"


def all_tiles(b: Builder) -> list[bytes]:
    n, k = b.preview.shape
    return [b.tile_bytes(i, d) for i in range(n) for d in range(k)]


def test_first_preview_shows_originals_and_draws(builder):
    assert builder.preview.shape == (3, 2)
    originals = [bytes(img.value) for img in builder.preview.originals]
    assert all(o.startswith(JPEG) for o in originals)
    # no steps: every draw is the original image, pixel for pixel
    assert all(builder.tile_bytes(i, d) == originals[i] for i in range(3) for d in range(2))
    assert builder.engine.device == "cpu"
    assert "dg-builder" in builder.widget._dom_classes


def test_runtime_slider_change_updates_bytes_without_a_rebuild(builder):
    builder.add_step("rotate", angle=10.0)
    settle(builder)
    before = all_tiles(builder)
    builds = builder.engine.builds
    slider = builder.cards[0].controls["angle"].fixed
    slider.value = 35.0
    settle(builder)
    assert builder.preset.steps[0].params["angle"] == 35.0
    after = all_tiles(builder)
    assert all(a != b for a, b in zip(after, before, strict=True))
    assert builder.engine.builds == builds
    assert not builder.last_result.render.built
    assert "no rebuild" in builder.status.value
    # the displayed bytes are DALI's pixels for exactly this preset
    expected = builder.engine.render(builder.preset, draws=2, images=[0, 1, 2])
    assert builder.tile_bytes(1, 1) == encode(expected.tile(1, 1), "jpeg", DISPLAY_MAX)


def test_probability_slider_changes_without_rebuild_and_zero_means_untouched(builder):
    builder.add_step("hue", hue=90.0)
    builder.set_probability(0, 0.5)
    settle(builder)
    builds = builder.engine.builds
    builder.cards[0].probability.value = 0.01
    settle(builder)
    assert builder.engine.builds == builds
    builder.cards[0].probability.value = 0.0
    settle(builder)
    originals = [bytes(img.value) for img in builder.preview.originals]
    assert all(builder.tile_bytes(i, d) == originals[i] for i in range(3) for d in range(2))
    assert all(c == "-" for row in builder.last_result.captions for c in row)


def test_build_time_change_rebuilds(builder):
    builder.add_step("rotate", angle=30.0)
    settle(builder)
    builds = builder.engine.builds
    builder.cards[0].controls["keep_size"].fixed.value = False
    settle(builder)
    assert builder.engine.builds == builds + 1
    assert builder.last_result.render.built


def test_disable_step_shows_originals_and_keeps_it_in_the_preset(builder):
    builder.add_step("hue", hue=120.0)
    settle(builder)
    assert builder.tile_bytes(0, 0) != bytes(builder.preview.originals[0].value)
    builder.cards[0].enabled.value = False
    settle(builder)
    assert builder.tile_bytes(0, 0) == bytes(builder.preview.originals[0].value)
    assert builder.preset.steps[0].enabled is False
    assert "dg-step-disabled" in builder.cards[0].widget._dom_classes


def test_preset_and_code_follow_the_controls(builder):
    builder.add_step("rotate")
    builder.cards[0].controls["angle"].mode.value = "range"
    settle(builder)
    preset = builder.preset
    assert preset.steps[0].params["angle"] == Uniform(-15.0, 15.0)
    assert load(preset.to_dict()).to_dict() == preset.to_dict()
    json.dumps(preset.to_dict())
    assert builder.code == export_code(preset)
    assert "fn.random.uniform(range=[-15.0, 15.0]" in builder.code
    assert builder.export.text == builder.code  # the panel shows it once idle
    builder.preset.steps.clear()  # a copy: the builder's pipeline is untouched
    assert len(builder.preset.steps) == 1


def test_latest_state_wins_during_a_fast_drag(builder):
    builder.add_step("rotate", angle=0.0)
    settle(builder)
    stats = builder.scheduler.stats
    submitted, rendered = stats.submitted, stats.rendered
    slider = builder.cards[0].controls["angle"].fixed
    for v in range(1, 31):
        slider.value = float(v)
    settle(builder)
    assert stats.submitted - submitted == 30
    assert stats.rendered - rendered < 30  # superseded requests were never rendered
    assert stats.superseded > 0
    assert builder.last_result.request.preset.steps[0].params["angle"] == 30.0
    expected = builder.engine.render(builder.preset, draws=2, images=[0, 1, 2])
    assert builder.tile_bytes(2, 0) == encode(expected.tile(2, 0), "jpeg", DISPLAY_MAX)


def test_render_error_is_shown_on_its_step_and_the_last_preview_stays(builder):
    builder.add_step("hue", hue=40.0)
    settle(builder)
    good = all_tiles(builder)
    builder.add_step("crop", crop_w=4000.0, crop_h=4000.0, out_of_bounds_policy="error")
    settle(builder)
    card = builder.cards[1]
    assert "dg-step-card-error" in card.widget._dom_classes
    assert "render failed" in card.error_text and card.error.layout.display is None
    assert "step 1 (crop) failed" in builder.preview.error.value
    assert all_tiles(builder) == good
    assert [s.op for s in builder.preset.steps] == ["hue", "crop"]
    # fix it in place: the error clears and the preview updates
    builder.cards[1].controls["out_of_bounds_policy"].fixed.value = "pad"
    settle(builder)
    assert "dg-step-card-error" not in builder.cards[1].widget._dom_classes
    assert builder.preview.error.layout.display == "none"
    assert all_tiles(builder) != good


def test_failing_step_can_be_removed(builder):
    builder.add_step("crop", crop_w=4000.0, crop_h=4000.0, out_of_bounds_policy="error")
    settle(builder)
    assert builder.last_error is not None
    builder.cards[0].remove.click()
    settle(builder)
    assert builder.last_error is None and builder.preset.steps == []


def test_gpu_only_operator_is_kept_but_reported_on_cpu(builder):
    builder.add_step("hue", hue=30.0)
    builder.add_step("experimental.median_blur")
    settle(builder)
    card = builder.cards[1]
    assert "GPU" in card.error_text
    assert "only on the GPU" in card.body.children[0].value
    assert "experimental.median_blur" in builder.code
    card.enabled.value = False
    settle(builder)
    assert builder.last_error is None


def test_api_errors_leave_the_pipeline_and_the_widget_working(builder):
    builder.add_step("rotate", angle=5.0)
    with pytest.raises(PresetError, match="step 0 \\(rotate\\).*'angle'.*1000"):
        builder.set_param(0, "angle", 1000.0)
    with pytest.raises(IndexError):
        builder.remove_step(3)
    with pytest.raises(PresetError):
        builder.load_preset({"format": "nope"})
    assert builder.preset.steps[0].params["angle"] == 5.0
    builder.set_param(0, "angle", 6.0)
    settle(builder)
    assert builder.cards[0].controls["angle"].fixed.value == 6.0


def test_api_edits_show_in_the_widgets(builder):
    builder.add_step("rotate")
    builder.set_param(0, "angle", {"uniform": [-5, 25]})
    control = builder.cards[0].controls["angle"]
    assert control.mode.value == "range" and control.range.value == (-5.0, 25.0)
    builder.set_probability(0, 0.3)
    assert builder.cards[0].probability.value == 0.3


def test_undo_redo_buttons(builder):
    builder.add_step("rotate", angle=10.0)
    builder.cards[0].controls["angle"].fixed.value = 20.0
    settle(builder)
    builder.undo_button.click()
    assert builder.cards[0].controls["angle"].fixed.value == 10.0
    builder.undo_button.click()
    assert builder.preset.steps == [] and builder.undo_button.disabled
    builder.redo_button.click()
    builder.redo_button.click()
    assert builder.preset.steps[0].params["angle"] == 20.0 and builder.redo_button.disabled
    settle(builder)
    assert builder.last_result.request.preset.steps[0].params["angle"] == 20.0


def test_new_draw_and_seed(builder):
    builder.add_step("rotate", angle=Uniform(-45, 45))
    settle(builder)
    before = builder.tile_bytes(0, 0)
    builder.preview.new_draw.click()
    settle(builder)
    seed = builder.preset.seed
    assert builder.preview.seed.value == seed
    assert f"SEED = {seed}" in builder.code
    assert builder.tile_bytes(0, 0) != before
    builder.preview.seed.value = 42
    settle(builder)
    assert builder.preset.seed == 42 and builder.tile_bytes(0, 0) == before
    builder.undo()
    assert builder.preview.seed.value == seed


def test_draws_images_and_size_controls(builder):
    builder.add_step("hue", hue=20.0)
    builder.preview.draws.value = 4
    builder.preview.count.value = 2
    settle(builder)
    assert builder.preview.shape == (2, 4)
    assert "--draws 4 --batch-size 2" in builder.cli_command
    builder.preview.size.value = 0
    settle(builder)
    assert builder.last_result.originals[0].shape[:2] == (384, 384)
    assert "--size" not in builder.cli_command
    builder.preview.size.value = 192
    settle(builder)
    assert max(builder.last_result.originals[0].shape[:2]) == 192


def test_inspector_shows_fired_steps_with_sampled_values(builder):
    builder.add_step("rotate", angle=Uniform(-30, 30))
    builder.add_step("hue", hue=10.0)
    builder.set_probability(1, 0.5)
    settle(builder)
    builder.preview.captions[1][1].click()
    assert builder.inspector.selected == (1, 1)
    assert builder.inspector.widget.layout.display is None
    assert bytes(builder.inspector.histogram.value).startswith(b"\x89PNG")
    record = builder.last_result.render.record(1, 1)
    rotate, hue = builder.inspector.reports
    assert rotate.fired and rotate.values[0] == ("angle", record.values[0]["angle"], True)
    assert -30 <= rotate.values[0][1] <= 30
    assert hue.fired == record.fired[1]
    assert ("hue", 10.0, False) in hue.values
    label = builder.preview.captions[1][1].description
    assert ("hue" in label) == hue.fired and "rotate" in label


def test_preview_draw_zero_is_the_exported_pipelines_first_batch(tmp_path):
    """What "download code that reproduces the preview" means, at the original size."""
    b = make_builder(size=0, max_images=6, draws=2,
                     preset=preset_dict([
                         {"op": "rotate", "params": {"angle": {"uniform": [-20, 20]}}},
                         {"op": "hsv", "probability": 0.5, "params": {"hue": 30.0}},
                         {"op": "noise.gaussian", "params": {"stddev": 10.0}}], seed=5))
    try:
        settle(b)
        n = b.preview.shape[0]
        batch = first_batch(b.preset, SAMPLES, n, tmp_path)
        for i in range(n):
            np.testing.assert_array_equal(batch[i], b.last_result.render.tile(i, 0))
    finally:
        b.close()


def test_builder_displays_itself():
    b = make_builder(images=SAMPLES, sync=True)
    try:
        bundle = b._repr_mimebundle_()
        assert "application/vnd.jupyter.widget-view+json" in bundle
        assert b.preview.shape == (3, 2)  # sync mode rendered inline
    finally:
        b.close()


def test_bad_constructor_arguments_are_named():
    with pytest.raises(ValueError, match="size 100 is not allowed"):
        Builder(size=100, thumbnails=False, device="cpu")
    with pytest.raises(PresetError, match="unknown operator 'nope'"):
        Builder(preset=preset_dict([{"op": "nope"}]), thumbnails=False, device="cpu")


def test_browser_slider_echo_noise_does_not_change_the_pipeline(builder):
    """The browser's slider sends back values like 0.9999999999999999 for 1.0."""
    builder.add_step("hsv", hue={"uniform": [-30, 30]})
    settle(builder)
    entries, before = len(builder.model.history), builder.preset.to_dict()
    card = builder.cards[0]
    card.controls["saturation"].fixed.set_state({"value": 0.9999999999999999})
    card.controls["hue"].range.set_state({"value": [-30.000000000000004, 29.999999999999996]})
    card.probability.set_state({"value": 0.9999999999999999})
    assert builder.preset.to_dict() == before and len(builder.model.history) == entries
    card.controls["saturation"].fixed.set_state({"value": 1.2000000000000002})
    assert builder.preset.steps[0].params["saturation"] == 1.2


def test_autosave_keeps_the_pipeline_across_sessions(tmp_path):
    path = tmp_path / "autosave.json"
    b = make_builder(autosave=path)
    try:
        settle(b)
        assert not path.exists()  # nothing is written before the first edit
        b.add_step("rotate", angle=12.0)
        b.add_step("hsv")
        settle(b)
        assert load(path.read_text()).to_dict() == b.preset.to_dict()
        saved = b.preset
    finally:
        b.close()
    b2 = make_builder(autosave=path)
    try:
        settle(b2)
        assert b2.preset.steps == []
        assert b2.restore_button.layout.display is None
        assert "2 step(s)" in b2.restore_button.description
        b2.add_step("flip")  # overwrites the file, but the offer stays valid
        settle(b2)
        b2.restore_button.click()
        assert b2.preset.to_dict() == saved.to_dict()
        assert b2.restore_button.layout.display == "none"
        b2.undo()
        assert [s.op for s in b2.preset.steps] == ["flip"]
    finally:
        b2.close()


def test_unreadable_autosave_is_reported_not_fatal(tmp_path):
    path = tmp_path / "autosave.json"
    path.write_text("{not json")
    b = make_builder(autosave=path)
    try:
        assert "cannot be restored" in b.notice.value and "dg-error" in b.notice._dom_classes
        assert b.restore_button.layout.display == "none"
        b.add_step("hue")
        settle(b)
        assert b.notice.value == "" and load(path.read_text()).steps[0].op == "hue"
    finally:
        b.close()


def test_renders_run_off_the_main_thread(builder):
    """While DALI renders, the kernel's thread is free to handle widget messages."""
    import threading

    builder.add_step("gaussian_blur", sigma=3.0)
    settle(builder)
    assert builder.scheduler.stats.worker == "dali-gallery-render"
    assert builder.scheduler.stats.worker != threading.main_thread().name


def test_a_preset_with_a_group_renders_edits_a_child_and_inspects_which_child_ran():
    flips = [{"op": "flip", "params": {"horizontal": True, "vertical": False}},
             {"op": "flip", "params": {"horizontal": False, "vertical": True}}]
    steps = [{"one_of": [{"op": "rotate", "params": {"angle": 10.0}}, *flips],
              "probability": 0.8, "weights": [1, 2, 2]}]
    b = make_builder(preset=preset_dict(steps, seed=4), draws=4)
    try:
        settle(b)
        assert b.last_error is None and b.preview.shape == (3, 4)
        card = b.cards[0]
        builds = b.engine.builds
        card.children[0].controls["angle"].fixed.value = 35.0  # a child's run-time parameter
        settle(b)
        assert b.preset.steps[0].children[0].params["angle"] == 35.0
        assert b.engine.builds == builds and not b.last_result.render.built  # fed, no rebuild
        expected = b.engine.render(b.preset, draws=4, images=[0, 1, 2])
        assert all(b.tile_bytes(i, d) == encode(expected.tile(i, d), "jpeg", DISPLAY_MAX)
                   for i in range(3) for d in range(4))
        for i, d in ((0, 0), (1, 2), (2, 3)):
            record = b.last_result.render.record(i, d)
            reports = b.inspect(i, d)
            group, children = reports[0], reports[1:]
            assert (group.op, group.fired) == ("one_of", record.fired[0])
            ran = [r for r in children if r.fired]
            assert [r.child for r in ran] == [c for c in range(3) if record.child_ran(0, c)]
            assert len(ran) == (1 if record.fired[0] else 0)
            assert group.values == [("ran", ran[0].op if ran else "none", True)]
            html = b.inspector.table.value
            assert "&#8627; rotate" in html and "0.2" in html  # children rows, indexed 0.c
            if ran:
                assert ran[0].op in b.preview.captions[i][d].description
        assert "one_of(rotate, flip, flip)" in b.code
    finally:
        b.close()
