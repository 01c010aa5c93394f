"""Two user-defined operators shipped as examples of :func:`pipelines.custom.custom_op`.

Declared with :func:`pipelines.custom_spec.custom_spec`, the entry ``custom_op`` registers. Each
works on a NumPy array on the CPU and on a CuPy array on the GPU (DALI hands the function
whichever the pipeline's device gives); parameters arrive as 0-d arrays.
"""

from __future__ import annotations

import numpy as np

from ..custom_spec import custom_spec
from ..labels import KEEP
from ..params import Param, unit_interval


def vignette(image, strength):
    if isinstance(image, np.ndarray):
        xp = np
    else:
        import cupy as xp
    h, w = image.shape[0], image.shape[1]
    y = xp.linspace(-1.0, 1.0, h, dtype=xp.float32)[:, None]
    x = xp.linspace(-1.0, 1.0, w, dtype=xp.float32)[None, :]
    falloff = 1.0 - float(strength) * (x * x + y * y) / 2.0
    out = image.astype(xp.float32) * xp.clip(falloff, 0.0, 1.0)[:, :, None]
    return xp.clip(out + 0.5, 0, 255).astype(xp.uint8)


def cutout_colour(image, center_x, center_y, size, colour_seed):
    if isinstance(image, np.ndarray):
        xp = np
    else:
        import cupy as xp
    h, w = image.shape[0], image.shape[1]
    side = int(float(size) * min(h, w))
    cx, cy = int(float(center_x) * w), int(float(center_y) * h)
    x0, y0 = max(cx - side // 2, 0), max(cy - side // 2, 0)
    seed = int(colour_seed)
    mix = ((37, 11), (91, 47), (173, 101))
    colour = xp.asarray([(seed * m + a) % 256 for m, a in mix])
    out = image.copy()
    out[y0 : y0 + side, x0 : x0 + side] = colour.astype(xp.uint8)
    return out


OPS = [
    custom_spec(
        "custom.vignette",
        "Darken the corners with a radial falloff (a Python operator).",
        vignette,
        labels=KEEP,
        params=(
            Param("strength", "float", 0.6, "How dark the corners get", bounds=(0, 1),
                  slider=(0, 1), step=0.01, neutral=0.0, runtime=True,
                  random_default=(0.2, 0.8)),
        ),
        magnitude="strength",
    ),
    custom_spec(
        "custom.cutout_colour",
        "Cutout filled with a colour picked per sample from a seed (a Python operator).",
        cutout_colour,
        labels=KEEP,
        params=(
            unit_interval("center_x", 0.5, "Box centre, horizontal", random_default=(0, 1),
                          dali_arg=None),
            unit_interval("center_y", 0.5, "Box centre, vertical", random_default=(0, 1),
                          dali_arg=None),
            unit_interval("size", 0.3, "Box side (fraction of the shorter side)", neutral=0.0,
                          random_default=(0.1, 0.5), dali_arg=None),
            Param("colour_seed", "int", 0,
                  "Picks the colour; draw it per sample for random colours",
                  bounds=(0, 1_000_000), slider=(0, 1000), step=1, runtime=True,
                  random_default=(0, 1_000_000)),
        ),
        magnitude="size",
    ),
]
