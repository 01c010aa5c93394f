"""Masks at another size than their images are resized once, when labels are set, by DALI."""

from __future__ import annotations

import numpy as np

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.label_render import SampleLabels
from dali_gallery.pipelines.mask_fit import fit_masks
from dali_gallery.pipelines.preset import Preset, Step


def _plain_resize(mask: np.ndarray, h: int, w: int) -> np.ndarray:
    """DALI's nearest-neighbour resize as its docs write it (no dali-gallery code)."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def plain():
        m = fn.external_source(name="m", layout="HWC")
        return fn.resize(m, size=[h, w], interp_type=types.INTERP_NN, antialias=False)

    pipe = plain()
    pipe.build()
    pipe.feed_input("m", [mask])
    return np.array(pipe.run()[0][0])


def _labels(h: int, w: int) -> SampleLabels:
    mask = np.zeros((h, w, 1), np.uint8)
    mask[h // 4: h // 2, w // 3: w - 7] = 3
    mask[h - 9:, :11] = 200
    return SampleLabels(np.array([[0.3, 0.25, 0.9, 0.5]]), np.array([3]), mask=mask)


def test_a_mask_at_the_files_size_is_resized_to_its_image_once_and_fed_as_is():
    small = np.zeros((61, 97, 3), np.uint8)  # decoded smaller than the file (odd sizes)
    same = np.zeros((40, 50, 3), np.uint8)
    big, fits = _labels(183, 290), _labels(40, 50)
    out = fit_masks([small.shape, same.shape], [big, fits])
    assert np.array_equal(out[0].mask, _plain_resize(big.mask, 61, 97))
    assert out[1] is fits  # already its image's size: untouched
    assert np.array_equal(out[0].boxes, big.boxes)
    e = PreviewEngine("cpu", num_threads=1)
    try:
        e.set_arrays([small, same])
        e.set_labels([big, fits])
        assert [s.mask.shape for s in e.labels] == [(61, 97, 1), (40, 50, 1)]
        # a pixel step leaves the masks as they were fed
        r = e.render(Preset([Step("brightness", CATALOG["brightness"].defaults())], seed=1))
        assert np.array_equal(r.labels[0].labels.mask, out[0].mask)
        assert np.array_equal(r.labels[1].labels.mask, fits.mask)
    finally:
        e.close()


def test_labels_without_masks_pass_through_and_an_empty_mask_marks_nothing():
    labels = [SampleLabels(np.zeros((0, 4)), np.zeros(0))]
    assert fit_masks([(8, 8, 3)], labels) == labels
    empty = SampleLabels(np.zeros((0, 4)), np.zeros(0), mask=np.zeros((0, 0, 1), np.uint8))
    [out] = fit_masks([(6, 9)], [empty])
    assert out.mask.shape == (6, 9, 1) and not out.mask.any()
