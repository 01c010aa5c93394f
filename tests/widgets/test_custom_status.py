"""A render whose custom Python operator takes a while says so in the builder's status line
before the tiles change; a render over the Python time budget is a render error on its step."""

from __future__ import annotations

import time

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


def test_a_slow_custom_render_shows_that_it_is_rendering():
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
        b.set_draws(32)  # 96 calls: about 9.6 s, allowed, and said so
        assert "runs Python for about 9." in b.live.status.value
        b.set_count(3)
        b.load_preset({"format": "dali-gallery/preset", "version": 1, "seed": 1, "steps": [
            {"op": "custom.test_sleepy", "params": {"pause": 0.1}}] * 2, "output": None})
        settle(b)  # two such steps: about 19 s, refused before DALI runs
        assert isinstance(b.last_error, CustomTimeError) and b.last_error.op == "custom.test_sleepy"
        assert "render failed" in b.live.status.value
    finally:
        b.close()
