"""Small graph-building helpers shared by the preview graph and the exported module.

The exporter copies the source of the helpers a pipeline uses into the generated file, so the
preview and the training code run literally the same functions.
"""

from __future__ import annotations

import numpy as np
import nvidia.dali.math as dmath
from nvidia.dali import fn, types
from nvidia.dali.auto_aug.core import signed_bin
from nvidia.dali.data_node import DataNode


def _op_seed(seed, slot):
    """Seed of one random node: set by the chain seed and the node's slot only."""
    return (seed * 1_000_003 + slot * 7_919 + 1) % 2_147_483_647


def _vec(*items):
    """A per-sample vector: a list of constants, or a node if any item is one."""
    if not any(isinstance(i, DataNode) for i in items):
        return [float(i) for i in items]
    return fn.stack(*[_node(i) for i in items])


def _node(value):
    """A float32 scalar node from a node or a number."""
    if isinstance(value, DataNode):
        return value
    return types.Constant(float(value), dtype=types.FLOAT, device="cpu")


def _inputs(images, *values):
    """Per-sample parameter inputs of a Python operator, on the images' device."""
    nodes = [_node(v) for v in values]
    return [n.gpu() for n in nodes] if images.device == "gpu" else nodes


def _center(images):
    """Per-sample image centre as (x, y)."""
    return images.shape(dtype=types.FLOAT)[1::-1] * 0.5  # one slice: fewer operators


def _affine(images, scale, shear_x, shear_y):
    """Zoom and shear about the image centre, as a 2x3 forward matrix."""
    center = _center(images)
    return fn.transforms.combine(
        fn.transforms.shear(shear=_vec(shear_x, shear_y), center=center),
        fn.transforms.scale(scale=_vec(scale, scale), center=center),
    )


def _perspective(images, tilt_x, tilt_y):
    """A 3x3 forward homography that tilts the image about its centre."""
    shape = images.shape(dtype=types.FLOAT)
    w, h = shape[1], shape[0]
    cx, cy = w * 0.5, h * 0.5
    g, k = tilt_x / w, tilt_y / h
    e = 1.0 - g * cx - k * cy
    m = fn.stack(
        *(1.0 + cx * g, cx * k, cx * e - cx),
        *(cy * g, 1.0 + cy * k, cy * e - cy),
        *(g, k, e),
    )
    return fn.reshape(m, shape=[3, 3])


def _const(value):
    """A constant float32 tensor input (e.g. a convolution kernel)."""
    return types.Constant(np.array(value, dtype=np.float32))


def _bin(magnitude_bin, random_sign, seed):
    """auto_aug magnitude bin with its sign: negated for a random half of the samples
    when asked, never otherwise (DALI negates an unsigned bin at random, unseeded)."""
    if random_sign:
        return signed_bin(magnitude_bin, seed=seed)
    return signed_bin(magnitude_bin, random_sign=0)


def _picked(keys, j, n):
    """Whether keys[j] is among the n largest of a group's keys (ties go to the earlier
    child): child j of a group that applies n of its children."""
    above = 0  # an integer first: DALI refuses to add two booleans
    for m, key in enumerate(keys):
        if m != j:
            above = above + ((key >= keys[j]) if m < j else (key > keys[j]))
    return above < n


def _uniform_int(bounds, seed):
    """An integer drawn from lo..hi inclusive, each value equally likely (DALI's INT32
    uniform rounds a float drawn in [lo, hi): lo and hi came half as often). ``bounds``:
    a list or a fed node; the clamp keeps a float draw that rounds up to 1 inside."""
    lo, hi = bounds[0], bounds[1]
    u = fn.random.uniform(range=[0.0, 1.0], seed=seed)
    drawn = dmath.min(dmath.floor(u * (hi - lo + 1)) + lo, hi)
    return fn.cast(drawn, dtype=types.INT32)


def _log_key(u, scale):
    """A weighted pick's key ``log(u) * scale`` (scale: top weight over the child's).
    It ranks as ``u ** (1 / w)`` does, which underflows to 0 for small weights (the
    tie then went to the earlier child). u = 0 counts as 1e-30: every key is finite."""
    return dmath.log(dmath.max(u, 1e-30)) * scale


HELPERS = (
    "_op_seed",
    "_vec",
    "_inputs",
    "_node",
    "_center",
    "_affine",
    "_perspective",
    "_const",
    "_bin",
    "_picked",
    "_uniform_int",
    "_log_key",
)
DEPS = {"_affine": ("_vec", "_node", "_center"), "_vec": ("_node",), "_inputs": ("_node",)}
"""The helpers (in the order generated modules define them) and what each calls."""
