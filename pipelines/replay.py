"""What the training pipeline gave a shard at step N: replayed by the exported module itself.

"What did the model see at step N?" has one trustworthy answer: batch N of the training
pipeline. :func:`replay` generates the exported module from the preset, imports it and calls
its ``batch_at`` (the function the exported script runs) on the chosen device, from the start
or from a DALI checkpoint the training run saved, so the batch is the training pipeline's by
construction, not an imitation. :func:`shard_preview` is the cheap question, "what does shard s
train on first?": the preview engine on the shard's first files with the shard's seed.
"""

from __future__ import annotations

import itertools
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .annotated_preview import dataset_labels
from .annotations import AnnotationProblem, load_coco
from .catalog import CATALOG, Catalog
from .device import Device, resolve
from .export import export_code
from .folder_preview import folder_preview
from .generated_module import import_source
from .labels import DEFAULT_MIN_KEPT
from .preset import Preset, load
from .shards import ShardBatch, check_shard, shard_range, training_files
from .step_error import StepError, clean_message

MAX_REPLAY_BATCHES = 10_000
"""The most batches one replay runs (from the start or from the checkpoint restored): further
steps need a checkpoint saved closer to them (``--checkpoint-every``)."""
MAX_REPLAY_BATCH_SIZE = 1024
"""The largest training batch a replay decodes and augments."""
_names = itertools.count()


@dataclass
class Replayed:
    """Batch ``iteration`` of a shard, as the training pipeline produced it."""

    images: list[np.ndarray]
    labels: np.ndarray
    iteration: int
    device: Device
    ms: float
    annotated: dict[str, list[np.ndarray]] | None = None
    """With annotations: each sample's "boxes", "labels", "keypoints" (and "masks"); then
    ``labels`` holds the sample indices."""
    problems: list[AnnotationProblem] = field(default_factory=list)
    """Annotations left out of the cleaned file the replay read."""


def shard_preview(engine: Any, preset: Preset, file_root: str | Path, *, shard_id: int,
                  num_shards: int, batch_size: int | None = None,
                  max_side: int | None = None) -> tuple[Preset, ShardBatch]:
    """Load the shard's first ``batch_size`` files (default: its files, at most 16) into the
    preview ``engine`` and return the preset to render them with: draw 0 of the render is then
    the exported pipeline's first unshuffled batch of that shard
    (:func:`pipelines.folder_preview.folder_preview`). A file the preview cannot load is an
    error here (the batch would no longer be the shard's)."""
    root = Path(file_root)
    if not root.is_dir():
        raise ValueError(f"{str(root)!r} is not a folder; a shard is a slice of a folder")
    view = folder_preview(engine, preset, root, shard_id=shard_id, num_shards=num_shards,
                          batch_size=batch_size, max_side=max_side)
    if view.skipped:
        listed = "; ".join(f"{p.name}: {p.reason}" for p in view.skipped[:5])
        raise ValueError(f"shard {shard_id} of {num_shards}: {len(view.skipped)} of its first "
                         f"files cannot be previewed ({listed})")
    return view.preset, view.batch


def replay(preset: Preset | dict | str, file_root: str | Path, *, iteration: int,
           batch_size: int, shard_id: int = 0, num_shards: int = 1, device: str = "auto",
           random_shuffle: bool = True, restore: str | Path | None = None,
           num_threads: int = 2, catalog: Catalog = CATALOG,
           annotations: str | Path | None = None,
           min_kept: float = DEFAULT_MIN_KEPT) -> Replayed:
    """Batch ``iteration`` (0 = the first) that the exported training pipeline gives shard
    ``shard_id`` of ``num_shards`` with these settings (those of the training run), run by
    that pipeline: from the start, or from ``restore``, a checkpoint file its script saved.

    Budgets are checked before any pipeline is built: the batch size, the number of batches
    to run (:data:`MAX_REPLAY_BATCHES`), the shard against the folder's files, the operators
    against the device and, when restoring, against what DALI can checkpoint.

    ``annotations``: a COCO file for the folder; the module with labels reads its cleaned
    copy (bad entries left out, returned as ``problems``) and returns the moved labels."""
    preset = load(preset, catalog)
    dev = resolve(device)
    check_shard(shard_id, num_shards)
    if not 1 <= batch_size <= MAX_REPLAY_BATCH_SIZE:
        raise ValueError(f"batch size {batch_size} is not allowed; expected 1 to "
                         f"{MAX_REPLAY_BATCH_SIZE}")
    if iteration < 0:
        raise ValueError(f"iteration {iteration} is not allowed; expected 0 or more")
    root = Path(file_root)
    if not root.is_dir():
        raise ValueError(f"{str(root)!r} is not a folder")
    coco = load_coco(annotations, root) if annotations is not None else None
    files = training_files(root) if coco is None else [img.file for img in coco.images]
    if not files:
        raise ValueError(f"{str(root)!r} has no images where the training pipeline reads them "
                         "(a flat folder of images, class subfolders, or the annotated files)")
    shard_range(len(files), shard_id, num_shards)
    _check_ops(preset, dev, restore is not None, catalog)
    labels_set = None if coco is None else dataset_labels(coco, min_kept)
    code = export_code(preset, catalog, labels_set)
    tmp = Path(tempfile.mkdtemp(prefix="dali-gallery-replay-"))
    name = f"dali_gallery_replay_{next(_names)}"
    try:
        module = import_source(code, tmp, name)
        data = [str(root)] if coco is None else [str(root), str(coco.write_clean(tmp))]
        t0 = time.perf_counter()
        try:
            images, labels = module.batch_at(
                *data, batch_size, iteration=iteration,
                device_id=0 if dev == "gpu" else None, seed=preset.seed, shard_id=shard_id,
                num_shards=num_shards, random_shuffle=random_shuffle,
                restore=str(restore) if restore is not None else None,
                num_threads=num_threads, max_batches=MAX_REPLAY_BATCHES)
        except RuntimeError as e:  # DALI's own failure (a file it cannot decode, ...)
            raise StepError(clean_message(str(e))) from e
        ms = (time.perf_counter() - t0) * 1000
    finally:
        sys.modules.pop(name, None)
        shutil.rmtree(tmp, ignore_errors=True)
    if coco is None:
        return Replayed(images, labels, iteration, dev, ms)
    return Replayed(images, np.arange(len(images)), iteration, dev, ms, labels, coco.problems)


def _check_ops(preset: Preset, device: Device, restoring: bool, catalog: Catalog) -> None:
    for i, step in preset.active_ops():
        spec = catalog[step.op]
        why = spec.unavailable_on(device)
        if why is not None:
            raise StepError(why, i, step.op)
        if restoring and not spec.checkpoints:
            raise StepError("DALI cannot checkpoint this operator, so the pipeline cannot be "
                            "restored from a checkpoint; replay from the start (omit --restore)",
                            i, step.op)


def batch_sheet(images: list[np.ndarray], labels: np.ndarray, tile: int = 192) -> Any:
    """The batch side by side (8 per row), each tile captioned with its label: a picture of
    what the model saw. Display only: the pixels are the replayed batch's."""
    from PIL import Image, ImageDraw

    from .display import to_display
    from .grid import LABEL_H

    cols = min(8, len(images))
    rows = -(-len(images) // cols)
    sheet = Image.new("RGB", (cols * tile, rows * (tile + LABEL_H)), (32, 32, 32))
    draw = ImageDraw.Draw(sheet)
    for k, (img, label) in enumerate(zip(images, labels.tolist(), strict=True)):
        pic = Image.fromarray(to_display(img))
        pic.thumbnail((tile, tile))
        x, y = (k % cols) * tile, (k // cols) * (tile + LABEL_H)
        sheet.paste(pic, (x + (tile - pic.width) // 2, y + LABEL_H + (tile - pic.height) // 2))
        draw.text((x + 3, y + 1), f"sample {k}, label {label}", fill=(230, 230, 230))
    return sheet
