"""One Python step for a run of moving steps: the graph helpers behind
:func:`pipelines.label_code.flush_moves`, copied into the generated modules like
:mod:`pipelines.label_helpers`.

A labelled moving step moved its boxes in a Python step of its own, and a flip through DALI's
``fn.bb_flip`` / ``fn.coord_flip``. On the GPU each Python step cost a preview ~1 ms whatever
it computed (its inputs and outputs cross into Python per sample) and a flip ~0.4 ms of small
operators, so steps that follow each other with no condition between them (a detection
chain's random crop, flip and rotation) now share one Python step. It applies them in order,
each warp clipping and dropping as its own step did (:func:`_moved`), so the labels, and the
kept fractions the inspector reads, are those of the steps one by one.
"""

from __future__ import annotations

import numpy as np
from nvidia.dali import fn
from nvidia.dali.pipeline import do_not_convert

from .label_helpers import _moved, _no_keypoints


def _flipped(boxes, keypoints, horizontal, vertical):
    """NumPy, per sample: mirrored boxes (left, top, right, bottom) and keypoints,
    relative coordinates (x -> 1 - x, as ``fn.bb_flip`` / ``fn.coord_flip`` do)."""
    out_boxes, out_points = [], []
    for b, k, h, v in zip(boxes, keypoints, horizontal, vertical, strict=True):
        b, k = np.array(b, np.float32), np.array(k, np.float32)
        if h:
            b[:, [0, 2]] = 1.0 - b[:, [2, 0]]
            k[..., 0] = 1.0 - k[..., 0]
        if v:
            b[:, [1, 3]] = 1.0 - b[:, [3, 1]]
            k[..., 1] = 1.0 - k[..., 1]
        out_boxes.append(b)
        out_points.append(k)
    return out_boxes, out_points


@do_not_convert
def _moved_chain_batch(min_kept, kinds):
    """Consecutive moving steps in one Python step (``batch_processing``): ``kinds``
    holds, in order, ``(frame,)`` for a warp (its matrix and the images' shapes before
    and after are the next three inputs) or ``("mirror", horizontal, vertical)`` (a
    flag that is None is the next input). Each warp clips and drops as its own step
    would (:func:`_moved`)."""

    def batch(boxes, classes, keypoints, *columns):
        kept, at = [], 0
        n = len(boxes)
        for kind in kinds:
            if kind[0] == "mirror":
                flags = []
                for flag in kind[1:]:
                    if flag is None:
                        flags.append(np.array(columns[at]).reshape(n, -1)[:, 0] != 0)
                        at += 1
                    else:
                        flags.append([flag] * n)
                boxes, keypoints = _flipped(boxes, keypoints, *flags)
                continue
            m, shape_in, shape_out = columns[at : at + 3]
            at += 3
            boxes, classes, keypoints, k = _moved(
                boxes, classes, keypoints, m, shape_in, shape_out, min_kept, kind[0]
            )
            kept.append(k)
        return (boxes, classes, keypoints, *kept)

    return batch


@do_not_convert
def _move_labels_chain(boxes, classes, keypoints, moves, min_kept):
    """:func:`_move_labels` for a run of moving steps with no condition between them,
    in one Python step (each costs a preview ~1 ms on the GPU whatever it does: its
    inputs and outputs cross into Python per sample). ``moves``, in order: ``(frame, m,
    before, after)`` for a warp (the images before and after it) or ``("mirror",
    horizontal, vertical)``. Returns boxes, classes, keypoints and each warp's kept
    fractions (keypoints None: :func:`_no_keypoints` stands in). Kept out of DALI's
    AutoGraph (a chain with conditions): its loops are over the moves, never over graph
    values."""
    inputs, kinds = [], []
    for move in moves:
        if move[0] == "mirror":
            flags = [
                bool(f) if isinstance(f, (bool, int, float)) else None for f in move[1:]
            ]
            inputs += [f for f, c in zip(move[1:], flags, strict=True) if c is None]
            kinds.append(("mirror", *flags))
        else:
            frame, m, before, after = move
            inputs += [m, before.shape(), after.shape()]
            kinds.append((frame,))
    warps = sum(kind[0] != "mirror" for kind in kinds)
    return fn.python_function(
        boxes,
        classes,
        _no_keypoints(classes) if keypoints is None else keypoints,
        *inputs,
        num_outputs=3 + warps,
        device="cpu",
        batch_processing=True,
        function=_moved_chain_batch(min_kept, tuple(kinds)),
    )


HELPERS = ("_flipped", "_moved_chain_batch", "_move_labels_chain")
DEPS = {
    "_moved_chain_batch": ("_moved", "_flipped"),
    "_move_labels_chain": ("_moved_chain_batch", "_moved", "_flipped", "_no_keypoints"),
}
"""The helpers (in the order modules define them) and what each calls."""
