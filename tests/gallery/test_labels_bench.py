"""``dali-gallery bench --only labels``: labelled renders against the images alone, with the
boxes moved after the run (the preview's way) and inside the graph (the export's)."""

from __future__ import annotations

import pytest

from dali_gallery.gallery.bench import sections
from dali_gallery.gallery.labels_bench import bench_labels


def test_the_section_reports_both_ways_against_the_images_alone():
    assert "labels" in sections()
    cpu = bench_labels("cpu", quick=True)["cpu"]
    assert cpu["renders"] == 10 and cpu["target_ratio"] == 1.2
    base = cpu["without_labels_ms"]
    assert base > 0
    assert cpu["ratio"] == pytest.approx(cpu["with_labels_ms"] / base, abs=0.03)
    assert cpu["boxes_keypoints_only_ratio"] == pytest.approx(
        cpu["boxes_keypoints_only_ms"] / base, abs=0.03)
    for key in ("with_labels_in_graph_ratio", "boxes_keypoints_only_in_graph_ratio"):
        assert 0.5 < cpu[key] < 10, (key, cpu)
