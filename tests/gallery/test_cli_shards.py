"""``dali-gallery render --shard/--num-shards`` and ``--iteration/--restore``: what a shard
trains on first, and any batch of it, equal to what the exported script writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support import SAMPLES, preset_and_script, preset_dict, run_python

PRESET = preset_dict([
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "hsv", "params": {"hue": {"uniform": [-20, 20]}}},
    {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
], seed=9)


run = run_python


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    return preset_and_script(PRESET, tmp_path_factory.mktemp("cli_shards"))


def _same(a: Path, b: Path) -> None:
    x, y = np.load(a), np.load(b)
    assert sorted(x.files) == sorted(y.files)
    for k in x.files:
        np.testing.assert_array_equal(x[k], y[k], err_msg=k)


@pytest.mark.parametrize("shard", [0, 1])
def test_render_shows_what_a_shard_trains_on_first(files, shard):
    tmp = files["tmp"]
    trained, shown = tmp / f"trained_{shard}.npz", tmp / f"shown_{shard}.npz"
    out = run(str(files["script"]), "--images", str(SAMPLES), "--batch-size", "2",
              "--no-shuffle", "--shard", str(shard), "--num-shards", "2", "--out", str(trained))
    assert out.returncode == 0, out.stderr
    out = run("-m", "dali_gallery.gallery.cli", "render", str(files["preset"]), "--images",
              str(SAMPLES), "--batch-size", "2", "--device", "cpu", "--shard", str(shard),
              "--num-shards", "2", "--out", str(tmp / f"grid_{shard}.png"), "--npz", str(shown))
    assert out.returncode == 0, out.stderr
    _same(shown, trained)
    assert np.load(shown)["labels"].tolist() == [3 * shard, 3 * shard + 1]


def test_render_replays_batch_n_from_the_start_and_from_a_checkpoint(files):
    tmp = files["tmp"]
    common = ["--batch-size", "2", "--shard", "1", "--num-shards", "2"]
    trained = tmp / "trained_it4.npz"
    out = run(str(files["script"]), "--images", str(SAMPLES), *common, "--iteration", "4",
              "--checkpoint-every", "3", "--checkpoint-dir", str(tmp / "ck"), "--out",
              str(trained))
    assert out.returncode == 0, out.stderr
    for extra in ([], ["--restore", str(tmp / "ck" / "iteration_00000003.cpt")]):
        replayed = tmp / "replayed.npz"
        out = run("-m", "dali_gallery.gallery.cli", "render", str(files["preset"]), "--images",
                  str(SAMPLES), *common, "--iteration", "4", "--device", "cpu", "--npz",
                  str(replayed), "--out", str(tmp / "sheet.png"), *extra)
        assert out.returncode == 0, out.stderr
        assert "replayed batch 4 of shard 1 of 2" in out.stdout
        _same(replayed, trained)


@pytest.mark.parametrize(("args", "message"), [
    (["--iteration", "3", "--npz", "x.npz"], "--iteration needs --batch-size"),
    (["--out", "g.png", "--restore", "x.cpt"], "apply to --iteration only"),
    (["--out", "g.png", "--shard", "2", "--num-shards", "2"],
     "shard_id 2 is not allowed with num_shards 2"),
    (["--iteration", "0", "--batch-size", "2", "--out", "g.png", "--tail"],
     "--tail do(es) not apply"),
    (["--iteration", "0", "--batch-size", "2", "--npz", "x.npz", "--restore", "missing.cpt"],
     "is not a file"),
])
def test_render_usage_errors_say_what_is_allowed(files, args, message):
    out = run("-m", "dali_gallery.gallery.cli", "render", str(files["preset"]), "--images",
              str(SAMPLES), "--device", "cpu", *args)
    assert out.returncode == 2, out.stderr
    assert message in out.stderr
    assert "Traceback" not in out.stderr


def test_a_relative_images_folder_renders_the_same_shard(files, monkeypatch):
    """``--images samples`` (relative) said every file was "file not found": the files were
    joined to the folder twice."""
    from dali_gallery.gallery.cli import main

    tmp = files["tmp"]
    common = ["--batch-size", "2", "--device", "cpu", "--shard", "1", "--num-shards", "2",
              "--out", str(tmp / "grid_rel.png")]
    absolute, relative = tmp / "absolute.npz", tmp / "relative.npz"
    assert main(["render", str(files["preset"]), "--images", str(SAMPLES), *common, "--npz",
                 str(absolute)]) == 0
    monkeypatch.chdir(SAMPLES.parent)
    assert main(["render", str(files["preset"]), "--images", SAMPLES.name, *common, "--npz",
                 str(relative)]) == 0
    _same(absolute, relative)
