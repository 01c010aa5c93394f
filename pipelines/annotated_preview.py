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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .annotations import AnnotationProblem, Annotations, ImageLabels, dali_masks, load_coco
from .coco_keypoints import unfit_for_masks
from .engine import MAX_BATCH
from .image_decode import decoded_size
from .image_files import readable
from .label_code import LabelSet
from .label_render import MASK_ID_MAX, SampleLabels
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
    warnings: list[AnnotationProblem] = field(default_factory=list)
    """Images kept whose labels will not match their pixels (:func:`size_problem`)."""


def dataset_labels(annotations: Annotations, min_kept: float) -> LabelSet:
    """The labels a chain over this dataset carries: masks when any annotation has a
    segmentation (images without one get an empty mask), as the export reads them, and
    every category id fits the uint8 masks (else :func:`masks_problem` says why not)."""
    masks = (any(img.has_masks for img in annotations.images)
             and not unfit_for_masks(annotations.categories))
    return LabelSet(masks=masks, min_kept=min_kept)


def masks_problem(annotations: Annotations, origin: str) -> AnnotationProblem | None:
    """Why a dataset with segmentations carries no masks (None: it does, or has none);
    ``origin`` names the annotations file."""
    wide = unfit_for_masks(annotations.categories)
    if not wide or not any(img.has_masks for img in annotations.images):
        return None
    return AnnotationProblem(origin, f"category ids {wide[:5]} do not fit the "
                             f"uint8 masks (1 to {MASK_ID_MAX}): masks are off, boxes and "
                             "keypoints are carried (export with --labels boxes)")


def size_problem(img: ImageLabels, decoded: tuple[int, int],
                 max_side: int | None) -> AnnotationProblem | None:
    """An image whose file does not decode to the width and height its entry declares
    (``decoded``: height, width, after ``max_side``): its boxes are relative to the declared
    size, in the preview and in training alike, so they would sit in the wrong place. Said,
    not left out (the reader keeps it); EXIF orientation is the usual cause (DALI applies
    it, many annotation tools do not)."""
    expected = decoded_size(img.height, img.width, max_side)
    if tuple(decoded) == expected:
        return None
    h, w = decoded
    return AnnotationProblem(readable(img.file), f"declared {img.width}x{img.height} but it "
                             f"decodes to {w}x{h}" + (f" at --size {max_side}" if max_side
                                                      else "") + ": its labels are placed "
                             "relative to the declared size and will not match the pixels "
                             "(EXIF orientation?); fix its width/height in the annotations")


def _sample_labels(img: ImageLabels, mask: object) -> SampleLabels:
    """An image's labels for the preview; ValueError naming the file beyond its budget."""
    try:
        return SampleLabels(img.boxes, img.classes, img.keypoints, mask)
    except ValueError as e:
        raise ValueError(f"{readable(img.file)}: {e}; a preview takes that many per image "
                         "(training reads them all): preview a batch without it "
                         "(--batch-size, --shard)") from None


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
    engine.set_labels([_sample_labels(img, masks[img.file] if labels.masks else None)
                       for img in picked])
    off = masks_problem(annotations, readable(Path(annotations_file).name))
    sizes = [size_problem(img, a.shape[:2], max_side) for img, a in zip(picked, engine.images,
                                                                          strict=True)]
    return AnnotatedBatch([img.file for img in picked], labels,
                          annotations.problems + ([off] if off else []), annotations,
                          [p for p in sizes if p is not None])
