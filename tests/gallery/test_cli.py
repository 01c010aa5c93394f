"""The dali-gallery command line: catalog, export, render, check-images, bench; bad input gives
one paragraph and exit code 2 without a traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.catalog import CATALOG
from tests.hostile import EXPECTED, absurd_documents
from tests.support import SAMPLES, preset_dict

PRESET = preset_dict([
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "brightness_contrast", "params": {"brightness": {"uniform": [0.8, 1.2]},
                                             "contrast": 1.1}},
    {"op": "noise.salt_and_pepper", "probability": 0.5, "params": {"prob": 0.02}},
], seed=3)


def cli(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dali_gallery.gallery.cli", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def preset_file(tmp_path: Path) -> Path:
    path = tmp_path / "preset.json"
    path.write_text(json.dumps(PRESET))
    return path


def test_ops_lists_every_operator_with_availability():
    out = cli("ops", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    names = [op["op"] for op in data["operators"]]
    assert names == list(CATALOG)
    jitter = next(op for op in data["operators"] if op["op"] == "jitter")
    assert jitter["devices"] == ["gpu"] and jitter["gpu_only_reason"]
    assert jitter["available_here"] is data["gpu_present"]
    rotate = next(op for op in data["operators"] if op["op"] == "rotate")
    angle = next(p for p in rotate["params"] if p["name"] == "angle")
    assert angle["bounds"] == [-360, 360] and angle["runtime"] is True
    text = cli("ops").stdout
    assert "== geometry ==" in text and "experimental.median_blur" in text


def test_render_grid_and_npz_match_the_exported_script(tmp_path, preset_file):
    grid, npz = tmp_path / "grid.png", tmp_path / "batch.npz"
    out = cli("render", str(preset_file), "--images", str(SAMPLES), "--batch-size", "4",
              "--draws", "3", "--device", "cpu", "--out", str(grid), "--npz", str(npz),
              "--json", str(tmp_path / "records.json"))
    assert out.returncode == 0, out.stderr
    img = Image.open(grid)
    assert img.width >= 4 * 150 and img.height >= 4 * 150
    records = json.loads((tmp_path / "records.json").read_text())
    assert len(records["records"]) == 12
    script = tmp_path / "augment.py"
    assert cli("export", str(preset_file), "-o", str(script)).returncode == 0
    exported = tmp_path / "exported.npz"
    run = subprocess.run([sys.executable, str(script), "--images", str(SAMPLES), "--batch-size",
                          "4", "--device", "cpu", "--no-shuffle", "--out", str(exported)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    a, b = np.load(npz), np.load(exported)
    assert sorted(a.files) == sorted(b.files)
    for key in a.files:
        np.testing.assert_array_equal(a[key], b[key])


def test_render_skips_bad_files_and_names_them(tmp_path, preset_file):
    folder = tmp_path / "imgs"
    folder.mkdir()
    for f in sorted(SAMPLES.glob("*.jpg"))[:2]:
        (folder / f.name).write_bytes(f.read_bytes())
    (folder / "zz_broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    (folder / "empty.png").write_bytes(b"")
    out = cli("render", str(preset_file), "--images", str(folder), "--device", "cpu",
              "--out", str(tmp_path / "g.png"))
    assert out.returncode == 0, out.stderr
    assert "zz_broken.jpg" in out.stderr and "empty.png" in out.stderr
    assert "rendered 2 images" in out.stdout


@pytest.mark.parametrize("args,needle", [
    (["export", "missing.json", "-o", "x.py"], "does not exist"),
    (["render", "PRESET", "--images", "/nonexistent/dir", "--out", "g.png"], "does not exist"),
    (["render", "BAD", "--images", str(SAMPLES), "--out", "g.png"], "unknown operator"),
    (["export", "BAD", "-o", "/nonexistent/dir/x.py"], "unknown operator"),
    (["export", "PRESET", "-o", "/nonexistent/dir/x.py"], "does not exist"),
    (["export", "PRESET", "-o", "/tmp"], "cannot write '/tmp': it is a folder"),
    (["export", "PRESET", "-o", "/sys/x.py"], "cannot write '/sys/x.py': Permission denied"),
    (["render", "PRESET", "--images", str(SAMPLES), "--out", "g.png", "--npz", "/tmp"],
     "--npz '/tmp' cannot be written: it is a folder"),
    (["check-images", "/nonexistent/dir"], "does not exist"),
])
def test_bad_input_is_one_paragraph_and_exit_2(tmp_path, preset_file, args, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(preset_dict([{"op": "rotat"}])))
    args = [str(preset_file) if a == "PRESET" else str(bad) if a == "BAD" else a for a in args]
    out = cli(*args)
    assert out.returncode == 2, (out.stdout, out.stderr)
    msg = out.stderr + out.stdout
    assert needle in msg and "Traceback" not in msg


@pytest.mark.parametrize(("args", "message"), [
    (["--batch-size", "0"], "--batch-size 0 is not allowed; expected 1 to 256"),
    (["--batch-size", "-1"], "--batch-size -1 is not allowed; expected 1 to 256"),
    (["--batch-size", "0", "--iteration", "0"], "--batch-size 0 is not allowed; expected 1 "
                                                "to 1024"),
    (["--size", "0"], "--size 0 is not allowed; expected a longer side of 1 or more pixels"),
    (["--size", "-5", "--iteration", "0", "--batch-size", "2"], "--size -5 is not allowed"),
])
def test_render_numbers_out_of_range_are_refused_by_their_option(preset_file, tmp_path,
                                                                 capsys, args, message):
    """--batch-size 0 rendered every image (``args.batch_size or ...``) and --size 0 was
    refused as "max_side must be >= 1", a name the command line does not have."""
    from dali_gallery.gallery.cli import main

    code = main(["render", str(preset_file), "--images", str(SAMPLES), "--device", "cpu",
                 "--out", str(tmp_path / "g.png"), *args])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and message in err and "max_side" not in err
    assert not (tmp_path / "g.png").exists()


@pytest.mark.parametrize(("option", "name", "message"), [
    ("--out", "g.txt", ".txt is not an image type PIL writes; expected .png or .jpg"),
    ("--out", "g", "a name without extension is not an image type PIL writes"),
    ("--out", "missing/g.png", "its folder"),
    ("--npz", "missing/b.npz", "its folder"),
    ("--json", "missing/r.json", "its folder"),
])
def test_render_refuses_an_output_it_cannot_write_before_rendering(preset_file, tmp_path, capsys,
                                                                   option, name, message):
    """PIL's "unknown file extension: .txt" (or a FileNotFoundError) came after the whole
    render, naming neither the option nor what is allowed."""
    from dali_gallery.gallery.cli import main

    outputs = {"--out": str(tmp_path / "g.png"), option: str(tmp_path / name)}
    code = main(["render", str(preset_file), "--images", str(SAMPLES), "--device", "cpu",
                 *(x for kv in outputs.items() for x in kv)])
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert code == 2 and f"{option} {str(tmp_path / name)!r} cannot be written: " in err, err
    assert message in err and "rendered" not in captured.out
    assert not (tmp_path / "g.png").exists()


def test_render_npz_without_the_tail_says_it_is_not_the_exported_batch(tmp_path, capsys):
    from dali_gallery.gallery.cli import main

    path = tmp_path / "tail.json"
    path.write_text(json.dumps(preset_dict([], output={"crop": [32, 32]})))
    args = ["render", str(path), "--images", str(SAMPLES), "--batch-size", "2", "--draws", "1",
            "--device", "cpu", "--out", str(tmp_path / "g.png"), "--npz", str(tmp_path / "b.npz")]
    assert main(args) == 0
    assert "note: --npz gets a first draw with no training tail (the preset's output: add " \
        "--tail), which the exported module's batch has" in \
        " ".join(capsys.readouterr().err.split())
    assert np.load(tmp_path / "b.npz")["image_0000"].shape != (3, 32, 32)
    assert main([*args, "--tail"]) == 0
    assert "note" not in capsys.readouterr().err
    assert np.load(tmp_path / "b.npz")["image_0000"].shape == (3, 32, 32)
    assert main([*args, "--tail", "--size", "4096"]) == 0  # nothing downscaled: the batch
    assert "note" not in capsys.readouterr().err


def test_check_images_exit_codes(tmp_path):
    assert cli("check-images", str(SAMPLES)).returncode == 0
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.jpg").write_bytes(b"text, not a jpeg")
    (tmp_path / "a" / "ok.jpg").write_bytes(next(SAMPLES.glob("*.jpg")).read_bytes())
    out = cli("check-images", str(tmp_path))
    assert out.returncode == 1 and "a/x.jpg" in out.stdout


def test_bench_quick_reports_ratios():
    out = cli("bench", "--quick", "--json", "--only", "engine,scrub", timeout=600)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["device"] == "cpu"
    for size in ("256x256", "512x512"):
        row = report["engine"][size]
        assert row["engine_ms"] > 0 and row["bare_dali_ms"] > 0
        assert row["ratio"] == pytest.approx(row["engine_ms"] / row["bare_dali_ms"], rel=0.01)
    assert report["scrub"]["builds"] == 0


# ---- absurd presets: exit 2 with one bounded paragraph, for every command taking a preset -----

PRESET_COMMANDS = {
    "export": lambda preset, tmp: ["export", preset, "-o", str(tmp / "x.py")],
    "render": lambda preset, tmp: ["render", preset, "--images", str(SAMPLES), "--device", "cpu",
                                   "--out", str(tmp / "g.png")],
}


def assert_one_paragraph(out: subprocess.CompletedProcess, needle: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stderr[-2000:])
    err = out.stderr
    assert "Traceback" not in err and out.stdout == ""
    assert err.startswith("dali-gallery: ") and len(err) < 5000, err[:2000]
    assert all(line.strip() for line in err.rstrip("\n").split("\n")), err  # no blank line
    assert needle in " ".join(err.split()), err


@pytest.mark.parametrize("command", sorted(PRESET_COMMANDS))
@pytest.mark.parametrize("case", sorted(absurd_documents()))
def test_an_absurd_preset_is_one_paragraph_and_exit_2(tmp_path, command, case):
    """OverflowError, RecursionError (json, deepcopy) and minute-long megabyte messages."""
    path = tmp_path / f"{case}.json"
    path.write_bytes(absurd_documents()[case])
    start = time.perf_counter()
    out = cli(*PRESET_COMMANDS[command](str(path), tmp_path), timeout=120)
    assert_one_paragraph(out, EXPECTED[case])
    assert time.perf_counter() - start < 60


@pytest.mark.parametrize("command", sorted(PRESET_COMMANDS))
def test_a_fifo_device_or_folder_as_preset_is_refused_without_reading(tmp_path, command):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # opening it for reading would block until a writer comes: never
    for target, kind in ((fifo, "is a FIFO (named pipe)"), (tmp_path, "is a directory"),
                         (Path("/dev/zero"), "is a character device")):
        out = cli(*PRESET_COMMANDS[command](str(target), tmp_path), timeout=60)
        assert_one_paragraph(out, f"preset file {str(target)!r} {kind}, not a regular file")


def test_a_tail_that_fails_later_is_refused_by_export(tmp_path):
    path = tmp_path / "tail.json"
    path.write_text(json.dumps(preset_dict([], output={"resize_shorter": 128,
                                                       "crop": [224, 224]})))
    out = cli("export", str(path), "-o", str(tmp_path / "x.py"))
    assert_one_paragraph(out, "output: crop [224, 224] is not allowed with resize_shorter 128")
    assert not (tmp_path / "x.py").exists()


def test_export_warns_when_batches_mix_image_sizes(tmp_path):
    """The module's PyTorch iterator fails on a batch of mixed sizes ("The batch must be
    representable as a tensor"): export says so, as the builder does, and still writes it."""
    mixed, fixed = tmp_path / "mixed.json", tmp_path / "fixed.json"
    mixed.write_text(json.dumps(preset_dict([
        {"op": "random_resized_crop", "params": {"size": 48}},
        {"op": "random_bbox_crop", "params": {}}])))
    fixed.write_text(json.dumps(preset_dict([], output={"crop": [32, 32]})))
    out = cli("export", str(mixed), "-o", str(tmp_path / "m.py"))
    assert out.returncode == 0 and (tmp_path / "m.py").exists(), out.stderr
    assert out.stderr.startswith("warning: Batches will mix image sizes (step 1 "
                                 "(random_bbox_crop) draws each sample's window size)"), out.stderr
    out = cli("export", str(fixed), "-o", str(tmp_path / "f.py"))
    assert out.returncode == 0 and out.stderr == "", out.stderr
