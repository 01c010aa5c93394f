"""``dali-gallery bench``: every section is known to the runner, and the standard chain is the
one the hand-written reference implements."""

from __future__ import annotations

import pytest

from dali_gallery.gallery.bench import SECTIONS, run_bench, sections
from dali_gallery.gallery.bench_inputs import bench_images, standard_preset


def test_the_runner_knows_every_section_without_a_registry():
    assert set(sections()) == set(SECTIONS)


def test_an_unknown_section_is_refused_by_name(capsys):
    assert run_bench("cpu", only=["nope"]) == 2
    assert "unknown bench section 'nope'" in capsys.readouterr().err


def test_standard_chain_is_the_shipped_preset():
    preset = standard_preset(seed=7)
    assert preset.seed == 7
    assert [s.op for s in preset.steps] == ["rotate", "brightness_contrast", "hsv",
                                            "gaussian_blur", "flip", "noise.gaussian"]
    assert standard_preset().seed == 42


@pytest.mark.slow
def test_the_engine_section_runs():
    report = sections()["engine"]("cpu", True)
    for size in ("256x256", "512x512"):
        assert report[size]["engine_ms"] > 0 and report[size]["bare_dali_ms"] > 0
        assert report[size]["engine_p95_ms"] >= report[size]["engine_ms"] * 0.5


def test_bench_images_are_square_crops_of_the_samples():
    images = bench_images(64, 3)
    assert [a.shape for a in images] == [(64, 64, 3)] * 3
