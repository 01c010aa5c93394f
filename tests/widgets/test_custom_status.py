"""A render whose custom Python operator takes a while says so in the builder's status line
before the tiles change; a render over the Python time budget is a render error on its step."""

from __future__ import annotations

import time

from dali_gallery.pipelines import custom_budget
from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.custom_budget import CustomTimeError
from dali_gallery.pipelines.params import Param
from tests.widgets.conftest import make_builder, settle

PAUSE = (Param("pause", "float", 0.1, "Seconds per call", bounds=(0, 1), slider=(0, 1),
               step=0.01, runtime=True),)


def _sleepy(image, pause):
    time.sleep(float(pause))
    return image


def test_a_slow_custom_render_shows_that_it_is_rendering(monkeypatch):
    """The probe: a sleeping function froze the preview with no sign of life."""
    catalog = Catalog(list(CATALOG.values()))
    custom_op("custom.test_sleepy", "Sleeps.", params=PAUSE, catalog=catalog)(_sleepy)
    b = make_builder(catalog=catalog)  # 3 images x 2 draws: 6 calls of about 0.1 s
    try:
        settle(b)
        b.add_step("custom.test_sleepy")
        status = b.live.status.value
        assert status.startswith("rendering&hellip; step 0 (custom.test_sleepy) runs Python "
                                 "for about 0.6 s"), status
        settle(b)
        assert b.last_error is None and b.last_result is not None
        assert "3&times;2 in" in b.live.status.value
        monkeypatch.setattr(custom_budget, "CUSTOM_SECONDS", 1.0)
        builds = b.renderer.engine.builds
        b.add_step("custom.test_sleepy")  # two such steps: about 1.2 s, over the budget
        settle(b)
        error = b.last_error
        assert isinstance(error, CustomTimeError) and error.op == "custom.test_sleepy"
        assert b.renderer.engine.builds == builds  # refused before DALI built anything
        assert len(b.preset.steps) == 2  # the chain is kept
        assert "render failed" in b.live.status.value
    finally:
        b.close()
