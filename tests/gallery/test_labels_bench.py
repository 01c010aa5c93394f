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
    floor = cpu["plain_dali"]  # the same labels carried by plain DALI, timed alongside
    assert floor["without_labels_ms"] > 0
    for key in ("with_labels_ratio", "boxes_keypoints_only_ratio"):
        assert 0.5 < floor[key] < 10, floor
    assert cpu["over_plain_dali"]["with_labels"] == pytest.approx(
        cpu["ratio"] / floor["with_labels_ratio"], abs=0.05)


def test_the_plain_dali_floor_moves_every_point_and_mask_with_the_images():
    import numpy as np

    from dali_gallery.gallery.bench_inputs import bench_images
    from dali_gallery.gallery.bench_reference import labelled_pipeline
    from dali_gallery.gallery.labels_bench import _plain_feeds, _plain_ms, synthetic_labels

    images = bench_images(96, 2)
    labels = synthetic_labels(images)
    pipe = labelled_pipeline(2, "cpu", 1, True, True)
    assert _plain_ms(pipe, _plain_feeds(images, labels, True, True)) > 0
    pipe.feed_input("images", images)
    pipe.feed_input("shape", [np.array(a.shape, np.int64) for a in images])
    pipe.feed_input("wh", [np.array(a.shape[1::-1], np.int32) for a in images])
    points = [np.random.default_rng(k).uniform(0, 1, (12, 2)).astype(np.float32)
              for k in range(2)]
    pipe.feed_input("points", points)
    pipe.feed_input("masks", [s.mask for s in labels])
    out = pipe.run()
    pixels, moved, masks = out[0], out[-2], out[-1]
    for j in range(2):
        assert np.array(pixels[j]).shape == (224, 224, 3)
        assert np.array(masks[j]).shape == (224, 224, 1)  # the masks follow the images' size
        assert np.array(moved[j]).shape == (12, 2)  # every point moved, none dropped
