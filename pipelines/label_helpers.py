"""Graph helpers that move labels with the pixels, copied into the generated modules like
:mod:`pipelines.graph_helpers` (the preview and the training code run the same functions).

Labels in the graph: ``boxes`` float32 (N, 4) left, top, right, bottom relative to the image
(0..1, as ``fn.readers.coco(ltrb=True, ratio=True)`` gives them), ``classes`` int32 (N,),
``keypoints`` float32 (N, K, 3): x, y relative and the COCO visibility, and ``masks`` uint8
(H, W, 1) category maps at the image's size. Matrices are forward maps in pixel coordinates
(input -> output), which the catalog's label rules state (:mod:`pipelines.labels`).
"""

from __future__ import annotations

import numpy as np
from nvidia.dali import fn, types

from .graph_helpers import _node


def _wh(images):
    """Per-sample (width, height) of images, float32."""
    shape = images.shape(dtype=types.FLOAT)
    return fn.stack(shape[1], shape[0])


def _move_points(points, m, before, after, homography):
    """(P, 2) points relative to ``before`` moved by the pixel matrix ``m``, relative to
    ``after``."""
    px = points * _wh(before)
    if homography:
        px = fn.coord_transform(px, MT=m[0:2, :]) / fn.coord_transform(px, MT=m[2:3, :])
    else:
        px = fn.coord_transform(px, MT=m)
    return px / _wh(after)


def _move_labels(boxes, keypoints, m, before, after, homography=False):
    """Boxes become the tight box of their four moved corners; keypoints move as points."""
    left, top, right, bottom = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    corners = fn.stack(fn.stack(left, top, axis=1), fn.stack(right, top, axis=1),
                       fn.stack(left, bottom, axis=1), fn.stack(right, bottom, axis=1), axis=1)
    moved = _move_points(fn.reshape(corners, shape=[-1, 2]), m, before, after, homography)
    moved = fn.reshape(moved, shape=[-1, 4, 2])
    boxes = fn.cat(fn.reductions.min(moved, axes=[1]), fn.reductions.max(moved, axes=[1]),
                   axis=1)
    xy = keypoints[:, :, 0:2]
    points = _move_points(fn.reshape(xy, shape=[-1, 2]), m, before, after, homography)
    points = fn.reshape(points, shape=xy.shape())
    return boxes, fn.cat(points, keypoints[:, :, 2:3], axis=2)


def _flip_labels(boxes, keypoints, horizontal, vertical):
    """Mirror boxes (``fn.bb_flip``) and keypoints (``fn.coord_flip``) in relative coordinates."""
    boxes = fn.bb_flip(boxes, ltrb=True, horizontal=horizontal, vertical=vertical)
    xy = keypoints[:, :, 0:2]
    points = fn.coord_flip(fn.reshape(xy, shape=[-1, 2]), layout="xy", flip_x=horizontal,
                           flip_y=vertical)
    points = fn.reshape(points, shape=xy.shape())
    return boxes, fn.cat(points, keypoints[:, :, 2:3], axis=2)


def _warp_mask(masks, m, after, homography=False):
    """A category map through the same matrix, nearest neighbour, at the new image's size."""
    shape = after.shape(dtype=types.FLOAT)
    size = fn.stack(shape[0], shape[1])
    if homography:
        return fn.experimental.warp_perspective(masks, matrix=m, size=size, inverse_map=False,
                                                interp_type=types.INTERP_NN, fill_value=[0])
    return fn.warp_affine(masks, matrix=m, size=size, inverse_map=False,
                          interp_type=types.INTERP_NN, fill_value=0)


def _keep_boxes(boxes, classes, keypoints, min_kept):
    """NumPy, per sample: clip boxes to the image; drop those keeping less than ``min_kept`` of
    their area (with their keypoints). Also returns each input box's kept fraction."""
    clipped = np.clip(boxes, 0.0, 1.0)
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    inside = (clipped[:, 2] - clipped[:, 0]) * (clipped[:, 3] - clipped[:, 1])
    kept = np.where(area > 0, inside / np.maximum(area, 1e-12), 0.0).astype(np.float32)
    keep = kept >= min_kept
    return clipped[keep], classes[keep], keypoints[keep], kept


def _clip_labels(boxes, classes, keypoints, min_kept):
    """:func:`_keep_boxes` in the graph (a Python step on the CPU: DALI has no operator that
    drops rows); returns boxes, classes, keypoints and the kept fractions."""
    return fn.python_function(
        boxes, classes, keypoints, num_outputs=4, device="cpu",
        function=lambda b, c, k: _keep_boxes(b, c, k, min_kept))


def _rotate_matrix(before, after, angle):
    """``fn.rotate``'s forward map: about the input's centre, onto the output's centre
    (counter-clockwise as seen, so clockwise in y-down coordinates)."""
    return fn.transforms.combine(
        fn.transforms.translation(offset=-0.5 * _wh(before)),
        fn.transforms.rotation(angle=-angle),
        fn.transforms.translation(offset=0.5 * _wh(after)))


def _scale_matrix(before, after):
    """A resize's forward map: the whole input onto the whole output."""
    return fn.transforms.scale(scale=_wh(after) / _wh(before))


def _shift_matrix(before, after, pos_x, pos_y):
    """A window or canvas placed at relative position (pos_x, pos_y): ``fn.crop`` (the output
    is a window of the input) and ``fn.paste`` (the input is placed in a larger canvas) both
    put the input's origin at pos * (output size - input size)."""
    offset = fn.stack(_node(pos_x), _node(pos_y)) * (_wh(after) - _wh(before))
    return fn.transforms.translation(offset=offset)


def _resized_crop(images, size, area, aspect, antialias, seed):
    """``fn.random_resized_crop`` with its window drawn in the open (``fn.random_crop_generator``)
    so labels can follow: the crop resized to ``size`` x ``size``, and its pixel matrix."""
    anchor, shape = fn.random_crop_generator(images.shape(), random_area=area,
                                             random_aspect_ratio=aspect, seed=seed)
    window = fn.slice(images, start=anchor, shape=shape, axes=[0, 1])
    out = fn.resize(window, size=[size, size], antialias=antialias)
    origin = fn.cast(fn.stack(anchor[1], anchor[0]), dtype=types.FLOAT)
    extent = fn.cast(fn.stack(shape[1], shape[0]), dtype=types.FLOAT)
    m = fn.transforms.combine(fn.transforms.translation(offset=-origin),
                              fn.transforms.scale(scale=float(size) / extent))
    return out, m


HELPERS = ("_wh", "_move_points", "_move_labels", "_flip_labels", "_warp_mask", "_keep_boxes",
           "_clip_labels", "_rotate_matrix", "_scale_matrix", "_shift_matrix", "_resized_crop")
DEPS = {"_move_points": ("_wh",), "_move_labels": ("_move_points", "_wh"),
        "_clip_labels": ("_keep_boxes",), "_rotate_matrix": ("_wh",), "_scale_matrix": ("_wh",),
        "_shift_matrix": ("_wh", "_node")}
"""The helpers (in the order modules define them) and what each calls."""
