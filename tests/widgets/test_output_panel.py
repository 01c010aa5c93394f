"""The training-output section: the ImageNet tail of a new pipeline, edits validated like a
preset file, the mixed-size warning, and the preview through the tail with a CLI command that
renders the same tiles."""

from __future__ import annotations

import html
import json
import os
import shlex
import subprocess
import sys

import numpy as np

from dali_gallery.pipelines.preset import IMAGENET_OUTPUT, load
from dali_gallery.widgets.export_panel import slug
from tests.support import REPO, preset_dict
from tests.widgets.conftest import settle


def test_a_new_pipeline_starts_with_the_imagenet_tail(builder):
    panel = builder.output_panel
    assert builder.preset.output == IMAGENET_OUTPUT
    assert panel.enabled.value and not panel.show.value and not panel.show.disabled
    assert (panel.resize.value, panel.crop_h.value, panel.crop_w.value) == (256, 224, 224)
    assert panel.mean.value == "0.485, 0.456, 0.406" and panel.std.value == "0.229, 0.224, 0.225"
    assert (panel.layout.value, panel.dtype.value, panel.mirror.value) == ("CHW", "float32", 0)
    assert "one image size per batch (224x224)" in panel.status.value
    assert builder.export.warning.value == ""
    assert "def finish(" in builder.code and "images = finish(images" in builder.code
    assert "dg-output" in panel.widget._dom_classes


def test_turning_the_tail_off_warns_and_turning_it_on_brings_it_back(builder):
    panel = builder.output_panel
    panel.crop_h.value = 200
    panel.enabled.value = False
    settle(builder)
    assert builder.preset.output is None and "def finish(" not in builder.code
    assert panel.fields.layout.display == "none" and panel.show.disabled
    for shown in (panel.status.value, builder.export.warning.value):
        text = html.unescape(shown)
        assert "Batches will mix image sizes (each image keeps its own size)" in text
        assert "The batch must be representable as a tensor" in text
    panel.enabled.value = True
    settle(builder)
    assert builder.preset.output.crop == (200, 224)  # the values it had, not the defaults
    assert builder.export.warning.value == ""
    builder.undo()
    assert builder.preset.output is None and not panel.enabled.value


def test_a_size_setting_step_silences_the_warning_and_a_drawn_one_brings_it(builder):
    builder.output_panel.enabled.value = False
    builder.add_step("random_resized_crop", size=96)
    assert builder.export.warning.value == ""
    builder.add_step("rotate", angle={"uniform": [-20, 20]}, keep_size=False)
    assert "step 1 (rotate) gives each sample its own size" in html.unescape(
        builder.export.warning.value)
    builder.set_param(1, "keep_size", True)
    assert builder.export.warning.value == ""


def test_a_refused_value_is_shown_and_changes_nothing(builder):
    panel = builder.output_panel
    history = len(builder.model.history)
    panel.crop_h.value = 300  # larger than the 256 px resize: DALI's crop would fail later
    shown = html.unescape(panel.problems.value)
    assert "training output not changed" in shown
    assert "output: crop [300, 224] is not allowed with resize_shorter 256" in shown
    assert builder.preset.output == IMAGENET_OUTPUT and len(builder.model.history) == history
    panel.mean.value = "0.5, zero"
    assert "output: mean '0.5, zero' is not allowed" in html.unescape(panel.problems.value)
    panel.std.value = "x"  # every field that cannot be read is listed
    shown = html.unescape(panel.problems.value)
    assert "output: mean '0.5, zero'" in shown and "output: std 'x' is not allowed" in shown
    panel.mean.value = "0.5"
    panel.std.value = "0"  # std must be > 0: refused, not clamped
    assert "output: std [0.0] is not allowed" in html.unescape(panel.problems.value)
    panel.mirror.value = 1.5
    assert "mirror_probability 1.5 is not allowed" in html.unescape(panel.problems.value)
    assert builder.preset.output == IMAGENET_OUTPUT
    panel.mirror.value = 0.5
    panel.crop_h.value = 224
    panel.mean.value, panel.std.value = "0.5", "0.25"
    assert panel.problems.value == ""
    out = builder.preset.output
    assert (out.mirror_probability, out.mean, out.std) == (0.5, (0.5,), (0.25,))


def test_a_loaded_preset_shows_its_tail(builder):
    builder.load_preset(preset_dict([], output={"resize_shorter": 80, "crop": [64, 48],
                                                "layout": "HWC", "dtype": "uint8"}))
    panel = builder.output_panel
    assert (panel.resize.value, panel.crop_h.value, panel.crop_w.value) == (80, 64, 48)
    assert (panel.layout.value, panel.dtype.value, panel.mean.value) == ("HWC", "uint8", "")
    builder.load_preset(preset_dict([]))  # a preset file without a tail stays without one
    assert builder.preset.output is None and not panel.enabled.value


def test_show_training_output_previews_the_tail_and_the_cli_renders_the_same(builder, tmp_path):
    builder.output_panel.crop_w.value = 160
    builder.add_step("rotate", angle={"uniform": [-25, 25]})
    builder.output_panel.show.value = True
    settle(builder)
    result = builder.last_result
    assert result.request.tail and builder.last_error is None
    tiles = [result.render.tile(i, d) for i in range(result.shape[0]) for d in range(2)]
    assert {(t.shape, t.dtype.name) for t in tiles} == {((3, 224, 160), "float32")}
    assert min(float(t.min()) for t in tiles) < -1.5  # normalised, not 0..255
    assert "--tail" in shlex.split(builder.cli_command)
    assert html.escape(builder.cli_command) in builder.export.cli.value
    builder.preset.save(tmp_path / f"{slug(builder.preset.name)}_preset.json")
    args = shlex.split(builder.cli_command)
    done = subprocess.run([sys.executable, "-m", "dali_gallery.gallery.cli", *args[1:],
                           "--npz", "first.npz"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    first = np.load(tmp_path / "first.npz")
    for i in range(result.shape[0]):
        np.testing.assert_array_equal(first[f"image_{i:04d}"], result.render.tile(i, 0))
    builder.output_panel.show.value = False
    settle(builder)
    assert not builder.last_result.request.tail and "--tail" not in builder.cli_command
    assert builder.last_result.render.tile(0, 0).dtype == np.uint8


def test_the_output_travels_in_the_preset_json(builder):
    builder.output_panel.dtype.value = "float16"
    settle(builder)
    saved = json.loads(builder.export.preset_json)
    assert saved["output"]["dtype"] == "float16"
    assert load(saved).output == builder.preset.output


def test_editing_one_field_keeps_the_others_exactly():
    """The fields show the tail's numbers exactly: changing the mirror probability used to
    round mean and std to 6 digits (1/255 became 0.00392157) and cut resize 300.5 to 300."""
    from dali_gallery.widgets.model import ChainModel
    from dali_gallery.widgets.output_panel import OutputPanel

    tail = {"resize_shorter": 300.5, "crop": [200, 180], "mean": [0.48501234, 0.456789123, 0.4],
            "std": [1 / 255], "layout": "HWC", "dtype": "float16", "mirror_probability": 0.3}
    model = ChainModel(load(preset_dict([], output=tail)))
    panel = OutputPanel(model, on_show=lambda _shown: None)
    panel.mirror.value = 0.4
    assert model.preset.output.to_dict() == {**tail, "mirror_probability": 0.4}
    assert panel.mean.value == "0.48501234, 0.456789123, 0.4" and panel.resize.value == 300.5
