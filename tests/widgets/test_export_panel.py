"""The export panel: live code, downloads that decode to the code and preset, preset load,
and a CLI command that renders the same grid."""

from __future__ import annotations

import base64
import html
import importlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.generated_module import import_source
from dali_gallery.pipelines.preset import load
from dali_gallery.widgets.export_panel import code_html, slug
from tests.support import REPO, SAMPLES, preset_dict
from tests.widgets.conftest import make_builder, settle
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


def test_preset_json_and_cli_command_are_shown_with_copy_buttons(builder):
    builder.add_step("hue", hue=12.0)
    settle(builder)
    view = builder.export.preset_view.value
    assert "<details open>" in view and "Preset JSON" in view
    assert html.unescape(re.search(r"<pre[^>]*>(.*?)</pre>", view, re.S).group(1)) == \
        builder.preset.to_json()
    copied = re.search(r'<textarea[^>]*>(.*?)</textarea><button class="dg-copy-preset', view,
                       re.S)
    assert load(html.unescape(copied.group(1))).to_dict() == builder.preset.to_dict()
    cli = builder.export.cli.value
    copied = re.search(r'<textarea[^>]*>(.*?)</textarea><button class="dg-copy-cli', cli, re.S)
    assert html.unescape(copied.group(1)) == builder.cli_command == builder.export.cli_text
    assert "copy command" in cli and "copy preset JSON" in view


def test_loading_a_preset_file_says_what_was_loaded(builder):
    data = json.dumps({**preset_dict([{"op": "rotate", "params": {"angle": 7}},
                                      {"op": "hue"}], seed=3), "name": "Dogs v2"}).encode()
    browser_upload(builder.export.load, upload("dogs.json", data))
    notice = html.unescape(builder.export.notice.value)
    assert "loaded dogs.json (preset 'Dogs v2'): 2 steps, no training output" in notice
    bad = json.dumps(preset_dict([{"op": "nope"}])).encode()
    browser_upload(builder.export.load, upload("bad.json", bad))
    assert builder.export.notice.value == "" and "could not load" in builder.export.problems.value


def pytorch_example(code: str, folder: Path) -> str:
    """The exported module's own PyTorch example (the comment at its end), as written, with its
    placeholder folder pointed at ``folder``."""
    lines = code.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# Training with PyTorch"))
    block = []
    for line in lines[start + 1:]:
        if not line.startswith("#"):
            break
        if line.startswith("#     ") or line == "#":  # code, not the prose around it
            block.append(line[1:])
    source = textwrap.dedent("\n".join(block))
    assert source.count('"/data/train"') == 1
    return source.replace('"/data/train"', repr(str(folder)))


@pytest.fixture
def mixed_sizes(tmp_path: Path) -> Path:
    """Two class folders of photos of different sizes (384x384, 384x255, 384x256 ...)."""
    data = tmp_path / "data"
    for k, path in enumerate(sorted(SAMPLES.glob("*.jpg"))):
        folder = data / ("class_a" if k % 2 == 0 else "class_b")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / path.name)
    return data


def test_the_exported_example_trains_as_written_on_images_of_mixed_sizes(mixed_sizes, tmp_path):
    """The module downloaded from the Export tab of a new pipeline runs its own PyTorch example
    as written, and a tiny model trains on its batches; with the training output turned off
    the builder warns, and the same example fails exactly as the warning says."""
    torch = importlib.import_module("torch")
    b = make_builder(images=mixed_sizes)
    try:
        b.add_step("rotate", angle={"uniform": [-15, 15]})
        b.add_step("brightness_contrast", brightness={"uniform": [0.8, 1.2]})
        settle(b)
        assert b.export.warning.value == ""
        _, code = link(b.export.actions.value, "dg-download-py")
        module = import_source(code, tmp_path, "exported_from_the_ui")
        namespace = dict(vars(module))
        exec(pytorch_example(code, mixed_sizes), namespace)  # the example, as written
        images, labels = namespace["images"], namespace["labels"]
        assert tuple(images.shape) == (6, 3, 224, 224) and images.dtype == torch.float32
        assert sorted(labels.view(-1).tolist()) == [0, 0, 0, 1, 1, 1]

        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 3, stride=4), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(), torch.nn.Linear(4, 2))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        losses = []
        for _ in range(3):
            for batch in namespace["loader"]:
                x, y = batch[0]["images"], batch[0]["labels"].long().view(-1)
                loss = torch.nn.functional.cross_entropy(model(x), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        assert len(losses) == 3 and all(np.isfinite(losses))
        del namespace

        b.output_panel.enabled.value = False  # the checkbox, as a user would
        settle(b)
        assert "Batches will mix image sizes" in html.unescape(b.export.warning.value)
        _, code = link(b.export.actions.value, "dg-download-py")
        namespace = dict(vars(import_source(code, tmp_path, "exported_without_tail")))
        with pytest.raises(RuntimeError, match="The batch must be representable as a tensor"):
            exec(pytorch_example(code, mixed_sizes), namespace)
    finally:
        b.close()


def test_slug():
    assert slug("My preset: v1!") == "my_preset_v1"
    assert slug("") == "dali_augment" and slug("../../x") == "x"
