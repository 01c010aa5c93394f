"""The gallery bench's plain-DALI floor on the GPU (the lent H100/H200, ``pytest -m gpu``;
skipped elsewhere): replaying what the preview asked of DALI gives the preview's own pixels, for
a chain rendered alone and for the gallery's fused columns, traced and loaded from the cache."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.pipelines.dali_record import recording, replay
from dali_gallery.pipelines.device import gpu_count
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.kept_pipelines import KEPT
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from tests.pipelines.test_dali_record import assert_fused_replay
from tests.support import preset_dict, sample_arrays

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(600),
              pytest.mark.skipif(gpu_count() == 0, reason="needs a GPU that DALI can see")]

CHAIN = [
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "hsv", "params": {"saturation": 1.4}},
    {"op": "noise.gaussian", "params": {"stddev": 12.0}},
]


def _replayed(work):
    got: dict[tuple[int, int], list] = {}
    assert replay(work, lambda k, j, host: got.__setitem__((k, j), host)) > 0
    return got


@pytest.mark.parametrize("source", ["traced", "loaded", "kept"])
def test_a_chain_replayed_in_plain_dali_gives_the_previews_pixels(tmp_path, source):
    """Traced, loaded from the disk cache, or taken built from the kept pipelines (noted
    with the graph it was loaded from, replayed built before the clock)."""
    arrays = sample_arrays(3)
    preset = load(preset_dict(CHAIN, seed=11))
    if source != "traced":
        warm = PreviewEngine("gpu", cache=PipelineCache(tmp_path))
        warm.set_arrays(arrays)
        warm.render(preset, draws=2)
        warm.close()
        if source == "loaded":
            KEPT.clear()
    eng = PreviewEngine("gpu", cache=PipelineCache(tmp_path))
    eng.set_arrays(arrays)
    with recording() as work:
        render = eng.render(preset, draws=2)
    assert (len(work.pipelines), work.runs, work.not_serializable) == (1, 1, 0)
    assert (eng.cache_hits, eng.kept_hits) == {"traced": (0, 0), "loaded": (1, 0),
                                                "kept": (0, 1)}[source]
    assert work.pipelines[0].prebuilt == (source == "kept")
    images = _replayed(work)[0, 0][0]
    assert len(images) == len(render.images) == 6
    for mine, k in zip(render.images, range(len(images)), strict=True):
        np.testing.assert_array_equal(mine, np.array(images[k]))
    eng.close()


def test_the_fused_gallery_columns_replayed_give_the_previews_pixels(tmp_path):
    assert_fused_replay("gpu", tmp_path)
