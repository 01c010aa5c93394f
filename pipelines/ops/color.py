"""Colour operators: brightness, contrast, hue, saturation, equalisation."""

from __future__ import annotations

from ..opspec import OpSpec
from ..params import Param, factor, hue_shift

_SHIFT = Param("brightness_shift", "float", 0.0, "Additive shift (fraction of 255)",
               bounds=(-1, 1), slider=(-0.5, 0.5), step=0.01, neutral=0.0, runtime=True,
               dali_arg="brightness_shift")

OPS = [
    OpSpec(
        "brightness",
        "color",
        "Scale (and shift) pixel intensities.",
        "fn.brightness({x}, brightness={brightness}, brightness_shift={brightness_shift})",
        (factor("brightness", "Multiplicative brightness"), _SHIFT),
        magnitude="brightness",
        schema="Brightness",
        signed=True,
        aliases=("adjust_brightness", "RandomBrightness"),
    ),
    OpSpec(
        "contrast",
        "color",
        "Stretch or compress intensities around mid-grey.",
        "fn.contrast({x}, contrast={contrast})",
        (factor("contrast", "Contrast factor"),),
        magnitude="contrast",
        schema="Contrast",
        signed=True,
        aliases=("adjust_contrast", "RandomContrast"),
    ),
    OpSpec(
        "brightness_contrast",
        "color",
        "Brightness and contrast in one pass.",
        "fn.brightness_contrast({x}, brightness={brightness}, "
        "brightness_shift={brightness_shift}, contrast={contrast})",
        (factor("brightness", "Multiplicative brightness"), _SHIFT,
         factor("contrast", "Contrast factor")),
        magnitude="brightness",
        schema="BrightnessContrast",
        signed=True,
        aliases=("RandomBrightnessContrast",),
    ),
    OpSpec(
        "hue",
        "color",
        "Rotate hue by an angle in degrees.",
        "fn.hue({x}, hue={hue})",
        (hue_shift(),),
        magnitude="hue",
        schema="Hue",
        signed=True,
        aliases=("adjust_hue", "RandomHue"),
    ),
    OpSpec(
        "saturation",
        "color",
        "Scale colour saturation (0 is grey).",
        "fn.saturation({x}, saturation={saturation})",
        (factor("saturation", "Saturation factor", slider=(0, 3)),),
        magnitude="saturation",
        schema="Saturation",
        signed=True,
        aliases=("Grayscale", "RandomGrayscale", "ToGray", "desaturate", "adjust_saturation"),
    ),
    OpSpec(
        "hsv",
        "color",
        "Hue shift plus saturation and value scaling.",
        "fn.hsv({x}, hue={hue}, saturation={saturation}, value={value})",
        (hue_shift(), factor("saturation", "Saturation factor", slider=(0, 3)),
         factor("value", "Value (brightness) factor")),
        magnitude="hue",
        schema="Hsv",
        signed=True,
        aliases=("HueSaturationValue",),
    ),
    OpSpec(
        "color_twist",
        "color",
        "Brightness, contrast, saturation and hue together (torchvision ColorJitter).",
        "fn.color_twist({x}, brightness={brightness}, contrast={contrast}, "
        "saturation={saturation}, hue={hue})",
        (factor("brightness", "Brightness factor"), factor("contrast", "Contrast factor"),
         factor("saturation", "Saturation factor", slider=(0, 3)), hue_shift()),
        magnitude="saturation",
        schema="ColorTwist",
        signed=True,
        aliases=("ColorJitter",),
    ),
    OpSpec(
        "color_space_conversion",
        "color",
        "Reinterpret RGB in another colour space (channel swap / YCbCr).",
        "fn.color_space_conversion({x}, image_type=types.RGB, output_type={output_type})",
        (Param("output_type", "enum", "BGR", "Target colour space", choices=("BGR", "YCbCr"),
               codes={"BGR": "types.BGR", "YCbCr": "types.YCbCr"}, dali_arg="output_type"),),
        schema="ColorSpaceConversion",
        aliases=("channel swap", "BGR", "YCbCr"),
    ),
    OpSpec(
        "equalize",
        "color",
        "Histogram equalisation per channel.",
        "fn.equalize({x})",
        schema="Equalize",
        aliases=("RandomEqualize", "Equalize", "histogram equalization"),
    ),
    OpSpec(
        "clahe",
        "color",
        "Contrast-limited adaptive histogram equalisation.",
        "fn.clahe({x}, tiles_x={tiles_x}, tiles_y={tiles_y}, clip_limit={clip_limit}, "
        "luma_only={luma_only})",
        (
            Param("tiles_x", "int", 8, "Tiles across", bounds=(1, 64), slider=(1, 16), step=1,
                  dali_arg="tiles_x"),
            Param("tiles_y", "int", 8, "Tiles down", bounds=(1, 64), slider=(1, 16), step=1,
                  dali_arg="tiles_y"),
            Param("clip_limit", "float", 2.0, "Histogram clip limit", bounds=(0.1, 100),
                  slider=(1, 10), step=0.1, dali_arg="clip_limit"),
            Param("luma_only", "bool", True, "Equalise luma only (GPU always does)",
                  dali_arg="luma_only"),
        ),
        magnitude="clip_limit",
        schema="Clahe",
        checkpoints=False,  # DALI: "Checkpointing is not implemented for this operator"
        aliases=("CLAHE",),
    ),
]
