"""``dali-gallery bench --only detection``: the exported detection pipeline against the same
chain written by hand from DALI's detection example. Run with the export's seeds, the two must
give the same images bit for bit, the same labels and the same boxes (within float32 rounding):
the export is checked against plain DALI, not against itself."""

from __future__ import annotations

from dali_gallery.gallery.detection_bench import bench_detection


def test_the_export_equals_dali_s_own_detection_pipeline_and_is_timed_beside_it():
    out = bench_detection("cpu", quick=True)
    assert out["images_identical"] and out["images_max_abs_diff"] == 0.0
    assert out["labels_identical"] and out["boxes_within_1e-5"]
    assert out["exported_images_per_s"] > 0 and out["hand_written_images_per_s"] > 0
    assert out["exported_over_hand_written"] > 0 and out["target"] == ">= 0.95"
    tv = out["torchvision_v2"]
    assert "images_per_s" in tv or "skipped" in tv
