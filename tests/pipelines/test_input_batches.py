"""The engine feeds DALI batches made once per image set: never stale, never the wrong picks."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.pipelines.input_batches import InputBatches
from dali_gallery.pipelines.label_render import SampleLabels
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load
from tests.support import cpu_engine, preset_dict, sample_arrays

IDENTITY = load(preset_dict([{"op": "brightness", "params": {"brightness": 1.0}}]))
FLIP = load(preset_dict([{"op": "flip", "params": {"horizontal": True}}]))


def labels(left: float, n: int) -> list[SampleLabels]:
    box = np.array([[left, 0.1, left + 0.2, 0.3]], np.float32)
    return [SampleLabels(box, np.array([k + 1], np.int32)) for k in range(n)]


@pytest.fixture(scope="module")
def arrays():
    return sample_arrays(3, max_side=64)


def test_batches_are_made_once_per_picks_and_batch(arrays):
    memo = InputBatches()
    first = memo.feeds(arrays, None, None, 6)
    assert memo.feeds(arrays, None, None, 6) is first
    assert memo.feeds(arrays, None, (0,), 2) is not first
    assert len(first["images"]) == 6
    np.testing.assert_array_equal(np.asarray(first["images"][4]), arrays[1])
    memo.clear()
    assert memo.feeds(arrays, None, None, 6) is not first


def test_new_images_or_labels_are_fed_not_the_old_batches(arrays):
    engine = cpu_engine(arrays, PipelineCache(None))
    before = engine.render(IDENTITY)
    for a, b in zip(before.images, arrays, strict=True):
        np.testing.assert_array_equal(a, b)
    flipped = [np.ascontiguousarray(a[:, ::-1]) for a in arrays]
    engine.set_arrays(flipped)
    for a, b in zip(engine.render(IDENTITY).images, flipped, strict=True):
        np.testing.assert_array_equal(a, b)
    engine.set_labels(labels(0.1, 3))
    moved = engine.render(FLIP).labels
    np.testing.assert_allclose(moved[0].labels.boxes, [[0.7, 0.1, 0.9, 0.3]], atol=1e-6)
    engine.set_labels(labels(0.5, 3))  # the same shapes: only the values tell them apart
    moved = engine.render(FLIP).labels
    np.testing.assert_allclose(moved[2].labels.boxes, [[0.3, 0.1, 0.5, 0.3]], atol=1e-6)
    assert [int(m.labels.classes[0]) for m in moved] == [1, 2, 3]
    picked = engine.render(FLIP, images=[2]).labels
    assert len(picked) == 1 and int(picked[0].labels.classes[0]) == 3
    engine.close()
