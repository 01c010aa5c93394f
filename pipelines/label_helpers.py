"""Graph helpers that move labels with the pixels, copied into the generated modules like
:mod:`pipelines.graph_helpers` (the preview and the training code run the same functions).

Labels in the graph: ``boxes`` float32 (N, 4) left, top, right, bottom relative to the image
(0..1, as ``fn.readers.coco(ltrb=True, ratio=True)`` gives them), ``classes`` int32 (N,),
``keypoints`` float32 (N, K, 3): x, y relative and the COCO visibility, and ``masks`` uint8
(H, W, 1) category maps at the image's size. Matrices are forward maps in pixel coordinates
(input -> output), which the catalog's label rules state (:mod:`pipelines.labels`), computed
by DALI's ``fn.transforms``; points move through them in one NumPy step per moving operator
(:func:`_moved`), masks through DALI's warps with nearest neighbour.
"""

from __future__ import annotations

import numpy as np
import nvidia.dali.math as dmath
from nvidia.dali import fn, types

from .graph_helpers import _node


def _wh(images):
    """Per-sample (width, height) of images, float32."""
    shape = images.shape(dtype=types.FLOAT)
    return fn.stack(shape[1], shape[0])


def _moved(boxes, classes, keypoints, m, wh_in, wh_out, min_kept):
    """NumPy, per sample: boxes and keypoints (relative to the input) through the pixel
    matrix ``m`` (2x3, or 3x3 for a homography), relative to the output; a box becomes
    the tight box of its four moved corners, is clipped to the image, and is dropped
    with its keypoints when it keeps less than ``min_kept`` of its area. Also returns
    each box's kept fraction."""
    m = np.asarray(m, np.float64).reshape(-1, 3)

    def move(points):
        px = points.reshape(-1, 2).astype(np.float64) * wh_in
        out = px @ m[:2, :2].T + m[:2, 2]
        if len(m) == 3:
            out = out / (px @ m[2, :2] + m[2, 2])[:, None]
        return (out / wh_out).astype(np.float32).reshape(points.shape)

    corners = move(boxes[:, [0, 1, 2, 1, 0, 3, 2, 3]].reshape(-1, 4, 2))
    boxes = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1)
    keypoints = np.concatenate([move(keypoints[:, :, :2]), keypoints[:, :, 2:]], axis=2)
    clipped = np.clip(boxes, 0.0, 1.0)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    inside = (clipped[:, 2] - clipped[:, 0]) * (clipped[:, 3] - clipped[:, 1])
    kept = np.where(area > 0, inside / np.maximum(area, 1e-12), 0.0).astype(np.float32)
    keep = kept >= min_kept
    return clipped[keep], classes[keep], keypoints[keep], kept


def _move_labels(boxes, classes, keypoints, m, wh_in, wh_out, min_kept):
    """:func:`_moved` in the graph (``wh_in`` / ``wh_out``: the images' (width, height)
    before and after, ``_wh``): the matrix and the sizes come from DALI, the point
    arithmetic runs in one Python step on the CPU (DALI has no operator that drops rows,
    and its shape inference fails on batches without any box); returns boxes, classes,
    keypoints and the kept fractions. One call per batch (``batch_processing``), not per
    sample: the Python step's fixed cost is paid once."""

    def batch(*columns):  # no zip(strict=...): autograph's zip has no such argument
        moved = [
            _moved(*[c[i] for c in columns], min_kept) for i in range(len(columns[0]))
        ]
        return tuple([sample[k] for sample in moved] for k in range(4))

    return fn.python_function(
        boxes,
        classes,
        keypoints,
        m,
        wh_in,
        wh_out,
        num_outputs=4,
        device="cpu",
        batch_processing=True,
        function=batch,
    )


def _flip_labels(boxes, keypoints, horizontal, vertical):
    """Mirror boxes (``fn.bb_flip``) and keypoints (x -> 1 - x, y -> 1 - y) in relative
    coordinates."""
    boxes = fn.bb_flip(
        boxes,
        ltrb=True,
        horizontal=fn.cast(_node(horizontal), dtype=types.INT32),
        vertical=fn.cast(_node(vertical), dtype=types.INT32),
    )
    h = fn.cast(_node(horizontal), dtype=types.FLOAT)
    v = fn.cast(_node(vertical), dtype=types.FLOAT)
    one = types.Constant(1.0, dtype=types.FLOAT)
    zero = types.Constant(0.0, dtype=types.FLOAT)
    scale = fn.stack(1.0 - 2.0 * h, 1.0 - 2.0 * v, one)
    return boxes, keypoints * scale + fn.stack(h, v, zero)


def _warp_mask(masks, m, after, homography=False):
    """A category map through the same matrix, nearest neighbour, at the new image's
    size."""
    shape = after.shape(dtype=types.FLOAT)
    size = fn.stack(shape[0], shape[1])
    if homography:
        return fn.experimental.warp_perspective(
            masks,
            matrix=m,
            size=size,
            inverse_map=False,
            interp_type=types.INTERP_NN,
            fill_value=[0],
        )
    return fn.warp_affine(
        masks,
        matrix=m,
        size=size,
        inverse_map=False,
        interp_type=types.INTERP_NN,
        fill_value=0,
    )


def _rotate_matrix(before, after, angle):
    """``fn.rotate``'s forward map: about the input's centre, onto the output's centre
    (counter-clockwise as seen, so clockwise in y-down coordinates)."""
    return fn.transforms.combine(
        fn.transforms.translation(offset=-0.5 * _wh(before)),
        fn.transforms.rotation(angle=-angle),
        fn.transforms.translation(offset=0.5 * _wh(after)),
    )


def _scale_matrix(before, after):
    """A resize's forward map: the whole input onto the whole output."""
    return fn.transforms.scale(scale=_wh(after) / _wh(before))


def _shift_matrix(before, after, pos_x, pos_y):
    """A window or canvas placed at relative position (pos_x, pos_y): ``fn.crop`` (the
    output is a window of the input) and ``fn.paste`` (the input is placed in a larger
    canvas) both put the input's origin at pos * (output size - input size)."""
    offset = fn.stack(_node(pos_x), _node(pos_y)) * (_wh(after) - _wh(before))
    return fn.transforms.translation(offset=offset)


def _resized_crop(images, size, area, aspect, antialias, seed):
    """``fn.random_resized_crop`` with its window drawn in the open
    (``fn.random_crop_generator``) so labels can follow: the crop resized to ``size`` x
    ``size``, and its pixel matrix."""
    anchor, shape = fn.random_crop_generator(
        images.shape(), random_area=area, random_aspect_ratio=aspect, seed=seed
    )
    start = fn.cast(anchor, dtype=types.FLOAT)  # (y, x): the layout's order
    end = start + fn.cast(shape, dtype=types.FLOAT)
    out = fn.resize(  # the window resized in one step (no copy of the window)
        images, size=[size, size], roi_start=start, roi_end=end, antialias=antialias
    )
    origin = fn.stack(start[1], start[0])
    extent = fn.cast(fn.stack(shape[1], shape[0]), dtype=types.FLOAT)
    m = fn.transforms.combine(
        fn.transforms.translation(offset=-origin),
        fn.transforms.scale(scale=float(size) / extent),
    )
    return out, m


def _bbox_crop(images, scaling, aspect, min_iou, seed):
    """``fn.random_bbox_crop``'s window cut with ``fn.slice``, in a chain without
    labels: with no boxes to overlap, any window of the declared scale and aspect (with
    labels, :func:`_bbox_crop_labels`)."""
    anchor, shape = fn.random_bbox_crop(
        types.Constant(np.zeros((0, 4), np.float32)),
        bbox_layout="xyXY",
        thresholds=[min_iou],
        scaling=scaling,
        aspect_ratio=aspect,
        seed=seed,
    )[:2]
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
):
    """:func:`_bbox_crop` with DALI's own box outputs, and no Python step: the
    window is cut from the images (and masks) with ``fn.slice``, and
    ``fn.random_bbox_crop`` crops the boxes to it, makes them relative to it and drops
    those keeping less than ``min_kept`` of their area (``bbox_prune_threshold``).
    The classes and the keypoints (their float32 bits as int32) ride along as the
    boxes' label columns, so they drop with them; the keypoints then move into the
    window. Returns the images, boxes, classes, keypoints, the kept fraction of each
    box that entered, and the masks when given."""
    k = keypoints.shape(dtype=types.INT32)
    bits = fn.reinterpret(keypoints, dtype=types.INT32)
    columns = fn.cat(
        fn.expand_dims(classes, axes=[1]),
        fn.reshape(bits, shape=fn.stack(k[0], k[1] * 3)),
        axis=1,
    )
    anchor, shape, out_boxes, out_columns = fn.random_bbox_crop(
        boxes,
        columns,
        bbox_layout="xyXY",
        thresholds=[min_iou],
        scaling=scaling,
        aspect_ratio=aspect,
        bbox_prune_threshold=min_kept,
        seed=seed,
    )

    def cut(x):
        return fn.slice(
            x,
            anchor,
            shape,
            normalized_anchor=True,
            normalized_shape=True,
            axis_names="WH",
        )

    n = out_columns.shape(dtype=types.INT32)[0]
    points = fn.reinterpret(out_columns[:, 1:], dtype=types.FLOAT)
    points = fn.reshape(points, shape=fn.stack(n, k[1], 3))
    one = types.Constant(1.0, dtype=types.FLOAT)
    zero = types.Constant(0.0, dtype=types.FLOAT)
    scale = fn.stack(1.0 / shape[0], 1.0 / shape[1], one)
    points = points * scale - fn.stack(anchor[0], anchor[1], zero) * scale
    end = anchor + shape
    width = dmath.min(boxes[:, 2], end[0]) - dmath.max(boxes[:, 0], anchor[0])
    height = dmath.min(boxes[:, 3], end[1]) - dmath.max(boxes[:, 1], anchor[1])
    inside = dmath.max(width, 0.0) * dmath.max(height, 0.0)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    kept = inside / dmath.max(area, 1e-12)
    out = (cut(images), out_boxes, out_columns[:, 0], points, kept)
    return out if masks is None else (*out, cut(masks))


HELPERS = (
    "_wh",
    "_moved",
    "_move_labels",
    "_flip_labels",
    "_warp_mask",
    "_rotate_matrix",
    "_scale_matrix",
    "_shift_matrix",
    "_resized_crop",
    "_bbox_crop",
    "_bbox_crop_labels",
)
DEPS = {
    "_move_labels": ("_moved",),
    "_flip_labels": ("_node",),
    "_rotate_matrix": ("_wh",),
    "_scale_matrix": ("_wh",),
    "_shift_matrix": ("_wh", "_node"),
}
"""The helpers (in the order modules define them) and what each calls."""
