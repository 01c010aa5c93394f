"""Graph helpers that move labels with the pixels, copied into the generated modules like
:mod:`pipelines.graph_helpers` (the preview and the training code run the same functions).

Labels in the graph: ``boxes`` float32 (N, 4) left, top, right, bottom relative to the image
(0..1, as ``fn.readers.coco(ltrb=True, ratio=True)`` gives them), ``classes`` int32 (N,),
``keypoints`` float32 (N, K, 3): x, y relative and the COCO visibility, and ``masks`` uint8
(H, W, 1) category maps at the image's size. Matrices are forward maps in pixel coordinates
(input -> output), which the catalog's label rules state (:mod:`pipelines.labels`), computed
by DALI's ``fn.transforms``; points move through them in one NumPy step per moving operator
(:func:`_moved`; a run of them shares one, :mod:`pipelines.label_chain_helpers`), masks
through the step's own call with nearest neighbour where its rule says so, else through
DALI's warps with the pixel matrix (:func:`_warp_mask`). Each small DALI operator
costs a render ~0.1 ms (its own task in DALI's executor), so the label lines use as few as
they can: sizes go to the Python step as DALI gives them, and a rotation's centring is done
there.
"""

from __future__ import annotations

import numpy as np
from nvidia.dali import fn, types
from nvidia.dali.pipeline import do_not_convert

from .graph_helpers import _node


def _wh(images):
    """Per-sample (width, height) of images, float32."""
    return images.shape(dtype=types.FLOAT)[1::-1]  # one slice: fewer operators


def _moved(boxes, classes, keypoints, m, shape_in, shape_out, min_kept, frame="pixels"):
    """NumPy, a whole batch at once (lists, one entry per sample): boxes and keypoints
    (relative to the input) through each sample's ``m``, relative to the output;
    ``shape_in`` / ``shape_out``: the images' shapes, height first. ``frame`` says
    what ``m`` is (a Warp rule's): ``pixels``, a 2x3 matrix (3x3 for a homography) in
    pixel coordinates; ``centres``, a 2x3 map about the image centres (the input's
    centre at the origin, the origin onto the output's centre); ``window``, the
    input's window (top, left, height, width) stretched onto the whole output. A box
    becomes the tight box of its four moved corners, is clipped to the image, and is
    dropped with its keypoints when it keeps less than ``min_kept`` of its area.
    Returns per-sample lists of boxes, classes, keypoints and each box's kept
    fraction. One NumPy pass for the batch, split into samples at the end only (each
    NumPy call costs ~1-2.5 us: per-sample work was most of the time)."""
    wh_in = np.array(shape_in, np.float64)[:, 1::-1]
    wh_out = np.array(shape_out, np.float64)[:, 1::-1]
    m = np.array(m, np.float64).reshape(len(boxes), -1)
    if frame == "window":
        top, left, height, width = m.T
        sx, sy = wh_out[:, 0] / width, wh_out[:, 1] / height
        zero = np.zeros_like(sx)
        m = np.stack([sx, zero, -left * sx, zero, sy, -top * sy], axis=1)
    m = m.reshape(len(m), -1, 3)
    if frame == "centres":  # out = A (p - c_in) + t + c_out
        centre = np.einsum("bij,bj->bi", m[:, :, :2], 0.5 * wh_in)
        t = m[:, :, 2] - centre + 0.5 * wh_out
        m = np.concatenate([m[:, :, :2], t[:, :, None]], axis=2)
    counts = [len(b) for b in boxes]
    rows = np.repeat(np.arange(len(counts)), counts)

    def move(points, at):
        px = points.reshape(-1, 2).astype(np.float64) * wh_in[at]
        out = np.einsum("pij,pj->pi", m[at, :2, :2], px) + m[at, :2, 2]
        if m.shape[1] == 3:
            out = out / (np.einsum("pj,pj->p", px, m[at, 2, :2]) + m[at, 2, 2])[:, None]
        return (out / wh_out[at]).astype(np.float32)

    box = np.concatenate(boxes).reshape(-1, 4)
    corners = move(box[:, [0, 1, 2, 1, 0, 3, 2, 3]], np.repeat(rows, 4))
    corners = corners.reshape(-1, 4, 2)
    box = np.concatenate([corners.min(axis=1), corners.max(axis=1)], axis=1)
    clipped = np.clip(box, 0.0, 1.0)
    area = (box[:, 2] - box[:, 0]) * (box[:, 3] - box[:, 1])
    inside = (clipped[:, 2] - clipped[:, 0]) * (clipped[:, 3] - clipped[:, 1])
    kept = np.where(area > 0, inside / np.maximum(area, 1e-12), 0.0).astype(np.float32)
    sizes = [k.size // 3 for k in keypoints]
    flat = np.concatenate([k.reshape(-1, 3) for k in keypoints])
    moved = move(flat[:, :2], np.repeat(np.arange(len(sizes)), sizes))
    flat = np.concatenate([moved, flat[:, 2:].astype(np.float32)], axis=1)
    keep = kept >= min_kept
    starts = np.concatenate([[0], np.cumsum(counts)]).tolist()
    left = np.bincount(rows[keep], minlength=len(counts))
    ends = np.concatenate([[0], np.cumsum(left)]).tolist()
    out_boxes, out_classes = clipped[keep], np.concatenate(classes)[keep]
    point_shapes = {k.shape[1:] if k.ndim == 3 else None for k in keypoints}
    points = None  # the usual batch: (N, K, 3) with the same K for every image
    if len(point_shapes) == 1 and None not in point_shapes:
        points = flat.reshape(len(box), *point_shapes.pop())[keep]
    point_starts = np.concatenate([[0], np.cumsum(sizes)]).tolist()
    out = ([], [], [], [])
    for s, k in enumerate(keypoints):
        a, b, first, last = ends[s], ends[s + 1], starts[s], starts[s + 1]
        out[0].append(out_boxes[a:b])
        out[1].append(out_classes[a:b])
        if points is None:
            pts = flat[point_starts[s] : point_starts[s + 1]].reshape(k.shape)
            out[2].append(pts[keep[first:last]])
        else:
            out[2].append(points[a:b])
        out[3].append(kept[first:last])
    return out


@do_not_convert
def _moved_batch(min_kept, frame):
    """:func:`_moved` as DALI's Python step calls it (``batch_processing``: the step's
    fixed cost is paid once a batch). Made outside DALI's AutoGraph: a function it
    converts sends every NumPy call through its converter (6.5 ms a batch of 8 on a
    2-core CPU, 0.4 ms plain)."""

    def batch(*columns):  # boxes, classes, keypoints, m, shape_in, shape_out
        return _moved(*columns, min_kept, frame)

    return batch


def _move_labels(
    boxes, classes, keypoints, m, shape_in, shape_out, min_kept, frame="pixels"
):
    """:func:`_moved` in the graph (``shape_in`` / ``shape_out``: the images' shapes
    before and after, ``images.shape()``, or a constant (height, width)): the matrix
    and the sizes come from DALI; the point arithmetic, the size order and the frame
    (see :func:`_moved`) run in one Python step on the CPU. DALI has no operator that
    drops rows, its shape inference fails on batches without any box, and each small
    DALI operator costs a preview ~0.1 ms: one step does it all, a batch a call.
    Returns boxes, classes, keypoints and the kept fractions (keypoints None: a
    training graph that carries none, :func:`_no_keypoints`)."""
    return fn.python_function(
        boxes,
        classes,
        _no_keypoints(classes) if keypoints is None else keypoints,
        m,
        shape_in,
        shape_out,
        num_outputs=4,
        device="cpu",
        batch_processing=True,
        function=_moved_batch(min_kept, frame),
    )


def _no_keypoints(classes):
    """Keypoints (N, 0, 3) for labels without any: what a training graph that carries
    none (None) gives a Python step or an output that needs them."""
    points = fn.expand_dims(fn.cast(classes, dtype=types.FLOAT), axes=[1, 2])
    return fn.pad(points[:, 0:0], axes=[2], shape=[3])


def _flag(value):
    """A flip's on/off as DALI's int32 argument: a graph value as it is (the chain's
    coins and fed flags are int32 already), a constant made int32."""
    if isinstance(value, (bool, int, float)):
        return types.Constant(int(value), dtype=types.INT32)
    return value


def _flip_labels(boxes, keypoints, horizontal, vertical):
    """Mirror boxes (``fn.bb_flip``) and keypoints (``fn.coord_flip``: x -> 1 - x,
    y -> 1 - y; the third column, COCO's visibility, as an unflipped z) in relative
    coordinates. Keypoints None (a training graph without any) stay None."""
    h, v = _flag(horizontal), _flag(vertical)
    boxes = fn.bb_flip(boxes, ltrb=True, horizontal=h, vertical=v)
    if keypoints is None:
        return boxes, None
    points = fn.coord_flip(
        fn.reshape(keypoints, shape=[-1, 3]),
        layout="xyz",
        flip_x=h,
        flip_y=v,
        flip_z=0,
    )
    return boxes, fn.reshape(points, shape=keypoints.shape())


def _warp_mask(masks, m, after, homography=False):
    """A category map through the same matrix, nearest neighbour, at the new image's
    size."""
    size = after.shape(dtype=types.FLOAT)[0:2]
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


def _centred(m, before, after):
    """A map about the image centres (frame ``centres``) as the pixel matrix a mask's
    warp needs: the input's centre to the origin, ``m``, the origin onto the output's
    centre."""
    return fn.transforms.combine(
        fn.transforms.translation(offset=-0.5 * _wh(before)),
        m,
        fn.transforms.translation(offset=0.5 * _wh(after)),
    )


def _window_matrix(window, after):
    """An input window (top, left, height, width; frame ``window``) stretched onto the
    whole output, as the pixel matrix a mask's warp needs."""
    origin = window[1::-1]  # (left, top)
    extent = window[3:1:-1]  # (width, height)
    return fn.transforms.combine(
        fn.transforms.translation(offset=-origin),
        fn.transforms.scale(scale=_wh(after) / extent),
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


HELPERS = (
    "_wh",
    "_moved",
    "_moved_batch",
    "_move_labels",
    "_no_keypoints",
    "_flag",
    "_flip_labels",
    "_warp_mask",
    "_centred",
    "_window_matrix",
    "_scale_matrix",
    "_shift_matrix",
)
DEPS = {
    "_move_labels": ("_moved_batch", "_moved", "_no_keypoints"),
    "_flip_labels": ("_flag",),
    "_centred": ("_wh",),
    "_window_matrix": ("_wh",),
    "_scale_matrix": ("_wh",),
    "_shift_matrix": ("_wh", "_node"),
}
"""The helpers (in the order modules define them) and what each calls."""
