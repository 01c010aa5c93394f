"""Masks brought to their images' size once, when an engine's labels are set, by DALI.

A dataset's masks come at the image file's size, and the preview may decode an image smaller
(its size limit). Each render's graph resized them (the fed image's shape, two slices, a stack
and a resize: five small operators, ~0.3 ms of a GPU preview) although the images and masks do
not change between renders; now DALI resizes them here, once, with the same nearest-neighbour
resize, and every render feeds masks that already match their images. The builder's label
source asks for the same (masks at the decoded size), so no NumPy resize stands in for DALI's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from .label_render import SampleLabels


def fit_masks(shapes: Sequence[tuple[int, ...]], labels: Sequence[SampleLabels],
              num_threads: int = 1) -> list[SampleLabels]:
    """``labels`` with every mask that differs from its image's height and width (``shapes``:
    each image's, height first) resized to it (``fn.resize``, nearest neighbour, no
    antialias), in one DALI run on the CPU. An empty mask (no pixel) marks no category: it
    becomes the image's size of zeros."""
    out = list(labels)
    todo = []
    for i, (shape, s) in enumerate(zip(shapes, labels, strict=True)):
        h, w = shape[:2]
        if s is None or s.mask is None or s.mask.shape[:2] == (h, w):  # None: no labels
            continue
        if s.mask.size == 0:
            out[i] = replace(s, mask=np.zeros((h, w, 1), np.uint8))
        else:
            todo.append(i)
    if not todo:
        return out
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=len(todo), num_threads=num_threads, device_id=None,
                  prefetch_queue_depth=1)
    def fit():
        masks = fn.external_source(name="masks", dtype=types.UINT8, layout="HWC")
        size = fn.external_source(name="size", dtype=types.FLOAT)
        return fn.resize(masks, size=size, interp_type=types.INTERP_NN, antialias=False)

    pipe = fit()
    pipe.build()
    pipe.feed_input("masks", [labels[i].mask for i in todo])
    pipe.feed_input("size", [np.array(shapes[i][:2], np.float32) for i in todo])
    (resized,) = pipe.run()
    for k, i in enumerate(todo):
        out[i] = replace(labels[i], mask=np.array(resized[k]))
    return out
