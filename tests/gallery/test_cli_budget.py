"""Pixel budgets given by the CLI's flags and the app's argument (never by the environment)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import SAMPLES, preset_dict


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dali_gallery.gallery.cli", *args],
                          capture_output=True, text=True, timeout=300)


def test_render_refuses_a_chain_over_the_render_budget(tmp_path: Path) -> None:
    preset = tmp_path / "p.json"
    preset.write_text(json.dumps(preset_dict([{"op": "paste", "params": {"ratio": 3}}] * 4)))
    out = cli("render", str(preset), "--images", str(SAMPLES), "--size", "128", "--out",
              str(tmp_path / "g.png"))
    assert out.returncode == 2, out.stderr
    assert "BudgetError: step 3 (paste): ratio 3 gives images of up to" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "g.png").exists()
    # A larger budget, given on the command line, lets the same chain through.
    ok = cli("render", str(preset), "--images", str(SAMPLES), "--size", "128", "--draws", "1",
             "--batch-size", "1", "--max-render-mp", "400", "--out", str(tmp_path / "g.png"))
    assert ok.returncode == 0, ok.stderr


def test_bad_budget_flags_are_one_paragraph(tmp_path: Path) -> None:
    out = cli("render", "x.json", "--images", str(SAMPLES), "--max-kernel-mp", "-1",
              "--out", str(tmp_path / "g.png"))
    assert out.returncode == 2 and "Traceback" not in out.stderr


def test_check_images_takes_the_image_budget(tmp_path: Path) -> None:
    shutil.copytree(SAMPLES, tmp_path / "cls", ignore=shutil.ignore_patterns("*.md"))
    assert cli("check-images", str(tmp_path)).returncode == 0
    out = cli("check-images", str(tmp_path), "--max-image-mp", "0.1")
    assert out.returncode == 1
    assert "cls/astronaut.jpg: too large (384x384, 0.1 MP; the limit is 0.1 MP), not decoded" \
        in out.stdout


def test_the_app_takes_a_budget() -> None:
    from dali_gallery.gallery.app import App
    from dali_gallery.pipelines import budget

    previous = budget.current()
    tight = budget.Budget(render_pixels=1000)
    app = App(device="cpu", budget=tight, gallery_images=1, builder_images=1, size=128)
    try:
        assert budget.current() == tight
        app.builder.add_step("brightness")
        assert app.wait_idle()
        assert "per step of a render is allowed" in str(app.builder.last_error)
    finally:
        app.close()
        budget.configure(previous)


def test_render_takes_the_work_budget(tmp_path: Path) -> None:
    """A wide blur over the samples at full size: refused under a small work budget by name
    (exit 2, nothing written), rendered under the default one."""
    preset = tmp_path / "p.json"
    preset.write_text(json.dumps(preset_dict([{"op": "gaussian_blur",
                                               "params": {"sigma": 20}}])))
    out = cli("render", str(preset), "--images", str(SAMPLES), "--size", "128", "--draws", "1",
              "--max-render-gtaps", "0.01", "--out", str(tmp_path / "g.png"))
    assert out.returncode == 2, out.stderr
    said = " ".join(out.stderr.split())  # the CLI wraps its message
    assert "WorkError: step 0 (gaussian_blur): sigma 20 reads 242 pixels for each it writes" \
        in said
    assert "at most 0.01 G per render is allowed on the CPU: lower sigma to at most" in said
    assert "Traceback" not in out.stderr and not (tmp_path / "g.png").exists()
    ok = cli("render", str(preset), "--images", str(SAMPLES), "--size", "128", "--draws", "1",
             "--out", str(tmp_path / "g.png"))
    assert ok.returncode == 0 and (tmp_path / "g.png").exists(), ok.stderr


def test_the_builder_says_which_value_fits_the_work_budget() -> None:
    """In the app a step over the work budget is named with the value that fits; the step
    stays in the chain, and lowering it to that value renders."""
    from dali_gallery.gallery.app import App
    from dali_gallery.pipelines import budget

    previous = budget.current()
    app = App(device="cpu", budget=budget.Budget(render_work=2_000_000), gallery_images=1,
              builder_images=1, size=128)
    try:
        app.builder.add_step("gaussian_blur", sigma=6.0)
        assert app.wait_idle()
        error = app.builder.last_error
        assert "allowed on the CPU: lower sigma to at most" in str(error) and error.param == "sigma"
        assert [s.op for s in app.builder.preset.steps] == ["gaussian_blur"]
        app.builder.set_param(0, "sigma", error.fits)
        assert app.wait_idle() and app.builder.last_error is None
    finally:
        app.close()
        budget.configure(previous)
