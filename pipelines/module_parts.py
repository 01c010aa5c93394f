"""What surrounds a generated chain in a module: imports, graph helpers, custom functions, tail.

Shared by the preview module (:func:`pipelines.codegen.preview_module`) and the exported one
(:mod:`pipelines.export`), so both import, define and finish the same way.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Sequence
from typing import Any

from .catalog import AUTO_AUG_MODULES, Catalog
from .code_format import LINE_LIMIT, split_string
from .custom_code import STD_MODULES, CustomCode, check_together, import_lines, module_text
from .custom_probe import wrapper_source
from .embedded_helpers import deps, helper, helpers
from .label_code import LabelSet, label_tuple, tail_label_lines
from .preset import Output, Preset
from .preset_output import black_fill

TAIL_SLOT = 1_000_000
"""Seed slot of the training tail's mirror coin (far from every step's slots)."""


_CALLED = re.compile(r"\b(\w+)\(")
"""A name called in the code (``\\bname\\(`` for every name at once)."""


def used_helpers(code: str) -> list[str]:
    """Names of graph helpers the code calls, dependencies included, in a stable order.
    One scan of the code for every called name (a search per helper, 43 of them, took a
    third of a preview module's making: every edit of the builder makes one)."""
    called = deps()
    used = set(_CALLED.findall(code)).intersection(helpers())
    for h in list(used):
        used.update(called.get(h, ()))
    return [h for h in helpers() if h in used]


def custom_codes(preset: Preset, catalog: Catalog) -> list[CustomCode]:
    """The copies of the user-defined functions the chain runs, each once (ValueError when
    two of them need one name to be different things)."""
    found = [(s.op, code) for _, s in preset.active_ops()
             if (code := catalog[s.op].custom_code) is not None]
    check_together(found)
    unique: dict[str, CustomCode] = {}
    for _, code in found:
        unique.setdefault(code.function_name, code)
    return list(unique.values())


def custom_sources(preset: Preset, catalog: Catalog) -> str:
    """Source of the user-defined functions the chain runs (each once, with the constants they
    read), after the wrapper that checks what they return."""
    return module_text(custom_codes(preset, catalog), wrapper_source())


def custom_imports(preset: Preset, catalog: Catalog) -> list[str]:
    """Import lines the user-defined functions the chain runs need (for :func:`imports_for`)."""
    return import_lines(custom_codes(preset, catalog))


def _import_order(line: str) -> tuple[str, str]:
    """isort's order of ``import x [as y]`` lines: by module, ignoring case."""
    return line.split()[1].lower(), line


def helper_source(names: list[str]) -> str:
    return "\n\n\n".join(_source(n) for n in names)


@functools.cache
def _source(name: str) -> str:
    """A helper's source, read once (``inspect`` tokenizes its file for each reading)."""
    return inspect.getsource(helper(name)).rstrip()


def imports_for(code: str, extra: Sequence[str] = ()) -> list[str]:
    """Import lines (isort order) for what the code uses, and the ``extra`` lines
    (``import x [as y]``) that custom functions need (:func:`custom_imports`)."""
    lines = []
    std = [f"import {m}" for m in STD_MODULES if re.search(rf"\b{m}\.", code)]
    std += [e for e in extra if e.split()[1].split(".")[0] in sys.stdlib_module_names]
    if std:
        lines += sorted(set(std), key=_import_order) + [""]
    third = [e for e in extra if e not in std]
    if re.search(r"\bdmath\.", code):
        third.append("import nvidia.dali.math as dmath")
    if re.search(r"\bnp\.", code):
        third.append("import numpy as np")
    lines += sorted(set(third), key=_import_order)
    dali = ["fn"]
    if "@pipeline_def" in code:
        dali.append("pipeline_def")
    dali.append("types")
    lines.append(f"from nvidia.dali import {', '.join(dali)}")
    aa = [m for m in AUTO_AUG_MODULES if re.search(rf"\b{m}\.", code)]
    if aa:
        line = f"from nvidia.dali.auto_aug import {', '.join(aa)}"
        if len(line) > LINE_LIMIT:
            line = "from nvidia.dali.auto_aug import (\n" + "".join(f"    {m},\n" for m in aa) + ")"
        lines.append(line)
    core = [n for n in ("select", "signed_bin") if re.search(rf"(?<![\w.]){n}\(", code)]
    if core:
        lines.append(f"from nvidia.dali.auto_aug.core import {', '.join(core)}")
    if "DataNode" in code:
        lines.append("from nvidia.dali.data_node import DataNode")
    if "@do_not_convert" in code:
        lines.append("from nvidia.dali.pipeline import do_not_convert")
    return lines


def tail_lines(output: Output, labels: LabelSet | None = None, preview: bool = False,
               kinds: list[tuple[Any, ...]] | None = None) -> list[str]:
    """Body of ``finish(images, seed)``: the training tail declared in the preset's output.
    With ``labels`` (``finish(images, seed, labels)``) the resize, the centre crop and the
    mirror move the labels too (:func:`label_code.tail_label_lines`); the ``preview``'s also
    returns the centre crop's kept fractions (a list: one entry, or none without a crop),
    or after the run the moves' inputs (their kinds appended to ``kinds``: a list of the
    tail's own, empty when given)."""
    resize = (f"images = fn.resize(images, resize_shorter={output.resize_shorter!r})"
              if output.resize_shorter else None)
    mirror = (f"fn.random.coin_flip(probability={output.mirror_probability!r}, "
              f"seed=_op_seed(seed, {TAIL_SLOT}))")
    lines = [resize] if resize else []
    if labels is not None:
        lines = tail_label_lines(labels, resize, output.crop, mirror
                                 if output.mirror_probability > 0 else None, preview, kinds)
        mirror = "mirror"
    args = []
    if output.crop:  # an image smaller than the crop is padded black (torchvision's CenterCrop)
        args += [f"crop=({output.crop[0]}, {output.crop[1]})", 'out_of_bounds_policy="pad"']
        args += [f"fill_values={black_fill(output)}"] if output.mean else []
    if output.mean:
        args.append("mean=[" + ", ".join(f"{m!r} * 255" for m in output.mean) + "]")
    if output.std:
        args.append("std=[" + ", ".join(f"{s!r} * 255" for s in output.std) + "]")
    if output.mirror_probability > 0:
        args.append(f"mirror={mirror}")
    dtype = {"float32": "FLOAT", "float16": "FLOAT16", "uint8": "UINT8"}[output.dtype]
    args += [f"dtype=types.{dtype}", f'output_layout="{output.layout}"']
    lines.append(f"images = fn.crop_mirror_normalize(images, {', '.join(args)})")
    kept = ", [kept_tail]" if output.crop else ", []"
    if labels is not None and labels.after_run:  # the moves tail_label_lines wrote, if any
        kept = ", after_run" if kinds else ", []"
    lines.append("return images" if labels is None else
                 f"return images, {label_tuple(labels)}" + (kept if preview else ""))
    return lines


def pipeline_checks(preset: Preset, catalog: Catalog) -> str:
    """Lines opening ``create_pipeline`` that refuse, naming the operators, what DALI would
    refuse with an assert when building: ``device_id=None`` (the CPU, the script's default
    ``--device cpu``) for operators it runs on the GPU only ('Operator "Jitter" not
    registered for cpu'), and checkpoints for operators it cannot checkpoint (clahe). ""
    for a chain that has neither."""
    gpu = {s.op: catalog[s.op] for _, s in preset.active_ops()
           if "cpu" not in catalog[s.op].devices}
    frozen = sorted({s.op for _, s in preset.active_ops() if not catalog[s.op].checkpoints})
    lines = []
    if gpu:
        steps = ", ".join(f"{op} ({spec.gpu_reason or 'DALI has no CPU version'})"
                          for op, spec in gpu.items())
        lines += _raise("device_id is None", f"device_id None (the CPU) cannot run this "
                        f"chain: {steps}; pass a GPU's device_id (the script: --device gpu)")
    if frozen:
        lines += _raise("enable_checkpointing or checkpoint is not None",
                        f"DALI cannot checkpoint {', '.join(frozen)}, so this chain can "
                        "neither save nor restore checkpoints; run it without "
                        "enable_checkpointing and checkpoint (the script: without "
                        "--checkpoint-every and --restore)")
    return "".join(line + "\n" for line in lines)


def _raise(condition: str, message: str) -> list[str]:
    return [f"    if {condition}:", "        raise ValueError(",
            *split_string(message, "            "), "        )"]
