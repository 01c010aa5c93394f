"""Geometric operators: rotations, affine and perspective warps, flips, resizes and crops."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..canvas import Fixed, Grow, Rotated, Shorter, Window
from ..labels import BoxCrop, Flip, Scale, Warp
from ..opspec import Constraint, OpSpec
from ..params import Param, fill, interp, unit_interval

_SIZE = dict(bounds=(8, 4096), slider=(32, 512), step=1, unit="px")
_NEAREST_FILL_0 = (("interp_type", "types.INTERP_NN"), ("fill_value", "0"))
"""Masks through a warp's own call: nearest neighbour, category 0 (background) uncovered."""


def ordered(low: str, high: str) -> Constraint:
    """``low`` must not exceed ``high`` (the two ends of a range drawn from)."""
    return Constraint((low, high), lambda v: v[low] <= v[high],
                      f"{low} must not exceed {high}")


def _invertible(v: Mapping[str, Any]) -> bool:
    """The shear matrix [[1, shear_x], [shear_y, 1]] has an inverse (DALI computes it in
    float32, hence the margin)."""
    return abs(1.0 - v["shear_x"] * v["shear_y"]) >= 1e-6


OPS = [
    OpSpec(
        "rotate",
        "geometry",
        "Rotate by an angle in degrees, counter-clockwise.",
        "fn.rotate({x}, angle={angle}, keep_size={keep_size}, fill_value={fill_value}, "
        "interp_type={interp_type})",
        (
            Param("angle", "float", 0.0, "Rotation angle", bounds=(-360, 360), slider=(-90, 90),
                  step=1, neutral=0.0, unit="deg", runtime=True, dali_arg="angle",
                  random_default=(-15, 15)),
            Param("keep_size", "bool", True, "Keep the input size (else grow the canvas)",
                  dali_arg="keep_size"),
            fill(),
            interp(),
        ),
        magnitude="angle",
        schema="Rotate",
        canvas=Rotated("angle", "keep_size"),
        labels=Warp("fn.transforms.rotation(angle=-{angle})", frame="centres",
                    nearest=_NEAREST_FILL_0),
        signed=True,
        aliases=("RandomRotation", "Rotate", "SafeRotate"),
    ),
    OpSpec(
        "warp_affine",
        "geometry",
        "Affine warp about the image centre: zoom and shear.",
        "fn.warp_affine({x}, matrix=_affine({x}, {scale}, {shear_x}, {shear_y}), "
        "inverse_map=False, fill_value={fill_value}, interp_type={interp_type})",
        (
            Param("shear_x", "float", 0.0, "Horizontal shear factor", bounds=(-2, 2),
                  slider=(-0.6, 0.6), step=0.01, neutral=0.0, runtime=True,
                  random_default=(-0.2, 0.2)),
            Param("shear_y", "float", 0.0, "Vertical shear factor", bounds=(-2, 2),
                  slider=(-0.6, 0.6), step=0.01, neutral=0.0, runtime=True),
            Param("scale", "float", 1.0, "Zoom factor", bounds=(0.05, 10), slider=(0.5, 2),
                  step=0.01, neutral=1.0, unit="x", runtime=True),
            fill(),
            interp(),
        ),
        magnitude="shear_x",
        schema="WarpAffine",
        labels=Warp("_affine({x}, {scale}, {shear_x}, {shear_y})"),
        # the matrix's determinant is scale^2 (1 - shear_x shear_y): at 0 DALI fails with
        # "Cannot calculate the inverse of a singular matrix" (2 and 0.5, 1 and 1, -1 and -1)
        constraints=(Constraint(("shear_x", "shear_y"), _invertible,
                                "shear_x x shear_y must not be 1: the warp would flatten the "
                                "image onto a line (a singular matrix DALI cannot invert)"),),
        signed=True,
        aliases=("RandomAffine", "Affine", "ShiftScaleRotate", "scale", "shear"),
    ),
    OpSpec(
        "experimental.warp_perspective",
        "geometry",
        "Perspective tilt about the image centre (a 3x3 homography).",
        "fn.experimental.warp_perspective({x}, matrix=_perspective({x}, {tilt_x}, {tilt_y}), "
        "inverse_map=False, fill_value=[{fill_value}], interp_type={interp_type})",
        (
            Param("tilt_x", "float", 0.0, "Horizontal perspective tilt", bounds=(-1.5, 1.5),
                  slider=(-0.8, 0.8), step=0.01, neutral=0.0, runtime=True,
                  random_default=(-0.3, 0.3)),
            Param("tilt_y", "float", 0.0, "Vertical perspective tilt", bounds=(-1.5, 1.5),
                  slider=(-0.8, 0.8), step=0.01, neutral=0.0, runtime=True),
            fill(),
            interp(),
        ),
        magnitude="tilt_x",
        schema="experimental__WarpPerspective",
        labels=Warp("_perspective({x}, {tilt_x}, {tilt_y})", homography=True),
        signed=True,
        aliases=("RandomPerspective", "Perspective", "tilt"),
    ),
    OpSpec(
        "flip",
        "geometry",
        "Mirror horizontally and/or vertically.",
        "fn.flip({x}, horizontal={horizontal}, vertical={vertical})",
        (
            Param("horizontal", "bool", True, "Mirror left-right", runtime=True,
                  dali_arg="horizontal", dali_int=True),
            Param("vertical", "bool", False, "Mirror top-bottom", runtime=True,
                  dali_arg="vertical", dali_int=True),
        ),
        schema="Flip",
        labels=Flip(),
        aliases=("RandomHorizontalFlip", "RandomVerticalFlip", "HorizontalFlip",
                 "VerticalFlip", "mirror"),
    ),
    OpSpec(
        "resize",
        "geometry",
        "Resize so the shorter side has the given length (aspect ratio kept).",
        "fn.resize({x}, resize_shorter={resize_shorter}, antialias={antialias}, "
        "interp_type={interp_type})",
        (
            Param("resize_shorter", "float", 224.0, "Length of the shorter side", runtime=True,
                  dali_arg="resize_shorter", random_default=(160, 288), **_SIZE),
            Param("antialias", "bool", True, "Low-pass filter when downscaling",
                  dali_arg="antialias"),
            interp(runtime=False, cubic=True),
        ),
        magnitude="resize_shorter",
        schema="Resize",
        canvas=Shorter("resize_shorter"),
        labels=Scale(nearest=(("interp_type", "types.INTERP_NN"), ("antialias", "False"))),
        aliases=("Resize", "SmallestMaxSize", "rescale"),
    ),
    OpSpec(
        "crop",
        "geometry",
        "Cut a window of fixed size at a relative position (padded if the image is smaller).",
        "fn.crop({x}, crop_h={crop_h}, crop_w={crop_w}, crop_pos_x={crop_pos_x}, "
        "crop_pos_y={crop_pos_y}, out_of_bounds_policy={out_of_bounds_policy})",
        (
            Param("crop_h", "float", 192.0, "Window height", runtime=True, dali_arg="crop_h",
                  **_SIZE),
            Param("crop_w", "float", 192.0, "Window width", runtime=True, dali_arg="crop_w",
                  **_SIZE),
            unit_interval("crop_pos_x", 0.5, "Horizontal window position (0 left, 1 right)",
                          random_default=(0, 1)),
            unit_interval("crop_pos_y", 0.5, "Vertical window position (0 top, 1 bottom)",
                          random_default=(0, 1)),
            Param("out_of_bounds_policy", "enum", "pad", "What to do when the window leaves "
                  "the image", choices=("pad", "trim_to_shape", "error"),
                  dali_arg="out_of_bounds_policy"),
        ),
        magnitude="crop_pos_x",
        schema="Crop",
        canvas=Fixed("crop_h", "crop_w", policy="out_of_bounds_policy"),
        labels=Warp("_shift_matrix({x}, {out}, {crop_pos_x}, {crop_pos_y})",
                    nearest=()),  # a window of whole pixels, padded with 0: the call as is
        aliases=("CenterCrop", "RandomCrop", "Crop", "PadIfNeeded"),
    ),
    OpSpec(
        "random_resized_crop",
        "geometry",
        "Inception-style crop of random area and aspect ratio, resized to a square.",
        "fn.random_resized_crop({x}, size=[{size}, {size}], random_area=[{area_min}, "
        "{area_max}], random_aspect_ratio=[{aspect_min}, {aspect_max}], "
        "antialias={antialias}, seed={seed})",
        (
            Param("size", "int", 224, "Output side length", **_SIZE),
            Param("area_min", "float", 0.08, "Smallest crop area (fraction of the image)",
                  bounds=(0.001, 1), slider=(0.01, 1), step=0.01),
            Param("area_max", "float", 1.0, "Largest crop area (fraction of the image)",
                  bounds=(0.001, 1), slider=(0.01, 1), step=0.01),
            Param("aspect_min", "float", 0.75, "Smallest aspect ratio (w/h)",
                  bounds=(0.1, 10), slider=(0.25, 4), step=0.01),
            Param("aspect_max", "float", 4 / 3, "Largest aspect ratio (w/h)",
                  bounds=(0.1, 10), slider=(0.25, 4), step=0.01),
            Param("antialias", "bool", True, "Low-pass filter when downscaling",
                  dali_arg="antialias"),
        ),
        magnitude="area_min",
        schema="RandomResizedCrop",
        canvas=Fixed("size", "size"),
        # DALI draws the window inside the operator: with labels it is drawn in the open
        labels=Warp(call="_resized_crop({x}, {size}, [{area_min}, {area_max}], "
                         "[{aspect_min}, {aspect_max}], {antialias}, {seed}, "
                         "source={source}, masks={masks})",
                    frame="window"),
        constraints=(
            ordered("area_min", "area_max"),
            ordered("aspect_min", "aspect_max"),
        ),
        aliases=("RandomResizedCrop", "RandomSizedCrop", "Inception crop"),
    ),
    OpSpec(
        "random_bbox_crop",
        "geometry",
        "Detection crop (SSD): a random window overlapping the boxes by min_iou, cut 1 px or "
        "more each way.",
        "_bbox_crop({x}, [{scale_min}, {scale_max}], [{aspect_min}, {aspect_max}], {min_iou}, "
        "{seed}, source={source})",
        (
            Param("scale_min", "float", 0.3, "Smallest window side (fraction of the image's)",
                  bounds=(0.01, 1), slider=(0.05, 1), step=0.01),
            Param("scale_max", "float", 1.0, "Largest window side (fraction of the image's)",
                  bounds=(0.01, 1), slider=(0.05, 1), step=0.01),
            Param("aspect_min", "float", 0.5, "Smallest window aspect ratio (relative w/h)",
                  bounds=(0.1, 10), slider=(0.25, 4), step=0.01),
            Param("aspect_max", "float", 2.0, "Largest window aspect ratio (relative w/h)",
                  bounds=(0.1, 10), slider=(0.25, 4), step=0.01),
            unit_interval("min_iou", 0.3, "Every box overlaps the window by at least this IoU "
                          "(without labels: any window)", runtime=False),
        ),
        magnitude="scale_min",
        # at least 1x1: a side under a pixel (a small scale with an extreme aspect, DALI
        # drawing the height from the width) is widened to 1.001 px (_pixel_window)
        canvas=Window(),
        # no one schema: random_bbox_crop (CPU) draws the window, slice (CPU, GPU) cuts it
        # the window is drawn from the boxes themselves when labels are in the chain
        labels=BoxCrop("_bbox_crop_labels({x}, boxes, classes, keypoints, "
                       "[{scale_min}, {scale_max}], [{aspect_min}, {aspect_max}], {min_iou}, "
                       "{min_kept}, {seed}, masks={masks}, source={source})"),
        constraints=(
            ordered("scale_min", "scale_max"),
            ordered("aspect_min", "aspect_max"),
        ),
        aliases=("RandomIoUCrop", "RandomSizedBBoxSafeCrop", "BBoxSafeRandomCrop", "SSD crop",
                 "detection crop"),
    ),
    OpSpec(
        "paste",
        "geometry",
        "Zoom out: paste the image into a larger canvas of a fill colour.",
        "fn.paste({x}, ratio={ratio}, paste_x={paste_x}, paste_y={paste_y}, "
        "fill_value=({fill_value}, {fill_value}, {fill_value}))",
        (
            Param("ratio", "float", 1.5, "Canvas size relative to the image", bounds=(1, 8),
                  slider=(1, 3), step=0.01, neutral=1.0, unit="x", runtime=True,
                  dali_arg="ratio", random_default=(1, 2)),
            unit_interval("paste_x", 0.5, "Horizontal position in the canvas",
                          random_default=(0, 1)),
            unit_interval("paste_y", 0.5, "Vertical position in the canvas",
                          random_default=(0, 1)),
            Param("fill_value", "int", 0, "Canvas grey level", bounds=(0, 255), slider=(0, 255),
                  step=1, unit="level"),
        ),
        magnitude="ratio",
        schema="Paste",
        canvas=Grow("ratio"),
        labels=Warp("_shift_matrix({x}, {out}, {paste_x}, {paste_y})"),
        aliases=("RandomZoomOut", "zoom out"),
    ),
]
