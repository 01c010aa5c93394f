"""``dali-gallery bench --only gallery``: the whole gallery cold and warm, the warm one beside
plain DALI doing the same DALI work (every pipeline it used, each run it made)."""

from __future__ import annotations

import pytest

from dali_gallery.gallery.bench import sections


@pytest.mark.slow
def test_the_gallery_section_reports_its_plain_dali_floor():
    report = sections()["gallery"]("cpu", True)
    cold, warm = report["cold"], report["warm"]
    assert cold["failed"] == warm["failed"] == []
    assert warm["operators_rendered"] == cold["operators_rendered"] >= 50
    assert warm["pipelines_from_cache"] > 0 and cold["pipelines_from_cache"] == 0
    work = warm["plain_dali_work"]
    not_replayed = work["not_replayed"]["pipelines_with_python_operators"]
    # every pipeline the warm gallery used is replayed, but those DALI cannot serialize
    assert work["pipelines"] + not_replayed == warm["pipelines_built"]
    assert work["pipelines"] == warm["pipelines_from_cache"]
    # every run the gallery made is replayed, or counted as not replayed
    skipped = work["not_replayed"]
    assert work["runs"] + skipped["their_runs"] + skipped["failed_runs"] == warm["dali_renders"]
    assert skipped["failed_runs"] == 0 and work["runs"] >= work["pipelines"]
    assert len(warm["plain_dali_s"]) == len(warm["walls_s"]) == 1
    assert warm["plain_dali_s"][0] > 0
    assert warm["over_plain_dali"] == pytest.approx(
        warm["walls_s"][0] / warm["plain_dali_s"][0], abs=0.02)
