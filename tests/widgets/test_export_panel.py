"""The export panel: live code, downloads that decode to the code and preset, preset load,
and a CLI command that renders the same grid."""

from __future__ import annotations

import base64
import html
import json
import re
import shlex
import subprocess
import sys

import numpy as np

from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.preset import load
from dali_gallery.widgets.export_panel import code_html, slug
from tests.support import REPO, preset_dict
from tests.widgets.conftest import settle
from tests.widgets.test_images_panel import browser_upload, upload


def link(panel_html: str, css: str) -> tuple[str, str]:
    """(download file name, decoded content) of the link with this CSS class."""
    m = re.search(rf'<a class="{css}" download="([^"]+)" href="data:[^;]+;charset=utf-8;'
                  rf'base64,([^"]+)"', panel_html)
    assert m, f"no {css} link"
    return m.group(1), base64.b64decode(m.group(2)).decode()


def test_code_view_downloads_and_copy_follow_the_pipeline(builder):
    builder.add_step("rotate", angle={"uniform": [-10, 10]})
    builder.export.name.value = "Dogs v2"
    settle(builder)
    code = builder.code
    assert code == export_code(builder.preset)
    assert "dg-export-code" in builder.export.code._dom_classes
    assert builder.export.code.value == code_html(code) and "<span" in code_html(code)
    name, text = link(builder.export.actions.value, "dg-download-py")
    assert (name, text) == ("dogs_v2.py", code)
    name, text = link(builder.export.actions.value, "dg-download-preset")
    assert name == "dogs_v2_preset.json" and load(text).to_dict() == builder.preset.to_dict()
    copied = re.search(r"<textarea[^>]*>(.*?)</textarea>", builder.export.actions.value, re.S)
    assert html.unescape(copied.group(1)) == code
    assert "navigator.clipboard" in builder.export.actions.value
    assert builder.preset.name == "Dogs v2"
    assert "dogs_v2_preset.json" in builder.cli_command
    assert html.escape(builder.cli_command) in builder.export.cli.value
    builder.set_param(0, "angle", 3.0)
    settle(builder)
    assert "angle=3.0" in builder.export.text and builder.export.text == builder.code


def test_load_preset_file_replaces_the_pipeline_and_is_undoable(builder):
    builder.add_step("hue")
    data = json.dumps(preset_dict([{"op": "rotate", "params": {"angle": 7}}], seed=3)).encode()
    browser_upload(builder.export.load, upload("mine.json", data))
    assert [s.op for s in builder.preset.steps] == ["rotate"] and builder.preset.seed == 3
    assert builder.preview.seed.value == 3 and builder.export.problems.value == ""
    assert builder.export.load.value == ()
    builder.undo()
    assert [s.op for s in builder.preset.steps] == ["hue"]


def test_bad_preset_file_lists_every_problem_and_changes_nothing(builder):
    builder.add_step("hue")
    bad = json.dumps(preset_dict([{"op": "rotate", "params": {"angle": 999, "nope": 1}},
                                  {"op": "flipp"}])).encode()
    browser_upload(builder.export.load, upload("bad.json", bad))
    shown = html.unescape(builder.export.problems.value)
    assert "could not load bad.json" in shown
    assert "step 0 (rotate): parameter 'angle': value 999 is not allowed" in shown
    assert "unknown parameter 'nope'" in shown and "unknown operator 'flipp'" in shown
    assert [s.op for s in builder.preset.steps] == ["hue"]
    browser_upload(builder.export.load, upload("bin.json", b"\xff\xfe\x00"))
    assert "not UTF-8" in builder.export.problems.value


def test_an_exported_module_loads_back_as_its_preset(builder):
    builder.add_step("rotate", angle=12.0)
    builder.add_step("hsv", hue={"uniform": [-5, 5]})
    code, preset = builder.code, builder.preset
    builder.remove_step(1)
    browser_upload(builder.export.load, upload("train_aug.py", code.encode()))
    assert builder.preset.to_dict() == preset.to_dict()


def test_the_cli_command_renders_the_same_grid(builder, tmp_path):
    builder.add_step("rotate", angle={"uniform": [-25, 25]})
    builder.add_step("noise.gaussian", stddev=12.0)
    builder.set_probability(1, 0.5)
    settle(builder)
    builder.preset.save(tmp_path / f"{slug(builder.preset.name)}_preset.json")
    args = shlex.split(builder.cli_command)
    assert args[:2] == ["dali-gallery", "render"]
    cmd = [sys.executable, "-m", "dali_gallery.gallery.cli", *args[1:], "--npz", "first.npz",
           "--json", "records.json"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "grid.png").stat().st_size > 0
    result = builder.last_result
    first = np.load(tmp_path / "first.npz")
    for i in range(result.shape[0]):
        np.testing.assert_array_equal(first[f"image_{i:04d}"], result.render.tile(i, 0))
    records = json.loads((tmp_path / "records.json").read_text())["records"]
    assert records == [r.to_dict() for r in result.render.records]


def test_slug():
    assert slug("My preset: v1!") == "my_preset_v1"
    assert slug("") == "dali_augment" and slug("../../x") == "x"
