"""The preview of an annotated dataset, lined up with the exported module's first batch.

:func:`load_annotated` loads a COCO dataset into a :class:`~pipelines.engine.PreviewEngine`:
the images in the order ``fn.readers.coco`` reads them (by image id, the shard's first ones),
each with its boxes, classes and keypoints as :func:`pipelines.annotations.load_coco` gives
them (the reader's own bits) and its mask rasterised by DALI's reader
(:func:`pipelines.annotations.dali_masks`). At original size (no ``max_side``), draw 0 of a
render is then the exported module's first unshuffled batch with labels
(:func:`pipelines.export.export_code` with the :class:`LabelSet` returned here).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .annotations import AnnotationProblem, Annotations, dali_masks, load_coco
from .engine import MAX_BATCH
from .label_code import LabelSet
from .label_render import SampleLabels
from .shards import first_indices, shard_range

DEFAULT_BATCH = 16
"""Images a preview loads when no batch size is given (at most the shard's)."""


@dataclass
class AnnotatedBatch:
    """What :func:`load_annotated` loaded: the files (reader order), the chain's labels and
    the annotations left out (each named, with its reason)."""

    files: list[str]
    labels: LabelSet
    problems: list[AnnotationProblem]
    annotations: Annotations


def dataset_labels(annotations: Annotations, min_kept: float) -> LabelSet:
    """The labels a chain over this dataset carries: masks when any annotation has a
    segmentation (images without one get an empty mask), as the export reads them."""
    return LabelSet(masks=any(img.has_masks for img in annotations.images), min_kept=min_kept)


def load_annotated(engine: Any, annotations_file: str | Path, images_dir: str | Path, *,
                   batch_size: int | None = None, shard_id: int = 0, num_shards: int = 1,
                   max_side: int | None = None) -> AnnotatedBatch:
    """Load the first ``batch_size`` images shard ``shard_id`` of ``num_shards`` reads, with
    their labels, into ``engine`` (render them with :func:`pipelines.shards.shard_preset`).

    Bad annotations are left out and returned as problems; ValueError when no image is left
    or one of the batch's images cannot be decoded (the batch would no longer be the
    reader's)."""
    images_dir = Path(images_dir)
    annotations = load_coco(annotations_file, images_dir)
    n = len(annotations.images)
    if n == 0:
        raise ValueError(f"{Path(annotations_file).name}: no image is left to read (each "
                         "image needs a valid entry and its file in the images folder)")
    if batch_size is None:
        batch_size = min(len(shard_range(n, shard_id, num_shards)), DEFAULT_BATCH)
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch size {batch_size} is not allowed for a preview; expected 1 "
                         f"to {MAX_BATCH}")
    shard_range(n, shard_id, num_shards)
    picked = [annotations.images[i] for i in first_indices(n, shard_id, num_shards, batch_size)]
    labels = dataset_labels(annotations, engine.min_kept)
    masks = {}
    if labels.masks:
        with tempfile.TemporaryDirectory(prefix="dali-gallery-coco-") as tmp:
            clean = annotations.write_clean(tmp)  # what passed the checks: safe for DALI
            masks = dali_masks(clean, images_dir, [img.file for img in picked])
    problems = engine.set_images([img.file for img in picked],  # relative to root
                                 max_side=max_side, root=images_dir)
    if problems:
        listed = "; ".join(f"{p.name}: {p.reason}" for p in problems[:5])
        raise ValueError(f"{len(problems)} of the batch's images cannot be previewed "
                         f"({listed})")
    engine.set_labels([SampleLabels(img.boxes, img.classes, img.keypoints,
                                    masks[img.file] if labels.masks else None)
                       for img in picked])
    return AnnotatedBatch([img.file for img in picked], labels, annotations.problems,
                          annotations)
