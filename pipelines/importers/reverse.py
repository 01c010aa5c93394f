"""The round trip back: a preset as torchvision v2 or Albumentations code, where steps have one.

Each step is written by the first rule of the target library whose ``reverse`` accepts it
(the same table the import reads), so importing the written code gives the same steps back. A
step with no equivalent is kept as a comment naming it; the output tail becomes the library's
resize, centre crop, dtype conversion and normalisation, with the same numbers, and a tail
setting the library cannot write exactly becomes a ``# output.<setting>`` comment saying what
differs. A group becomes the container the importer reads back into the same group
(:mod:`.containers`).
"""

from __future__ import annotations

import math
from typing import Any

from ..catalog import CATALOG, Catalog
from ..preset import GROUP_KEY, Preset, load
from .rules import fmt
from .table import all_rules

LIBRARIES = ("torchvision", "albumentations")
_PREFIX = {"torchvision": "v2", "albumentations": "A"}


def step_code(step: dict[str, Any], library: str) -> str | None:
    """Library code for one step (a preset step as a dict), or None without an equivalent."""
    for rule in all_rules().values():
        if rule.library != library or rule.reverse is None:
            continue
        code = rule.reverse(step)
        if code is None:
            continue
        p = float(step.get("probability", 1.0))
        if "p" not in rule.params and p < 1:
            code = (f"v2.RandomApply([{code}], p={fmt(p)})" if library == "torchvision"
                    else f"A.Sequential([{code}], p={fmt(p)})")
        return code
    return None


def group_code(group: dict[str, Any], library: str) -> str | None:
    """Library code for a group (as a dict), or None without an equivalent: all children
    on one coin (RandomApply / Sequential), one of them (RandomChoice / OneOf) or n of them
    uniformly (Albumentations' SomeOf)."""
    kids = [(j, c) for j, c in enumerate(group[GROUP_KEY]) if c.get("enabled", True)]
    raw = group.get("weights")
    weights = [raw[j] for j, _ in kids] if raw is not None else [1.0] * len(kids)
    p, pick, tv = float(group["probability"]), group["pick"], library == "torchvision"
    if max(weights) > 1 and not tv:  # Albumentations takes a p in [0, 1]; ratios count
        weights = [w / sum(weights) for w in weights]
    if pick == 1 and not tv:  # OneOf: a child's p is its weight and the picked one is forced
        codes = [step_code({**c, "probability": w}, library) if c["probability"] >= 1 else
                 _wrapped(step_code(c, library), w) for (_, c), w in zip(kids, weights,
                                                                         strict=True)]
    else:
        codes = [step_code(c, library) for _, c in kids]
    if any(c is None for c in codes):
        return None
    inner = "[" + ", ".join(str(c) for c in codes) + "]"
    if pick >= len(kids):
        return f"v2.RandomApply({inner}, p={fmt(p)})" if tv else \
            f"A.Sequential({inner}, p={fmt(p)})"
    if pick > 1:
        return None if tv or raw is not None else f"A.SomeOf({inner}, n={pick}, p={fmt(p)})"
    if not tv:
        return f"A.OneOf({inner}, p={fmt(p)})"
    ws = "" if raw is None else ", p=[" + ", ".join(fmt(w) for w in weights) + "]"
    code = f"v2.RandomChoice({inner}{ws})"
    return code if p >= 1 else f"v2.RandomApply([{code}], p={fmt(p)})"


def _wrapped(code: str | None, weight: float) -> str | None:
    """A child that fires with its own p inside Albumentations' OneOf: a Sequential whose p
    is the child's weight (OneOf forces it; the child inside keeps its p)."""
    return None if code is None else f"A.Sequential([{code}], p={fmt(weight)})"


def to_library_code(preset: Preset | dict[str, Any] | str, library: str,
                    catalog: Catalog = CATALOG) -> str:
    """A module that defines ``transform``: the preset's steps in ``library``."""
    if library not in LIBRARIES:
        raise ValueError(f"library {library!r} is not allowed; expected one of "
                         f"{', '.join(LIBRARIES)}")
    preset = load(preset, catalog)
    lines: list[str] = []
    missing = 0
    for i, s in preset.active_steps():
        d = s.to_dict()
        code = step_code(d, library) if "op" in d else group_code(d, library)
        if code is None:
            missing += 1
            lines.append(f"# step {i} ({d.get('op', GROUP_KEY)}): no {library} "
                         f"equivalent{_why(d)}")
        else:
            lines.append(code + ",")
    tail, differ = _tail(preset, library)
    lines += tail
    title = preset.name or "dali-gallery preset"
    header = [f'"""{library} version of "{_safe(title)}", written by dali-gallery.', ""]
    if missing:
        header.append(f"{missing} step(s) have no {library} equivalent and are comments below.")
    if differ:
        header.append(f"{differ} output setting(s) differ from DALI's tail: see the "
                      "# output comments below.")
    header.append('"""')
    if library == "torchvision":
        imports = ["import torch", "from torchvision.transforms import v2"]
        open_, close = "transform = v2.Compose([", "])"
    else:
        imports = ["import albumentations as A"]
        if any("ToTensorV2" in line for line in lines):
            imports.append("from albumentations.pytorch import ToTensorV2")
        open_, close = "transform = A.Compose([", "])"
    body = [open_] + [f"    {line}" for line in lines] + [close]
    return "\n".join(header + [""] + imports + ["", ""] + body) + "\n"


def _why(step: dict[str, Any]) -> str:
    """The value that kept a step out, where it is one: both libraries resize to whole
    sizes, so a fractional ``resize_shorter`` is a comment rather than a truncated size."""
    size = step.get("params", {}).get("resize_shorter")
    if isinstance(size, (int, float)) and not float(size).is_integer():
        return f" (resize_shorter {fmt(size)}: the library takes whole sizes)"
    return ""


def _tail(preset: Preset, library: str) -> tuple[list[str], int]:
    """The output tail as the library's transforms, and how many of its settings differ: a
    setting the library cannot write exactly gets a ``# output.<setting>`` comment saying
    what the code does instead, so the written code never differs from DALI silently.

    DALI's tail computes ``(x - mean * 255) / (std * 255)`` on pixels x in 0..255 (mean 0 and
    std 1/255 when absent, :func:`..preset_output.check_combination`); after a scaled
    ``ToDtype`` / in ``Normalize(max_pixel_value=255)`` that is mean and std as fractions,
    so a missing std is written as 1 / 255 (not 1, which would divide by 255)."""
    out = preset.output
    if out is None:
        return [], 0
    tv, lines, notes = library == "torchvision", [], 0
    if out.resize_shorter:
        size = math.floor(out.resize_shorter + 0.5)  # DALI rounds the shorter side half up
        if size != out.resize_shorter:
            notes += 1
            lines.append(f"# output.resize_shorter {fmt(out.resize_shorter)}: {library} takes "
                         f"whole sizes; {size} is DALI's shorter side, but DALI scales by "
                         f"{fmt(out.resize_shorter)} / shorter side (longer side +-1 px, "
                         "slightly other sampling)")
        # Albumentations' INTER_AREA (3): antialiased, as the tail's resize
        lines.append(f"v2.Resize({size})," if tv else
                     f"A.SmallestMaxSize(max_size={size}, interpolation=3),")
    if out.crop:
        lines.append(f"v2.CenterCrop(({out.crop[0]}, {out.crop[1]}))," if tv else
                     f"A.CenterCrop({out.crop[0]}, {out.crop[1]}, pad_if_needed=True),")
    if out.mirror_probability:
        flip = "v2.RandomHorizontalFlip" if tv else "A.HorizontalFlip"
        lines.append(f"{flip}(p={fmt(out.mirror_probability)}),")
    # a uint8 tail's mean and std leave 0..255 as it is (the only ones validation allows)
    normalised = out.dtype != "uint8" and bool(out.mean or out.std)
    mean, std = _triple(out.mean, "0"), _triple(out.std, "1 / 255")
    if tv:
        lines.append("v2.ToImage(),")
        if out.dtype != "uint8":
            lines.append(f"v2.ToDtype(torch.{out.dtype}, scale={normalised}),")
        if normalised:
            lines.append(f"v2.Normalize(mean={mean}, std={std}),")
        if out.layout == "HWC":
            notes += 1
            lines.append("# output.layout 'HWC': torchvision tensors are CHW, as written "
                         "here; permute(1, 2, 0) the result for DALI's HWC")
        return lines, notes
    if normalised:
        lines.append(f"A.Normalize(mean={mean}, std={std}, max_pixel_value=255.0),")
    elif out.dtype != "uint8":
        lines.append("A.ToFloat(max_value=1.0),")
    if out.dtype == "float16":
        notes += 1
        lines.append("# output.dtype 'float16': Albumentations gives float32 here; cast the "
                     "result with .astype(numpy.float16) (.half() after ToTensorV2)")
    if out.layout == "CHW":
        lines.append("ToTensorV2(),")
    return lines, notes


def _triple(values: tuple[float, ...] | None, default: str) -> str:
    vals = [fmt(v) for v in values] if values else [default]
    if len(vals) == 1:
        vals = vals * 3
    return "(" + ", ".join(vals) + ")"


def _safe(text: str) -> str:
    return text.replace("\\", "").replace('"""', "").replace("\n", " ")[:120]
