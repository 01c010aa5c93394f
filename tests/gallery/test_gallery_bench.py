"""``dali-gallery bench --only gallery``: the whole gallery cold, warm (the pipelines of the last
gallery kept built) and warm_loaded (every pipeline loaded from the disk cache), each warm one
beside plain DALI doing the same DALI work (every pipeline it used, each run it made)."""

from __future__ import annotations

import pytest

from dali_gallery.gallery.bench import sections


@pytest.mark.slow
def test_the_gallery_section_reports_its_plain_dali_floors():
    report = sections()["gallery"]("cpu", True)
    cold, warm, loaded = report["cold"], report["warm"], report["warm_loaded"]
    assert cold["failed"] == warm["failed"] == loaded["failed"] == []
    assert warm["operators_rendered"] == loaded["operators_rendered"] == \
        cold["operators_rendered"] >= 50
    assert (cold["pipelines_from_cache"], cold["pipelines_kept_built"]) == (0, 0)
    # the warm gallery takes every pipeline built (those with Python operators too); the
    # loaded one loads all but those, which DALI cannot serialize ("built" counts loads too)
    assert (warm["pipelines_built"], warm["pipelines_from_cache"]) == (0, 0)
    for result in (warm, loaded):
        work = result["plain_dali_work"]
        python = work["not_replayed"]["pipelines_with_python_operators"]
        used = result["pipelines_kept_built"] if result is warm else result["pipelines_built"]
        # every pipeline the gallery used is replayed, but those DALI cannot serialize
        assert work["pipelines"] + python == used and python > 0
        if result is loaded:
            assert work["pipelines"] == loaded["pipelines_from_cache"] > 0
        # every run the gallery made is replayed, or counted as not replayed
        skipped = work["not_replayed"]
        assert work["runs"] + skipped["their_runs"] + skipped["failed_runs"] == \
            result["dali_renders"]
        assert skipped["failed_runs"] == 0 and work["runs"] >= work["pipelines"]
        assert len(result["plain_dali_s"]) == len(result["walls_s"]) == 1
        assert result["plain_dali_s"][0] > 0
        assert result["over_plain_dali"] == pytest.approx(
            result["walls_s"][0] / result["plain_dali_s"][0], abs=0.02)
    # plain DALI builds before its clock what the warm gallery took built, nothing else
    assert warm["plain_dali_work"]["built_before_the_clock"] == warm["plain_dali_work"][
        "pipelines"]
    assert loaded["plain_dali_work"]["built_before_the_clock"] == 0
    assert (warm["pipelines_from_cache"], loaded["pipelines_kept_built"]) == (0, 0)
