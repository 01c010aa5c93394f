"""Blur and convolution filters."""

from __future__ import annotations

from ..labels import KEEP
from ..opspec import OpSpec
from ..params import Param
from ..work import Taps, gaussian_taps, laplacian_taps, morphology_taps, square_window_taps

_KERNELS = {
    "sharpen": [[0, -1, 0], [-1, 5, -1], [0, -1, 0]],
    "emboss": [[-2, -1, 0], [-1, 1, 1], [0, 1, 2]],
    "box_blur": [[1 / 9] * 3] * 3,
    # a horizontal line of 7 taps of 1/7 in a 7x7 kernel: 7-pixel horizontal motion blur
    "motion_blur": [[0.0] * 7] * 3 + [[1 / 7] * 7] + [[0.0] * 7] * 3,
    "outline": [[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]],
}

_GPU_ONLY = "DALI 2.4 implements it only on the GPU"

_MORPHOLOGY = (
    Param("mask_size", "int", 3, "Structuring element side", bounds=(1, 31), slider=(1, 9),
          step=1, unit="px", runtime=True, dali_arg="mask_size"),
    Param("iterations", "int", 1, "Repetitions", bounds=(1, 16), slider=(1, 5), step=1,
          dali_arg="iterations"),
)
"""The parameters dilation and erosion share (DALI gives both the same arguments)."""
_MORPHOLOGY_WORK = Taps(("mask_size", "iterations"), morphology_taps)

OPS = [
    OpSpec(
        "gaussian_blur",
        "blur/filter",
        "Gaussian blur with a standard deviation in pixels.",
        "fn.gaussian_blur({x}, sigma={sigma})",
        # DALI's GPU kernel takes a window (2 * ceil(3 * sigma) + 1) of under 512 / 3 taps
        # on RGB ("Window is too big ... expected at most: 170" at sigma 50): 169 is sigma 28
        (Param("sigma", "float", 1.5, "Standard deviation", bounds=(0.01, 28),
               slider=(0.01, 6), step=0.01, neutral=0.01, unit="px", runtime=True,
               dali_arg="sigma", random_default=(0.1, 2.0)),),
        magnitude="sigma",
        schema="GaussianBlur",
        work=Taps(("sigma",), gaussian_taps),
        aliases=("GaussianBlur", "blur", "smooth"),
        labels=KEEP,
    ),
    OpSpec(
        "laplacian",
        "blur/filter",
        "Laplacian edge response (saturated to 0-255; it has no neutral value).",
        "fn.laplacian({x}, window_size={window_size}, scale={scale})",
        (
            # DALI: "Window size must be odd and between 3 and 23"
            Param("window_size", "int", 3, "Derivative window size", bounds=(3, 23),
                  slider=(3, 9), step=2, odd=True, unit="px", runtime=True,
                  dali_arg="window_size"),
            # scale 0 is a black image, not the input: the slider starts above it
            Param("scale", "float", 1.0, "Response scale", bounds=(0, 100), slider=(0.25, 4),
                  step=0.01, runtime=True, dali_arg="scale"),
        ),
        magnitude="scale",
        schema="Laplacian",
        work=Taps(("window_size",), laplacian_taps),
        aliases=("edge detection", "edges"),
        labels=KEEP,
    ),
    OpSpec(
        "filter",
        "blur/filter",
        "Correlate with a named kernel: 3x3 sharpen, emboss, box blur, outline; 7-px motion blur.",
        "fn.filter({x}, {kernel}, border={border})",
        (
            Param("kernel", "enum", "sharpen", "Kernel: 3x3, except motion_blur (a horizontal "
                  "7-pixel line of 1/7 each)", choices=tuple(_KERNELS),
                  codes={k: f"_const({v!r})" for k, v in _KERNELS.items()}),
            Param("border", "enum", "reflect_101", "How borders are extended",
                  choices=("reflect_101", "reflect_1001", "wrap", "clamp", "constant"),
                  dali_arg="border"),
        ),
        schema="Filter",
        aliases=("Sharpen", "Emboss", "MotionBlur", "Blur", "box blur", "outline"),
        labels=KEEP,
    ),
    OpSpec(
        "experimental.median_blur",
        "blur/filter",
        "Median filter over a square window.",
        "fn.experimental.median_blur({x}, window_size={window_size})",
        (Param("window_size", "int", 5, "Window side", bounds=(3, 31), slider=(3, 15), step=2,
               odd=True, unit="px", runtime=True, dali_arg="window_size"),),
        devices=frozenset({"gpu"}),
        gpu_reason=_GPU_ONLY,
        magnitude="window_size",
        schema="experimental__MedianBlur",
        work=Taps(("window_size",), square_window_taps),
        aliases=("MedianBlur",),
        labels=KEEP,
    ),
    OpSpec(
        "experimental.dilate",
        "blur/filter",
        "Morphological dilation (grows bright regions).",
        "fn.experimental.dilate({x}, mask_size={mask_size}, iterations={iterations})",
        _MORPHOLOGY,
        devices=frozenset({"gpu"}),
        gpu_reason=_GPU_ONLY,
        magnitude="mask_size",
        schema="experimental__Dilate",
        work=_MORPHOLOGY_WORK,
        aliases=("Dilation", "morphology", "max filter"),
        labels=KEEP,
    ),
    OpSpec(
        "experimental.erode",
        "blur/filter",
        "Morphological erosion (grows dark regions).",
        "fn.experimental.erode({x}, mask_size={mask_size}, iterations={iterations})",
        _MORPHOLOGY,
        devices=frozenset({"gpu"}),
        gpu_reason=_GPU_ONLY,
        magnitude="mask_size",
        schema="experimental__Erode",
        work=_MORPHOLOGY_WORK,
        aliases=("Erosion", "morphology", "min filter"),
        labels=KEEP,
    ),
]
