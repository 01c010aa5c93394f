"""The exported module: standalone, formatted, ruff-clean, safe against preset content, and
runnable as a script that writes the first batch."""

from __future__ import annotations

import ast
import inspect
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.custom_code import reserved_names
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.export import export_code, preset_from_module, preset_from_source
from dali_gallery.pipelines.preset import PresetError, load
from dali_gallery.pipelines.shards import EMBEDDED, shard_preset
from tests.support import SAMPLES, import_export, preset_dict

RUFF = shutil.which("ruff") or "ruff"  # the test extra installs it
FULL = preset_dict(
    [{"op": name, "probability": 0.5, "params": {}} for name in CATALOG],
    output={"resize_shorter": 256, "crop": [224, 224], "mean": [0.485, 0.456, 0.406],
            "std": [0.229, 0.224, 0.225], "mirror_probability": 0.5},
)
ALLOWED_IMPORTS = {"argparse", "json", "os", "tempfile", "numpy", "nvidia.dali",
                   "nvidia.dali.auto_aug", "nvidia.dali.auto_aug.core", "nvidia.dali.data_node",
                   "nvidia.dali.math", "nvidia.dali.pipeline"}
TOP_LEVEL = {"_op_seed", "_vec", "_node", "_inputs", "_checked", "vignette", "cutout_colour",
             "_center", "_affine", "_perspective", "_const", "_bin", "_picked", "_uniform_int",
             "_log_key",
             "_rand_augment_ops", "_rand_augment", "_trivial_augment_ops", "_trivial_augment",
             "_auto_augment_policy", "_auto_augment_pick", "_auto_augment",
             "_random_signs", "_auto_augment_stages", "_auto_augment_runs", "_bbox_crop", "_wh",
             "_pixel_window",
             "augment", "finish", "flat_folder_files", "reader_args", "training_pipeline",
             "create_pipeline",
             "shard_seed", "check_shard", "checkpoint_file", "read_checkpoint", "replay",
             "batch_arguments", "batch_options", "script_batch", "save_npz", "batch_at",
             "main"}


@pytest.fixture(scope="module")
def full_code():
    return export_code(load(FULL))


def test_one_commented_block_per_step(full_code):
    for i, name in enumerate(CATALOG):
        assert f"# step {i}: {name}, p=0.5:" in full_code
    compile(full_code, "augment.py", "exec")


def assert_ruff_clean(code: str, folder: Path, line_length: str) -> None:
    """The module as ``ruff format`` writes it and clean under ``ruff check``."""
    path = folder / "augment.py"
    path.write_text(code)
    fmt = subprocess.run([RUFF, "format", "--isolated", "--check", "--diff", "--line-length",
                          line_length, str(path)], capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    check = subprocess.run([RUFF, "check", "--isolated", "--select", "E,F,W,I,B,UP,SIM",
                            "--line-length", line_length, str(path)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout


@pytest.mark.parametrize("line_length", ["88", "100"])
def test_exported_code_is_formatted_and_ruff_clean(full_code, tmp_path, line_length):
    assert_ruff_clean(full_code, tmp_path, line_length)


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
            assert target.id in {"SEED", "HW_DECODER_LOAD", "IMAGE_EXTENSIONS", "PRESET_JSON"}
            ast.literal_eval(node.value)
        elif isinstance(node, ast.FunctionDef):
            assert node.name in TOP_LEVEL
        elif isinstance(node, ast.If):
            assert ast.unparse(node) == "if __name__ == '__main__':\n    main()"
        else:
            raise AssertionError(f"unexpected statement: {ast.unparse(node)[:80]}")
    return tree


def test_only_expected_statements_and_imports(full_code):
    _assert_embedded_functions_are_the_preview_s(_assert_only_expected_statements(full_code))


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
    # the name lives in PRESET_JSON only: every other string is the template's own
    baseline = ast.parse(export_code(load({**doc, "name": "baseline"})))
    assert _strings_outside_preset(tree) == _strings_outside_preset(baseline)
    again = preset_from_module(code)
    assert again.name == name and again.seed == seed
    _assert_embedded_functions_are_the_preview_s(tree)


def _strings_outside_preset(tree: ast.Module) -> list[str]:
    return sorted(n.value for node in tree.body if not (
        isinstance(node, ast.Assign) and node.targets[0].id == "PRESET_JSON")  # type: ignore
        for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def _assert_embedded_functions_are_the_preview_s(tree: ast.Module) -> None:
    """The shard seed, shard check and folder listing are pipelines.shards' own functions."""
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for f in EMBEDDED:
        own = ast.parse(inspect.getsource(f)).body[0]
        assert ast.dump(defs[f.__name__]) == ast.dump(own), f.__name__


def test_unknown_enum_values_never_reach_the_code():
    doc = preset_dict([{"op": "filter", "params": {"border": 'x", __import__("os") #'}}])
    with pytest.raises(Exception, match="border"):
        export_code(doc)


def test_reimport_round_trips(full_code):
    assert preset_from_module(full_code).to_dict() == load(FULL).to_dict()


def test_reimport_takes_the_path_as_the_readme_shows_it(tmp_path, monkeypatch):
    """``preset_from_module("augment.py")``, the README's call, read the str as source text
    and said there was no PRESET_JSON; a str holding neither a line break nor PRESET_JSON is a
    path, a Path always is one, and source text stays source text."""
    preset = load(preset_dict([{"op": "rotate", "params": {"angle": 10}}], seed=5))
    code = export_code(preset)
    (tmp_path / "augment.py").write_text(code)
    monkeypatch.chdir(tmp_path)
    for source in ("augment.py", str(tmp_path / "augment.py"), Path("augment.py"), code):
        assert preset_from_module(source).to_dict() == preset.to_dict(), source
    assert preset_from_source(code).to_dict() == preset.to_dict()


@pytest.mark.parametrize("source", ["missing.py", "augment", "", "x = 1"])
def test_reimport_of_a_str_that_is_neither_says_what_was_expected(tmp_path, monkeypatch,
                                                                  source):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(PresetError) as err:
        preset_from_module(source)
    msg = str(err.value)
    assert f"exported module: {source!r} is neither an existing file nor module source text" \
        in msg
    assert "expected the path of a module exported by dali-gallery" in msg
    assert "PRESET_JSON" in msg


def test_reimport_refuses_what_is_not_a_module_file(tmp_path):
    with pytest.raises(PresetError, match="is a directory, not a regular file"):
        preset_from_module(str(tmp_path))
    with pytest.raises(PresetError, match="it does not exist"):
        preset_from_module(tmp_path / "missing.py")
    with pytest.raises(PresetError, match=r"expected a path \(str or Path\).*got int"):
        preset_from_module(3)  # type: ignore[arg-type]


def test_module_text_from_a_browser_never_names_a_file(tmp_path):
    """The builder's upload goes to preset_from_source: one line naming a real module is not
    opened."""
    (tmp_path / "augment.py").write_text(export_code(load(preset_dict([]))))
    with pytest.raises(PresetError, match="exported module: not valid Python"):
        preset_from_source(str(tmp_path / "augment.py"))
    with pytest.raises(PresetError, match="no PRESET_JSON found"):
        preset_from_source("augment")


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


SHARDED = preset_dict([
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "hsv", "params": {"hue": {"uniform": [-40, 40]}}},
    {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
], seed=5)


def _identical_images(folder, n: int) -> None:
    """n copies of one small JPEG: shards of this folder read pixel-identical images."""
    folder.mkdir()
    buf = io.BytesIO()
    Image.open(SAMPLES / "astronaut.jpg").resize((96, 96)).save(buf, "JPEG", quality=90)
    for i in range(n):
        (folder / f"same_{i}.jpg").write_bytes(buf.getvalue())


def _first(module, folder, batch: int, shard_id: int, num_shards: int) -> list[np.ndarray]:
    pipe = module.create_pipeline(str(folder), batch, num_threads=1, device_id=None,
                                  shard_id=shard_id, num_shards=num_shards,
                                  random_shuffle=False)
    pipe.build()
    images, _ = pipe.run()
    out = [np.array(images[i]) for i in range(batch)]
    del pipe
    return out


def test_each_shard_draws_its_own_augmentations(tmp_path):
    """Regression (issue 12): with one seed, two shards of a folder of identical images
    produced identical batches, so N GPUs trained on 1/N of the variety asked for."""
    folder = tmp_path / "same"
    _identical_images(folder, 4)
    preset = load(SHARDED)
    module = import_export(preset, tmp_path)
    shard0, shard1 = _first(module, folder, 2, 0, 2), _first(module, folder, 2, 1, 2)
    for a, b in zip(shard0, shard1, strict=True):
        assert not np.array_equal(a, b)  # the same pixels in: only the draws differ
    # shard 0 is unchanged: what one GPU trains on, and what the preview shows
    for a, b in zip(shard0, _first(module, folder, 2, 0, 1), strict=True):
        np.testing.assert_array_equal(a, b)
    eng = PreviewEngine("cpu")
    eng.set_images(folder)
    eng.set_arrays(eng.images[:2], eng.names[:2])
    for shard, batch in ((0, shard0), (1, shard1)):
        render = eng.render(shard_preset(preset, shard))
        for i in range(2):
            np.testing.assert_array_equal(render.images[i], batch[i])
    eng.close()


def test_create_pipeline_refuses_a_shard_outside_the_job(tmp_path):
    module = import_export(load(SHARDED), tmp_path)
    with pytest.raises(ValueError, match="shard_id 2 is not allowed with num_shards 2"):
        module.create_pipeline(str(SAMPLES), 2, device_id=None, shard_id=2, num_shards=2)


@pytest.mark.parametrize("grouped", [False, True])
def test_a_gpu_only_chain_on_the_cpu_is_refused_by_name(tmp_path, grouped):
    """The script's default --device cpu on a chain with jitter ended in DALI's assert
    'Operator "Jitter" not registered for cpu' at build time; it names the operators now."""
    steps = [{"op": "hue"}, {"op": "jitter"}, {"op": "experimental.erode", "enabled": False}]
    if grouped:
        steps = [{"one_of": steps[:2]}]
    module = import_export(load(preset_dict(steps)), tmp_path)
    with pytest.raises(ValueError) as err:
        module.create_pipeline(str(SAMPLES), 2, device_id=None)
    assert str(err.value) == ("device_id None (the CPU) cannot run this chain: jitter (DALI 2.4 "
                              "implements it only on the GPU); pass a GPU's device_id (the "
                              "script: --device gpu)")
    cpu = import_export(load(preset_dict([{"op": "hue"}])), tmp_path)
    assert "cannot run this chain" not in inspect.getsource(cpu.create_pipeline)
    cpu.create_pipeline(str(SAMPLES), 2, device_id=None).build()


def test_checkpoints_of_a_chain_dali_cannot_checkpoint_are_refused_by_name(tmp_path):
    """clahe with --checkpoint-every (enable_checkpointing=True) ended in a traceback of
    DALI's "Checkpointing is not implemented for this operator" at build time."""
    module = import_export(load(preset_dict([{"op": "hue"}, {"op": "clahe"}])), tmp_path)
    message = "DALI cannot checkpoint clahe, so this chain can neither save nor restore"
    for kwargs in ({"enable_checkpointing": True}, {"checkpoint": b"state"}):
        with pytest.raises(ValueError, match=message):
            module.create_pipeline(str(SAMPLES), 2, device_id=None, **kwargs)
    with pytest.raises(ValueError, match=message):
        module.batch_at(str(SAMPLES), 2, iteration=1, checkpoint_every=1,
                        checkpoint_dir=str(tmp_path / "ck"))
    images, _ = module.batch_at(str(SAMPLES), 2)  # without checkpoints it runs
    assert len(images) == 2


_ROTATE = {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-20, 20]}}}
GROUPED = preset_dict([  # the widest groups: every line of their blocks within the limit
    {"one_of": [_ROTATE] * 16, "pick": 3, "probability": 0.5,
     "weights": [1 / 7] * 15 + [3.3]},
    {"one_of": [_ROTATE] * 16, "weights": [1 / 7] * 15 + [3.3]},
    {"one_of": [_ROTATE, {"op": "flip"}], "pick": 2, "probability": 0.25},
] + [{"op": "flip"}] * 61, seed=3)


@pytest.mark.parametrize("line_length", ["88", "100"])
def test_exported_groups_are_formatted_and_ruff_clean(tmp_path, line_length):
    code = export_code(load(GROUPED))
    _assert_only_expected_statements(code)
    assert "# step 0: one_of (pick 3 of 16, weights " in code and "_picked(keys_0, 15, 3)" in code
    assert "pick_1 = fn.random.choice(" in code
    assert_ruff_clean(code, tmp_path, line_length)
    assert preset_from_module(code).to_dict() == load(GROUPED).to_dict()
    top = {n.name for n in ast.parse(code).body if isinstance(n, ast.FunctionDef)}
    assert "_picked" in top and top <= reserved_names()  # no custom function can replace it



@pytest.mark.parametrize("shuffle", [False, True])
def test_the_pytorch_recipe_trains_every_file_once_an_epoch(tmp_path, shuffle):
    """The module's PyTorch recipe (DALIGenericIterator with the reader's name, PARTIAL) over
    shards whose sizes the batch does not divide: in every epoch each file comes exactly once
    (regression: without the reader's pad_last_batch the next epoch started inside the last
    batch's wrap, and later epochs repeated some files and skipped others)."""
    torch_plugin = pytest.importorskip("nvidia.dali.plugin.pytorch")
    folder = tmp_path / "seven"
    _identical_images(folder, 7)  # a flat folder: the label is the file's index
    module = import_export(load(SHARDED), tmp_path)
    loaders = []
    for shard in range(2):
        pipe = module.create_pipeline(str(folder), 3, num_threads=1, device_id=None,
                                      shard_id=shard, num_shards=2, random_shuffle=shuffle)
        loaders.append(torch_plugin.DALIGenericIterator(
            pipe, ["images", "labels"], reader_name="Reader",
            last_batch_policy=torch_plugin.LastBatchPolicy.PARTIAL, auto_reset=True))
    for _ in range(3):
        seen = [int(v) for loader in loaders for batch in loader
                for v in batch[0]["labels"].reshape(-1)]
        assert sorted(seen) == list(range(7))
    code = export_code(load(SHARDED))
    assert "pad_last_batch=True" in code
