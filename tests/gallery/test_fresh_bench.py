"""The gallery bench's new-kernel figures: the gallery and plain DALI each in a fresh process,
reporting their imports apart from their work."""

from __future__ import annotations

import pytest

from dali_gallery.gallery.fresh_bench import _child, new_kernel
from dali_gallery.pipelines.dali_record import recording
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from tests.support import cpu_engine, preset_dict, sample_arrays


@pytest.mark.slow
def test_a_new_kernel_and_plain_dali_each_run_in_a_fresh_process(tmp_path):
    cache = tmp_path / "cache"
    eng = cpu_engine(sample_arrays(2), PipelineCache(cache))
    with recording() as work:
        eng.render(load(preset_dict([{"op": "rotate", "params": {"angle": 15.0}}])))
    eng.close()
    work.save(tmp_path / "work.npz")
    report = new_kernel("cpu", cache, tmp_path / "work.npz")
    gallery, plain = report["gallery"], report["plain_dali"]
    assert "error" not in gallery and "error" not in plain, report
    assert gallery["operators_rendered"] >= 50
    assert plain["pipelines"] == 1
    for child, work_s in ((gallery, gallery["gallery_s"]), (plain, plain["dali_s"])):
        assert 0 < child["imports_s"] < child["process_s"]
        assert 0 < work_s < child["process_s"]
    assert report["over_plain_dali"] == pytest.approx(gallery["gallery_s"] / plain["dali_s"],
                                                      abs=0.01)


def test_a_child_that_fails_is_reported_not_raised(tmp_path):
    report = _child("plain", str(tmp_path / "missing.npz"))
    assert set(report) == {"error"}
    assert report["error"].startswith("plain child exited 1: FileNotFoundError")


@pytest.mark.slow
def test_the_very_first_page_traces_every_pipeline_in_a_fresh_process():
    """``cold``: an empty cache in a new process. Under four cores no trace worker is started
    ahead and the kernel traces every pipeline; on more, the worker started before the imports
    is taken by the gallery and traces the policies' pipelines, which the kernel loads."""
    report = _child("cold", "cpu", "ahead")
    assert "error" not in report, report
    assert report["operators_rendered"] >= 50 and report["pipelines_traced_in_kernel"] > 0
    worker = report["trace_worker"]
    if worker is None:
        assert report["pipelines_from_cache"] == 0
    else:
        assert worker["taken"] and worker["warm_up"]["error"] is None
        assert report["pipelines_from_cache"] > 0
    assert 0 < report["imports_s"] < report["process_s"]
    assert 0 < report["gallery_s"] < report["process_s"]
