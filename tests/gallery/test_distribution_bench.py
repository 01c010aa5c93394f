"""``dali-gallery bench --only distribution``: the section the runner knows, timing 400 draws
of the standard chain on the CPU."""

from __future__ import annotations

from dali_gallery.gallery.bench import sections
from dali_gallery.gallery.distribution_bench import POLICIES
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.preset import load_file


def test_the_distribution_section_times_400_cpu_draws():
    report = sections()["distribution"]("cpu", True)
    row = report["cpu_standard_chain"]
    assert row["draws"] == 400 and row["batches"] * row["batch"] >= 400
    assert row["first_run_s"] > 0 and row["built_run_s"] > 0
    assert abs(row["built_ms_per_draw"] - row["built_run_s"] * 1000 / 400) < 0.05


def test_the_policy_chain_is_a_bundled_preset_with_the_three_policies():
    preset = load_file(POLICIES)
    assert len(preset.steps) == 3 and all(CATALOG[s.op].policy for s in preset.steps)
    assert len({s.op for s in preset.steps}) == 3
