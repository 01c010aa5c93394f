"""Keypoints beside ``fn.readers.coco``'s boxes: the reader has no keypoints output, so the
exported module looks them up by the image id it does output.

:func:`keypoint_table` reads the annotations file the way DALI 2.4's ``coco_loader.cc`` keeps
annotations (document order per image; a box under ``size_threshold`` px wide or high is
skipped; crowds kept), and computes each keypoint as :func:`pipelines.annotations.load_coco`
does (float32, relative to the image entry's width and height), so the preview's keypoints and
training's are the same bits. :func:`keypoints_lookup` is the ``fn.python_function`` that
gives each sample its table entry, after checking that the reader's labels are the table's:
a file the two read differently is refused by image id, never misaligned.

The functions are embedded verbatim in the exported module (:data:`EMBEDDED`, no type hints,
like :mod:`pipelines.shards`), and the tests call them here.
"""

from __future__ import annotations

import json

import numpy as np

from .label_render import MASK_ID_MAX


def unfit_for_masks(category_ids):
    """The category ids the uint8 masks cannot hold (1 to MASK_ID_MAX; 0 is no object),
    sorted: the preview turns masks off for them, training refuses them."""
    return sorted(c for c in category_ids if not 0 < c <= MASK_ID_MAX)


def keypoint_table(annotations_file, masks=False, size_threshold=0.1):
    """{image id: (category ids int32 (N,), keypoints float32 (N, K, 3))} of the boxes
    fn.readers.coco keeps, in its order: x and y relative to the image entry's width and
    height, then the COCO visibility; K is the most keypoint names of the image's
    categories (0 without keypoints). masks=True also checks that every category id fits
    the uint8 masks (1 to 255); size_threshold is the reader's (its default)."""
    with open(annotations_file, encoding="utf-8") as f:
        doc = json.load(f)
    names = {c["id"]: len(c.get("keypoints") or ()) for c in doc["categories"]}
    wide = unfit_for_masks(names)
    if masks and wide:
        raise ValueError(
            f"{annotations_file}: category ids {wide[:5]} do not fit the uint8 masks; "
            "pixel masks need category ids 1 to 255"
        )
    sizes, seen = {}, set()
    for image in doc["images"]:
        if image["id"] in seen:
            raise ValueError(
                f"{annotations_file}: image id {image['id']} is used twice; each image "
                "needs its own id (the keypoints are looked up by it)"
            )
        seen.add(image["id"])
        sizes[image["id"]] = (image["width"], image["height"])
    kept = {image_id: [] for image_id in sizes}
    threshold = np.float32(size_threshold)
    for ann in doc.get("annotations", []):
        w, h = np.array(ann["bbox"], np.float64).astype(np.float32)[2:4]
        if ann.get("image_id") in kept and w >= threshold and h >= threshold:
            kept[ann["image_id"]].append(ann)
    table = {}
    for image_id, anns in kept.items():
        width, height = sizes[image_id]
        k = max((names.get(a["category_id"], 0) for a in anns), default=0)
        points = np.zeros((len(anns), k, 3), np.float32)
        for row, ann in enumerate(anns):
            values = ann.get("keypoints") or []
            n = min(len(values) // 3, k)
            if n:
                xs = np.array(values[0 : 3 * n : 3], np.float64).astype(np.float32)
                ys = np.array(values[1 : 3 * n : 3], np.float64).astype(np.float32)
                points[row, :n, 0] = xs / np.float32(width)
                points[row, :n, 1] = ys / np.float32(height)
                points[row, :n, 2] = values[2 : 3 * n : 3]
        classes = np.array([a["category_id"] for a in anns], np.int32)
        table[image_id] = (classes, points)
    return table


def keypoints_lookup(table):
    """The fn.python_function giving a sample (its labels, its image id) its keypoints;
    ValueError when the reader's labels are not the table's (they would misalign).
    ``lookup.batch`` does a whole batch in one call (``batch_processing=True``)."""

    def lookup(classes, image_id):
        image_id = int(np.asarray(image_id).reshape(-1)[0])
        if image_id not in table:
            raise ValueError(f"image id {image_id} is not in the annotations file")
        expected, points = table[image_id]
        if not np.array_equal(np.asarray(classes).reshape(-1), expected):
            raise ValueError(
                f"image id {image_id}: the reader gave labels "
                f"{np.asarray(classes).reshape(-1).tolist()[:10]}, the annotations "
                f"file {expected.tolist()[:10]}; its keypoints cannot be aligned with "
                "the boxes (give the annotations file the reader reads)"
            )
        return points

    def batch(classes, image_ids):
        return [lookup(classes[k], image_ids[k]) for k in range(len(classes))]

    lookup.batch = batch
    return lookup


def keypoint_count(table):
    """The most keypoints any box of the file has (0: the pipeline needs no lookup)."""
    return max((points.shape[1] for _, points in table.values()), default=0)


EMBEDDED = (unfit_for_masks, keypoint_table, keypoints_lookup, keypoint_count)
"""Functions the exported module with labels carries verbatim."""
