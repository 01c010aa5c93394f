"""``dali-gallery import`` and ``export-library`` from the shell: a pasted pipeline becomes a
preset (and a parity report), refused input exits 2 with one paragraph and runs nothing."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from dali_gallery.pipelines.importers.table import markdown_table
from dali_gallery.pipelines.preset import load_file
from tests.pipelines.import_examples import ALB_KAGGLE, TV_CIFAR10


def cli(*args: str, stdin: str | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dali_gallery.gallery.cli", *args],
                          capture_output=True, text=True, timeout=timeout, input=stdin)


def test_import_writes_the_preset_and_lists_every_transform(tmp_path):
    src = tmp_path / "train.py"
    src.write_text(TV_CIFAR10)
    out = cli("import", str(src), "-o", str(tmp_path / "preset.json"))
    assert out.returncode == 0, out.stderr
    preset = load_file(tmp_path / "preset.json")
    assert [s.op for s in preset.steps] == ["flip"]
    assert "3 of 4 transforms imported from torchvision" in out.stdout
    assert "  x line 4: RandomCrop: not imported: padding by a number of pixels" in out.stdout
    assert "nearest: paste" in out.stdout
    assert "  + line 5: RandomHorizontalFlip: identical" in out.stdout
    stdin = cli("import", "-", "-o", str(tmp_path / "p2.json"), stdin=TV_CIFAR10)
    assert stdin.returncode == 0 and load_file(tmp_path / "p2.json").to_dict() == \
        preset.to_dict()


@pytest.mark.slow
def test_import_with_a_parity_report(tmp_path):
    importlib.import_module("albumentations")
    src = tmp_path / "aug.py"
    src.write_text(ALB_KAGGLE)
    out = cli("import", str(src), "-o", str(tmp_path / "p.json"), "--report",
              str(tmp_path / "report"), "--max-images", "2", "--size", "128")
    assert out.returncode == 0, out.stderr
    assert "CLAIM DOES NOT HOLD" not in out.stdout and "(claim holds)" in out.stdout
    page = (tmp_path / "report" / "report.html").read_text()
    assert page.startswith("<!doctype html>") and "dg-parity-step" in page
    data = json.loads((tmp_path / "report" / "report.json").read_text())
    assert data["images"] == 2 and data["pipeline"]["original_ms"] > 0
    assert data["pipeline"]["dali_cpu_ms"] > 0
    assert all(c["holds"] is not False for c in data["comparisons"])


def test_refused_input_exits_2_with_one_paragraph_and_runs_nothing(tmp_path):
    canary = tmp_path / "ran"
    src = tmp_path / "evil.py"
    src.write_text(f"import torchvision.transforms as T\nT.Compose([__import__('os').system("
                   f"'touch {canary}')])")
    out = cli("import", str(src), "-o", str(tmp_path / "p.json"))
    assert out.returncode == 2 and not canary.exists()
    assert out.stderr.startswith("dali-gallery: SourceRefused: line 2, column 12:")
    assert "Traceback" not in out.stderr and not (tmp_path / "p.json").exists()
    missing = cli("import", str(tmp_path / "nope.py"), "-o", str(tmp_path / "p.json"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * 300_000)
    err = cli("import", str(big), "-o", str(tmp_path / "p.json")).stderr
    assert "over 256000 bytes" in " ".join(err.split())


def test_table_and_export_library(tmp_path):
    out = cli("import", "--table")
    assert out.returncode == 0 and out.stdout.strip() == markdown_table()
    (tmp_path / "p.json").write_text(json.dumps({
        "format": "dali-gallery/preset", "version": 1, "steps": [
            {"op": "flip", "probability": 0.5, "params": {"horizontal": True,
                                                          "vertical": False}},
            {"op": "water", "params": {}}]}))
    out = cli("export-library", str(tmp_path / "p.json"), "--library", "albumentations", "-o",
              str(tmp_path / "aug.py"))
    assert out.returncode == 0, out.stderr
    assert "1 step(s) without an equivalent and 0 output setting(s)" in out.stdout
    code = (tmp_path / "aug.py").read_text()
    assert "A.HorizontalFlip(p=0.5)," in code and "# step 1 (water)" in code
    (tmp_path / "t.json").write_text(json.dumps({  # a float16 tail: Albumentations gives float32
        "format": "dali-gallery/preset", "version": 1, "steps": [],
        "output": {"mean": [0.5, 0.5, 0.5], "std": [0.25, 0.25, 0.25], "dtype": "float16"}}))
    out = cli("export-library", str(tmp_path / "t.json"), "--library", "albumentations", "-o",
              str(tmp_path / "t.py"))
    assert out.returncode == 0, out.stderr
    assert "0 step(s) without an equivalent and 1 output setting(s) that differ" in out.stdout
