"""The exported module with labels: a COCO dataset read by ``fn.readers.coco``, its boxes,
keypoints (and masks) moved through the chain with the pixels.

The chain is the preview's (:func:`pipelines.codegen.chain_source` with a :class:`LabelSet`),
written with literal values; the keypoints, which the reader does not output, come from a
table the module builds from the annotations file (:mod:`pipelines.coco_keypoints`, embedded
verbatim). :func:`pipelines.export.export_code` assembles the module from these parts.

What cannot follow the labels is refused before anything is written: an operator whose
catalog rule is :class:`pipelines.labels.Refuse` (:class:`LabelRefused`, naming it). The
training tail's resize, centre crop and mirror move the labels too
(:func:`pipelines.label_code.tail_label_lines`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import coco_check, coco_keypoints
from .catalog import Catalog
from .code_format import function
from .codegen import Chain, chain_source
from .export_labels_template import LABELS_PIPELINE_TEMPLATE, MASK_LINES
from .export_template import SOURCE_ARG, SOURCE_DOC, SOURCE_LINE, SOURCE_PARAM
from .image_files import readable
from .label_code import LabelSet, refusals, unfired_kept
from .label_render import MASK_ID_MAX, SampleLabels
from .module_parts import pipeline_checks
from .preset import Preset
from .preset_document import MAX_QUOTE, _Quoter, quote
from .preset_types import cut
from .shards import check_shard, shard_seed

KEYS = {"boxes": "boxes", "classes": "labels", "keypoints": "keypoints", "masks": "masks"}
"""The chain's label variables -> their names in ``batch_at``, the ``.npz`` and PyTorch."""
KEY_DOC = {"boxes": "float32 N x 4", "labels": "int32 N", "keypoints": "float32 N x K x 3",
           "masks": "uint8 H x W x 1"}
"""What each label array of the ``.npz`` holds (the script's ``main`` docstring)."""
FINISH = "    images, labels = finish(images, labels, seed=aug_seed)\n"
QUOTING = (readable, cut, _Quoter, quote)
"""How the annotation checks (:mod:`pipelines.coco_check`) name files and quote values."""
CHECK_CONSTANTS = [f"MAX_QUOTE = {MAX_QUOTE}",
                   f"SIZE_THRESHOLD = np.float32({coco_check.SIZE_THRESHOLD!s})",
                   f"BOX_TOLERANCE = {coco_check.BOX_TOLERANCE!r}",
                   f"INT32_MAX = {coco_check.INT32_MAX}", f"MASK_ID_MAX = {MASK_ID_MAX}"]
"""The constants those checks and :func:`coco_keypoints.keypoint_table` read, written from
their values."""


@dataclass(frozen=True)
class LabelModule:
    """What the module with labels puts in place of the plain module's parts."""

    augment: str
    pipeline: str
    embedded: tuple[Callable[..., object], ...]
    constants: list[str]
    usage: list[str]
    """Docstring lines after the steps line: the box layout and how to run the script."""


def export_body(chain: Chain) -> list[str]:
    """The chain's statements as the training module runs them: without the kept fractions
    of samples a step skipped (the preview reports them; training has no use for them) and
    with the labels returned as a plain tuple (ruff's layout)."""
    assert chain.labels is not None
    unused = {unfired_kept(f"{s}" if c is None else f"{s}_{c}") for s, c in chain.kept}
    body = [line for line in chain.body if line not in unused]
    body[-1] = f"return images, ({', '.join(chain.labels.names)})"
    return body


def label_module(preset: Preset, catalog: Catalog, labels: LabelSet) -> LabelModule:
    """The parts of the module with labels (LabelRefused or ValueError for what cannot move
    labels)."""
    refused = refusals(preset, catalog)
    if refused:
        raise refused[0]
    chain = chain_source(preset, "export", catalog, labels)
    aug = function("augment", "images, labels, seed=SEED" + SOURCE_PARAM * chain.uses_source,
                   "The augmentation chain, one block per step; labels move with the pixels."
                   + SOURCE_DOC * chain.uses_source,
                   export_body(chain))
    names = labels.names
    keys = [KEYS[n] for n in names]
    reader = ["jpegs", "boxes", "classes", *(["masks"] if labels.masks else []), "image_ids"]
    pipeline = LABELS_PIPELINE_TEMPLATE.format(
        conditionals=chain.conditionals,
        checks=pipeline_checks(preset, catalog),
        source=SOURCE_ARG * chain.uses_source,
        source_line=SOURCE_LINE * chain.uses_source,
        outputs=", ".join(keys),
        reader_outputs=", ".join(reader),
        masks=labels.masks,
        mask_lines=MASK_LINES if labels.masks else "",
        names=", ".join(names),
        finish=FINISH if preset.output is not None else "",
        and_masks=" and masks" if labels.masks else "",
        masks_doc="\n    Masks uint8 (H, W, 1): the category id of each pixel (0: none)."
        if labels.masks else "",
        min_kept=f"{labels.min_kept:g}",
        keys=", ".join(f'"{k}"' for k in keys),
        npz_keys=",".join(f"\n    {k}_0000 ({KEY_DOC[k]})" for k in keys),
    )
    usage = [
        "Reads a COCO dataset (fn.readers.coco): images with their boxes, labels"
        + (", keypoints and masks." if labels.masks else " and keypoints."),
        "",
        "Boxes are float32 (N, 4): left, top, right, bottom relative to the output image "
        "(0..1); labels are the category ids; keypoints (N, K, 3) relative x, y and the "
        "COCO visibility. Every step moves them with the pixels.",
        "",
        f"Seed {preset.seed}. Run as a script to write the first batch:",
        "",
        "    python THIS_FILE.py --images DIR --annotations FILE.json --batch-size 8 "
        "--no-shuffle",
        "",
        "(--device, --shard, --iteration, --checkpoint-every and --restore as in the module "
        "without labels) or import create_pipeline() in a training script (a PyTorch "
        "detection example is near the end of the file).",
    ]
    constants = ["LABEL_KEYS = (" + ", ".join(f'"{k}"' for k in keys) + ")", *CHECK_CONSTANTS]
    embedded = (shard_seed, check_shard, *coco_keypoints.EMBEDDED, *QUOTING,
                *coco_check.EMBEDDED)
    return LabelModule(aug, pipeline, embedded, constants, usage)


def label_columns(labels: Sequence[SampleLabels]) -> dict[str, list[np.ndarray]]:
    """Preview samples' labels as the exported ``batch_at`` returns them: per key, one array
    per sample ("masks" when every sample has one)."""
    columns: dict[str, list[np.ndarray]] = {
        "boxes": [s.boxes for s in labels],
        "labels": [s.classes for s in labels],
        "keypoints": [s.keypoints for s in labels],
    }
    masks = [s.mask for s in labels]
    if labels and all(m is not None for m in masks):
        columns["masks"] = [m for m in masks if m is not None]
    return columns


def save_label_npz(path: str | Path, images: Sequence[np.ndarray],
                   labels: Mapping[str, Sequence[np.ndarray]]) -> None:
    """The exported script's ``--annotations`` layout: for each sample in batch order,
    image_0000 then boxes_0000, labels_0000, keypoints_0000 (and masks_0000)."""
    arrays: dict[str, np.ndarray] = {}
    for i, image in enumerate(images):
        arrays[f"image_{i:04d}"] = image
        for key, column in labels.items():
            if len(column) != len(images):
                raise ValueError(f"{len(images)} images but {len(column)} {key}")
            arrays[f"{key}_{i:04d}"] = column[i]
    np.savez(path, **arrays)
