"""Erasing and masking: cutout and grid masks."""

from __future__ import annotations

from ..labels import KEEP
from ..opspec import OpSpec
from ..params import Param, fill, unit_interval

OPS = [
    OpSpec(
        "erase",
        "erase/mask",
        "Cutout: fill a box of relative size at a relative centre.",
        "fn.erase({x}, anchor=_vec({center_y}, {center_x}), shape=_vec({box_h}, {box_w}), "
        "axis_names=\"HW\", normalized=True, centered_anchor=True, fill_value={fill_value})",
        (
            unit_interval("center_x", 0.5, "Box centre, horizontal", random_default=(0, 1),
                          dali_arg=None),
            unit_interval("center_y", 0.5, "Box centre, vertical", random_default=(0, 1),
                          dali_arg=None),
            unit_interval("box_w", 0.3, "Box width (fraction of the image)", neutral=0.0,
                          random_default=(0.1, 0.4), dali_arg=None),
            unit_interval("box_h", 0.3, "Box height (fraction of the image)", neutral=0.0,
                          random_default=(0.1, 0.4), dali_arg=None),
            fill(runtime=True, doc="Grey level painted inside the box"),
        ),
        magnitude="box_w",
        schema="Erase",
        aliases=("RandomErasing", "CoarseDropout", "Cutout", "Erasing"),
        labels=KEEP,
    ),
    OpSpec(
        "grid_mask",
        "erase/mask",
        "GridMask: black out a regular grid of squares (ratio 0 masks nothing).",
        "fn.grid_mask({x}, tile={tile}, ratio={ratio}, angle={angle}, shift_x={shift_x}, "
        "shift_y={shift_y})",
        (
            Param("tile", "int", 64, "Grid period", bounds=(1, 2048), slider=(4, 256), step=1,
                  unit="px", runtime=True, dali_arg="tile", random_default=(32, 96)),
            # DALI's ratio as it is: the black square's side over the tile's (1 = all black, so
            # the slider stops short of it)
            unit_interval("ratio", 0.5, "Black square side as a fraction of the tile",
                          neutral=0.0, slider=(0, 0.9)),
            # no neutral: the grid still masks at angle 0
            Param("angle", "float", 0.0, "Grid rotation", bounds=(-6.2832, 6.2832),
                  slider=(-1.5708, 1.5708), step=0.01, unit="rad", runtime=True,
                  dali_arg="angle"),
            Param("shift_x", "float", 0.0, "Grid offset, horizontal", bounds=(-4096, 4096),
                  slider=(-128, 128), step=1, unit="px", runtime=True, dali_arg="shift_x"),
            Param("shift_y", "float", 0.0, "Grid offset, vertical", bounds=(-4096, 4096),
                  slider=(-128, 128), step=1, unit="px", runtime=True, dali_arg="shift_y"),
        ),
        magnitude="ratio",
        schema="GridMask",
        aliases=("GridDropout", "GridMask"),
        labels=KEEP,
    ),
]
