"""The exported module: standalone, formatted, ruff-clean, safe against preset content, and
runnable as a script that writes the first batch."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.export import export_code, preset_from_module
from dali_gallery.pipelines.preset import load
from tests.support import SAMPLES, preset_dict

RUFF = shutil.which("ruff")
FULL = preset_dict(
    [{"op": name, "probability": 0.5, "params": {}} for name in CATALOG],
    output={"resize_shorter": 256, "crop": [224, 224], "mean": [0.485, 0.456, 0.406],
            "std": [0.229, 0.224, 0.225], "mirror_probability": 0.5},
)
ALLOWED_IMPORTS = {"argparse", "os", "numpy", "nvidia.dali", "nvidia.dali.auto_aug",
                   "nvidia.dali.auto_aug.core", "nvidia.dali.data_node"}
TOP_LEVEL = {"_op_seed", "_vec", "_node", "_inputs", "vignette", "cutout_colour",
             "_center", "_affine", "_perspective", "_const", "_bin",
             "augment", "finish", "flat_folder_files", "training_pipeline", "create_pipeline",
             "main"}


@pytest.fixture(scope="module")
def full_code():
    return export_code(load(FULL))


def test_one_commented_block_per_step(full_code):
    for i, name in enumerate(CATALOG):
        assert f"# step {i}: {name}, p=0.5:" in full_code
    compile(full_code, "augment.py", "exec")


@pytest.mark.skipif(RUFF is None, reason="ruff is part of the test extra")
@pytest.mark.parametrize("line_length", ["88", "100"])
def test_exported_code_is_formatted_and_ruff_clean(full_code, tmp_path, line_length):
    path = tmp_path / "augment.py"
    path.write_text(full_code)
    fmt = subprocess.run([RUFF, "format", "--isolated", "--check", "--diff", "--line-length",
                          line_length, str(path)], capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    check = subprocess.run([RUFF, "check", "--isolated", "--select", "E,F,W,I,B,UP,SIM",
                            "--line-length", line_length, str(path)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


def _assert_only_expected_statements(code: str) -> ast.Module:
    tree = ast.parse(code)
    for node in tree.body:
        if isinstance(node, ast.Expr):
            assert isinstance(node.value, ast.Constant) and node is tree.body[0]
        elif isinstance(node, ast.Import):
            assert {a.name for a in node.names} <= ALLOWED_IMPORTS
        elif isinstance(node, ast.ImportFrom):
            assert node.module in ALLOWED_IMPORTS
        elif isinstance(node, ast.Assign):
            (target,) = node.targets
            assert isinstance(target, ast.Name)
            assert target.id in {"SEED", "IMAGE_EXTENSIONS", "PRESET_JSON"}
            ast.literal_eval(node.value)
        elif isinstance(node, ast.FunctionDef):
            assert node.name in TOP_LEVEL
        elif isinstance(node, ast.If):
            assert ast.unparse(node) == "if __name__ == '__main__':\n    main()"
        else:
            raise AssertionError(f"unexpected statement: {ast.unparse(node)[:80]}")
    return tree


def test_only_expected_statements_and_imports(full_code):
    _assert_only_expected_statements(full_code)


NASTY = st.text(st.characters(codec="utf-8"), max_size=60) | st.sampled_from([
    '"""; import os; os.system("rm -rf /") #', "'''\n__import__('os')", "\\", "\x00",
    "')\nprint(1)#", "${HOME}", "{x}{seed}",
])


@settings(max_examples=60, deadline=None)
@given(name=NASTY, seed=st.integers(0, 2**31 - 1))
def test_preset_content_cannot_inject_code(name, seed):
    doc = preset_dict([{"op": "hue", "params": {"hue": {"uniform": [-5, 5]}}},
                       {"op": "filter", "params": {"border": "wrap"}}], seed=seed)
    if len(name) > 200:
        return
    doc["name"] = name
    code = export_code(load(doc))
    tree = _assert_only_expected_statements(code)
    aug = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "augment")
    strings = {n.value for n in ast.walk(aug) if isinstance(n, ast.Constant)
               and isinstance(n.value, str)}
    assert strings <= {"wrap", "The augmentation chain, one block per step as configured in "
                       "dali-gallery."}
    assert name not in {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
                        and isinstance(n.value, str) and n.value != code}
    again = preset_from_module(code)
    assert again.name == name and again.seed == seed


def test_unknown_enum_values_never_reach_the_code():
    doc = preset_dict([{"op": "filter", "params": {"border": 'x", __import__("os") #'}}])
    with pytest.raises(Exception, match="border"):
        export_code(doc)


def test_reimport_round_trips(full_code):
    assert preset_from_module(full_code).to_dict() == load(FULL).to_dict()


def test_script_writes_first_batch_equal_to_preview(tmp_path):
    preset = load(preset_dict([
        {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
        {"op": "hsv", "params": {"hue": {"uniform": [-20, 20]}}},
        {"op": "noise.gaussian", "params": {"stddev": 8}},
    ], seed=11))
    script = tmp_path / "augment.py"
    script.write_text(export_code(preset))
    out = tmp_path / "batch.npz"
    proc = subprocess.run([sys.executable, str(script), "--images", str(SAMPLES),
                           "--batch-size", "4", "--device", "cpu", "--no-shuffle", "--out",
                           str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    batch = np.load(out)
    assert sorted(batch.files) == ["image_0000", "image_0001", "image_0002", "image_0003",
                                   "labels"]
    assert batch["labels"].tolist() == [0, 1, 2, 3]
    eng = PreviewEngine("cpu")
    eng.set_images(SAMPLES)
    eng.set_arrays(eng.images[:4], eng.names[:4])
    render = eng.render(preset)
    for i in range(4):
        np.testing.assert_array_equal(render.images[i], batch[f"image_{i:04d}"])
    eng.close()


def test_class_subfolders_give_labels(tmp_path):
    for k, cls in enumerate(["cats", "dogs"]):
        (tmp_path / "data" / cls).mkdir(parents=True)
        for f in sorted(SAMPLES.glob("*.jpg"))[k * 2: k * 2 + 2]:
            shutil.copy(f, tmp_path / "data" / cls / f.name)
    script = tmp_path / "augment.py"
    script.write_text(export_code(load(preset_dict([{"op": "flip"}]))))
    out = tmp_path / "b.npz"
    subprocess.run([sys.executable, str(script), "--images", str(tmp_path / "data"),
                    "--batch-size", "4", "--no-shuffle", "--out", str(out)], check=True,
                   capture_output=True, timeout=300)
    assert np.load(out)["labels"].tolist() == [0, 0, 1, 1]


def test_exported_json_is_the_preset(full_code):
    tree = ast.parse(full_code)
    node = next(n for n in tree.body if isinstance(n, ast.Assign)
                and n.targets[0].id == "PRESET_JSON")
    assert json.loads(ast.literal_eval(node.value)) == load(FULL).to_dict()
