"""Graph helpers for the crops that draw their window in the open, copied into the generated
modules like :mod:`pipelines.label_helpers`: ``fn.random_resized_crop``'s window from DALI's
crop generator, and ``fn.random_bbox_crop``'s window cut with ``fn.slice`` (one pixel or more
each way) with the boxes, classes and keypoints it keeps.
"""

from __future__ import annotations

import numpy as np
import nvidia.dali.math as dmath
from nvidia.dali import fn, types

from .label_helpers import _wh


def _resized_crop(images, size, area, aspect, antialias, seed, source=None, masks=None):
    """``fn.random_resized_crop`` with its window drawn in the open
    (``fn.random_crop_generator``) so labels can follow: the crop resized to ``size`` x
    ``size``, and the window (top, left, height, width: frame ``window``). ``source``:
    the images' shape read on the host (None: from the images). With ``masks``, also the
    masks' same window resized with nearest neighbour (one operator, where a warp through
    the window's pixel matrix took ten)."""
    anchor, shape = fn.random_crop_generator(
        images.shape() if source is None else source,
        random_area=area,
        random_aspect_ratio=aspect,
        seed=seed,
    )
    start = fn.cast(anchor, dtype=types.FLOAT)  # (y, x): the layout's order
    extent = fn.cast(shape, dtype=types.FLOAT)
    end = start + extent
    out = fn.resize(  # the window resized in one step (no copy of the window)
        images,
        size=[size, size],
        roi_start=start,
        roi_end=end,
        antialias=antialias,
    )
    window = fn.cat(start, extent)
    if masks is None:
        return out, window
    cut = fn.resize(
        masks,
        size=[size, size],
        roi_start=start,
        roi_end=end,
        antialias=False,
        interp_type=types.INTERP_NN,
    )
    return out, window, cut


def _pixel_window(images, anchor, shape, source=None):
    """DALI's relative crop window (``anchor``: x, y; ``shape``: w, h) as ``fn.slice``
    cuts at least one pixel of each side. ``fn.random_bbox_crop`` draws the width from
    ``scaling`` and the height from the relative aspect ratio (rescaling a side over 1),
    so a small scale with a large aspect (0.05 and 4 of a 64 px image: 0.8 rows) or a
    side of an extreme image (1 px wide) is under a pixel; ``fn.slice`` rounds its start
    and end to one pixel, and later operators crash on the empty image (blur and
    laplacian segfault). Such a side is widened to 1.001 px (the margin covers slice's
    rounding), moved back inside the image when that passes its far edge: a geometric
    guarantee, no parameter changes. Any other window is DALI's, bit for bit. Seven
    small operators: ``source`` (the images' shape read on the host: the JPEG headers,
    the fed batch) spares them waiting for the GPU decoder; None reads the images'."""
    wh = _wh(images) if source is None else fn.cast(source, dtype=types.FLOAT)[1::-1]
    least = dmath.min(1.001 / wh, 1.0)
    shape = dmath.max(shape, least)
    return dmath.min(anchor, 1.0 - shape), shape


def _bbox_crop(images, scaling, aspect, min_iou, seed, source=None):
    """``fn.random_bbox_crop``'s window cut with ``fn.slice``, in a chain without
    labels: with no boxes to overlap, any window of the declared scale and aspect (with
    labels, :func:`_bbox_crop_labels`), one pixel or more each way
    (:func:`_pixel_window`)."""
    anchor, shape = fn.random_bbox_crop(
        types.Constant(np.zeros((0, 4), np.float32)),
        bbox_layout="xyXY",
        thresholds=[min_iou],
        scaling=scaling,
        aspect_ratio=aspect,
        seed=seed,
    )[:2]
    anchor, shape = _pixel_window(images, anchor, shape, source)
    return fn.slice(
        images,
        anchor,
        shape,
        normalized_anchor=True,
        normalized_shape=True,
        axis_names="WH",
    )


def _bbox_crop_labels(
    images,
    boxes,
    classes,
    keypoints,
    scaling,
    aspect,
    min_iou,
    min_kept,
    seed,
    masks=None,
    source=None,
):
    """:func:`_bbox_crop` with DALI's own box outputs, and no Python step: the
    window is cut from the images (and masks) with ``fn.slice``, and
    ``fn.random_bbox_crop`` crops the boxes to it, makes them relative to it and drops
    those keeping less than ``min_kept`` of their area (``bbox_prune_threshold``).
    The classes and the keypoints (their float32 bits as int32) ride along as the
    boxes' label columns, so they drop with them; the keypoints then move into the
    window. A side under a pixel is widened (:func:`_pixel_window`): the boxes stay
    relative to DALI's window (within the one pixel that side of the cut has), the
    keypoints and kept fractions are the widened window's. Returns the images, boxes,
    classes, keypoints, the kept fraction of each box that entered, and the masks when
    given; ``source`` as :func:`_pixel_window` takes it. Keypoints None (a training
    graph whose file has none, or that does not return them) stay None: the classes
    alone ride along, as in DALI's own detection example, and the dozen operators that
    carry keypoints are not built."""
    labels, width = classes, None
    if keypoints is not None:
        labels, width = _label_columns(classes, keypoints)
    anchor, shape, out_boxes, out_labels = fn.random_bbox_crop(
        boxes,
        labels,
        bbox_layout="xyXY",
        thresholds=[min_iou],
        scaling=scaling,
        aspect_ratio=aspect,
        bbox_prune_threshold=min_kept,
        seed=seed,
    )
    out_classes, points = out_labels, None
    if keypoints is not None:
        out_classes, points = _split_columns(out_labels, width)
    anchor, shape = _pixel_window(images, anchor, shape, source)
    if points is not None:  # into the (widened) window
        one = types.Constant(1.0, dtype=types.FLOAT)
        zero = types.Constant(0.0, dtype=types.FLOAT)
        scale = fn.stack(1.0 / shape[0], 1.0 / shape[1], one)
        points = points * scale - fn.stack(anchor[0], anchor[1], zero) * scale

    def cut(x):
        return fn.slice(
            x,
            anchor,
            shape,
            normalized_anchor=True,
            normalized_shape=True,
            axis_names="WH",
        )

    end = anchor + shape
    width = dmath.min(boxes[:, 2], end[0]) - dmath.max(boxes[:, 0], anchor[0])
    height = dmath.min(boxes[:, 3], end[1]) - dmath.max(boxes[:, 1], anchor[1])
    inside = dmath.max(width, 0.0) * dmath.max(height, 0.0)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    kept = inside / dmath.max(area, 1e-12)
    out = (cut(images), out_boxes, out_classes, points, kept)
    return out if masks is None else (*out, cut(masks))


def _label_columns(classes, keypoints):
    """The classes and the keypoints (their float32 bits as int32) as one int32 row per
    box: ``fn.random_bbox_crop``'s label columns, so a dropped box drops its keypoints
    too; and K, the keypoints per box."""
    k = keypoints.shape(dtype=types.INT32)
    bits = fn.reinterpret(keypoints, dtype=types.INT32)
    columns = fn.cat(
        fn.expand_dims(classes, axes=[1]),
        fn.reshape(bits, shape=fn.stack(k[0], k[1] * 3)),
        axis=1,
    )
    return columns, k[1]


def _split_columns(columns, width):
    """:func:`_label_columns` of the boxes the crop kept, back to their classes and
    keypoints (N, ``width``, 3), still relative to the whole image."""
    n = columns.shape(dtype=types.INT32)[0]
    points = fn.reinterpret(columns[:, 1:], dtype=types.FLOAT)
    return columns[:, 0], fn.reshape(points, shape=fn.stack(n, width, 3))


HELPERS = (
    "_resized_crop",
    "_pixel_window",
    "_bbox_crop",
    "_bbox_crop_labels",
    "_label_columns",
    "_split_columns",
)
DEPS = {
    "_pixel_window": ("_wh",),
    "_bbox_crop": ("_pixel_window", "_wh"),  # one level: list the helpers' own too
    "_bbox_crop_labels": ("_pixel_window", "_wh", "_label_columns", "_split_columns"),
}
"""The helpers (in the order modules define them) and what each calls."""
