"""torchvision auto-augment policies, conversions, containers and the transforms not imported,
and every torchvision rule in one list (:data:`RULES`)."""

from __future__ import annotations

from typing import Any

from . import torchvision_geometry, torchvision_pixels, torchvision_warps
from .bins import BINS
from .reference import tv, tv_seeded
from .rules import (
    REQUIRED,
    Args,
    Context,
    Conversion,
    Fixed,
    Refused,
    Rule,
    Verdict,
    container,
    conversion,
    drawn,
    lit,
    number,
    pair,
    step,
    unsupported,
)
from .torchvision_geometry import LIB

# ---- policies ---------------------------------------------------------------------------------

_POLICY_REASON = ("a policy picks its operations per sample at random: DALI draws with its own "
                  "random numbers and fills with grey 128 (torchvision: its fill, 0 by "
                  "default); compare the distributions, not single samples")
_POLICY_NAMES = {"imagenet": "image_net", "cifar10": "reduced_cifar10", "svhn": "svhn"}


def _rand_augment_convert(a: Args, c: Context) -> Conversion:
    bins = int(number(a["num_magnitude_bins"], "num_magnitude_bins"))
    m = int(number(a["magnitude"], "magnitude"))
    conv = Conversion([step("rand_augment", n=int(number(a["num_ops"], "num_ops")),
                            m=round(m * (BINS - 1) / max(1, bins - 1)))])
    if bins != BINS:
        conv.notes.append(f"magnitude {m} of {bins} bins is bin "
                          f"{conv.steps[0]['params']['m']} of DALI's 31")
    return conv


def _policy_fixed(cls: str, convert: Any) -> Any:
    def fixed(a: Args, shape: tuple[int, ...]) -> Fixed:
        kw = {k: v for k, v in a.items() if k not in ("interpolation", "fill", "policy")}
        if cls == "AutoAugment":
            from torchvision.transforms import AutoAugmentPolicy

            kw["policy"] = AutoAugmentPolicy(a["policy"])
        return Fixed(convert(a, Context(LIB)).steps, tv_seeded(cls, **kw),
                     "each library's own random draw")

    return fixed


def _auto_augment_convert(a: Args, c: Context) -> Conversion:
    policy = str(a["policy"]).lower()
    if policy not in _POLICY_NAMES:
        raise Refused(f"policy {a['policy']!r} is unknown")
    return Conversion([step("auto_augment", policy_name=_POLICY_NAMES[policy])])


def _policy_reverse(op: str) -> Any:
    def reverse(s: dict[str, Any]) -> str | None:
        if s["op"] != op:
            return None
        p = s["params"]
        if op == "rand_augment":
            return f"v2.RandAugment(num_ops={p['n']}, magnitude={p['m']})"
        if op == "trivial_augment":
            return f"v2.TrivialAugmentWide(num_magnitude_bins={p['num_magnitude_bins']})"
        names = {v: k for k, v in _POLICY_NAMES.items()}
        policy = names.get(p["policy_name"])
        return f"v2.AutoAugment(v2.AutoAugmentPolicy.{policy.upper()})" if policy else None

    return reverse


# ---- conversions and what is not imported ------------------------------------------------------


def _to_dtype_convert(a: Args, c: Context) -> Conversion:
    """ToTensor, ToDtype and ConvertImageDtype. From uint8 a float dtype scales to [0, 1]
    (ToDtype only with scale=True); float to float changes no value (torchvision never
    rescales there, so an earlier Normalize stays); float to uint8 with scale gives the grey
    levels back (x * 255.999, truncated)."""
    dtype = str(a.get("dtype") or "float32")
    scale = bool(a.get("scale", True))
    was_float = c.scaled is not None and "dtype" in a  # ToTensor reads images, not tensors
    if dtype in ("uint8",):
        if not was_float:
            return Conversion(tail={"layout": "CHW", "dtype": "uint8"},
                              verdict=Verdict("conversion", reason="uint8 CHW"))
        if c.mean is not None or scale != c.scaled:
            now = ("standardised values (after Normalize)" if c.mean is not None else
                   "floats in [0, 1]" if c.scaled else "floats in grey levels (0-255)")
            raise Refused(f"dtype uint8 with scale={scale} on {now}: torchvision "
                          f"{'multiplies them by 255 and ' if scale else ''}truncates them "
                          "to uint8, not the grey levels", nearest="the transform left out")
        c.scaled = None
        return Conversion(tail={"layout": "CHW", "dtype": "uint8", "mean": None, "std": None},
                          verdict=Verdict("conversion", reason="uint8 CHW: the grey levels "
                                          "again"))
    if dtype not in ("float32", "float", "float16", "half"):
        raise Refused(f"dtype {dtype}: the output tail gives float32, float16 or uint8")
    out = "float16" if dtype in ("float16", "half") else "float32"
    if was_float:  # torchvision converts float to float without rescaling
        return Conversion(tail={"layout": "CHW", "dtype": out}, verdict=Verdict(
            "conversion", reason=f"{out} CHW: float to float, the values unchanged"))
    c.scaled = scale
    return Conversion(tail={"layout": "CHW", "dtype": out, "mean": [0.0],
                            "std": [1.0 if scale else 1 / 255]})


_FLOAT = "float32 CHW scaled to [0, 1] (mean 0, std 1)"
_MODULE_LISTS = ("ModuleList", "Sequential")
"""What RandomApply (v1 and v2) and v1's Compose also iterate as their transforms (v2 takes
Sequential in neither; RandomChoice and RandomOrder take only a sequence)."""
RULES = (torchvision_geometry.RULES + torchvision_warps.RULES
         + torchvision_pixels.RULES) + [
    Rule(LIB, "RandAugment", ("num_ops", "magnitude", "num_magnitude_bins", "interpolation",
                              "fill"),
         {"num_ops": 2, "magnitude": 9, "num_magnitude_bins": 31, "interpolation": "nearest",
          "fill": None},
         "rand_augment (n = num_ops, m = magnitude of 31 bins)",
         Verdict("different", reason=_POLICY_REASON), convert=_rand_augment_convert,
         fixed=_policy_fixed("RandAugment", _rand_augment_convert),
         reverse=_policy_reverse("rand_augment")),
    Rule(LIB, "TrivialAugmentWide", ("num_magnitude_bins", "interpolation", "fill"),
         {"num_magnitude_bins": 31, "interpolation": "nearest", "fill": None},
         "trivial_augment (num_magnitude_bins)", Verdict("different", reason=_POLICY_REASON),
         convert=lambda a, c: Conversion([step("trivial_augment", num_magnitude_bins=int(
             number(a["num_magnitude_bins"], "num_magnitude_bins")))]),
         fixed=_policy_fixed("TrivialAugmentWide", lambda a, c: Conversion([step(
             "trivial_augment", num_magnitude_bins=int(a["num_magnitude_bins"]))])),
         reverse=_policy_reverse("trivial_augment")),
    Rule(LIB, "AutoAugment", ("policy", "interpolation", "fill"),
         {"policy": "imagenet", "interpolation": "nearest", "fill": None},
         "auto_augment (imagenet -> image_net, cifar10 -> reduced_cifar10, svhn)",
         Verdict("different", reason=_POLICY_REASON), convert=_auto_augment_convert,
         fixed=_policy_fixed("AutoAugment", _auto_augment_convert),
         reverse=_policy_reverse("auto_augment")),
    Rule(LIB, "JPEG", ("quality",), {"quality": REQUIRED},
         "jpeg_compression_distortion (quality, uniform for a range)",
         Verdict("equivalent", 16, 0.99, reason="different JPEG encoders"),
         convert=lambda a, c: Conversion([step("jpeg_compression_distortion", quality=drawn(
             *(pair(a["quality"], "quality") if isinstance(a["quality"], list)
               else (number(a["quality"], "quality"),) * 2), integer=True))]),
         fixed=lambda a, shape: Fixed(
             [step("jpeg_compression_distortion", quality=int(max(
                 [a["quality"]] if not isinstance(a["quality"], list) else a["quality"])))],
             tv("jpeg", int(max([a["quality"]] if not isinstance(a["quality"], list)
                                else a["quality"]))), "quality"),
         reverse=lambda s: (f"v2.JPEG(quality={lit(s, 'quality')})"
                            if s["op"] == "jpeg_compression_distortion"
                            and lit(s, "quality") is not None else None)),
    conversion(LIB, "ToTensor", (), {}, _FLOAT, _to_dtype_convert),
    conversion(LIB, "ToDtype", ("dtype", "scale"), {"dtype": REQUIRED, "scale": False},
               "dtype (float32 with scale: [0, 1])", _to_dtype_convert),
    conversion(LIB, "ConvertImageDtype", ("dtype",), {"dtype": "float32"}, _FLOAT,
               _to_dtype_convert),
    conversion(LIB, "PILToTensor", (), {}, "uint8 CHW",
               lambda a, c: Conversion(tail={"layout": "CHW", "dtype": "uint8"})),
    conversion(LIB, "ToImage", (), {}, "uint8 CHW",
               lambda a, c: Conversion(tail={"layout": "CHW", "dtype": "uint8"})),
    conversion(LIB, "ToPureTensor", (), {}, "no change", lambda a, c: Conversion()),
    conversion(LIB, "ToPILImage", ("mode",), {"mode": None}, "no change (DALI keeps arrays)",
               lambda a, c: Conversion()),
    unsupported(LIB, "Lambda", ("lambd",), {"lambd": REQUIRED},
                "custom Python code is never imported or run",
                "a custom operator (@custom_op) with the same code"),
    unsupported(LIB, "AugMix", ("severity", "mixture_width", "chain_depth", "alpha", "all_ops",
                                "interpolation", "fill"),
                {"severity": 3, "mixture_width": 3, "chain_depth": -1, "alpha": 1.0,
                 "all_ops": True, "interpolation": "bilinear", "fill": None},
                "mixing several augmented chains has no DALI policy", "trivial_augment"),
    unsupported(LIB, "ElasticTransform", ("alpha", "sigma", "interpolation", "fill"),
                {"alpha": 50.0, "sigma": 5.0, "interpolation": "bilinear", "fill": 0},
                "random elastic displacement fields have no CPU/GPU operator in the catalog",
                "water (sinusoidal displacement)"),
    unsupported(LIB, "RandomChannelPermutation", (), {},
                "no catalog operator permutes channels", "color_space_conversion (BGR)"),
    unsupported(LIB, "RandomPhotometricDistort", ("brightness", "contrast", "saturation", "hue",
                                                  "p"),
                {"brightness": (0.875, 1.125), "contrast": (0.5, 1.5), "saturation": (0.5, 1.5),
                 "hue": (-0.05, 0.05), "p": 0.5},
                "each part fires with its own coin and channels are permuted",
                "color_twist with the same ranges"),
    container(LIB, "Compose", ("transforms",), {"transforms": REQUIRED}, "the chain, in order",
              module_lists=_MODULE_LISTS),
    container(LIB, "Sequential", ("transforms",), {"transforms": REQUIRED},
              "the chain, in order (torch.nn.Sequential(t1, t2, ...))", varargs=True),
    container(LIB, "RandomApply", ("transforms", "p"), {"transforms": REQUIRED, "p": 0.5},
              "probability p on the step (several transforms: a one_of group applying them "
              "all, in order, on one coin)", module_lists=_MODULE_LISTS),
    container(LIB, "RandomChoice", ("transforms", "p"), {"transforms": REQUIRED, "p": None},
              "a one_of group that applies one of them per sample (weights p)"),
    unsupported(LIB, "RandomOrder", ("transforms",), {"transforms": REQUIRED},
                "a DALI pipeline applies its steps in one fixed order",
                "the transforms in the listed order"),
]
