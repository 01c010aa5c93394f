"""A COCO instances document checked entry by entry: what DALI's ``readers.coco`` may be given.

DALI's reader trusts its file: a missing ``bbox`` or ``width`` leaves memory uninitialised, a
non-integer id stops the whole parse, an RLE of another size silently becomes a mask that does
not match the image, an invalid box or label is a training example the user never meant. So
every entry is checked here, each fault becomes an :class:`AnnotationProblem` (file and reason),
and only what passed goes into the cleaned document. What is dropped:

* **the image** (with its annotations) when the image entry itself is wrong: no integer ``id``,
  an id another image entry also uses (every image of that id: its annotations are ambiguous),
  no usable ``file_name`` (not a relative path inside the images folder, or already used by an
  earlier entry), no positive integer ``width``/``height``, or its file missing from the folder;
* **the annotation** only (the image keeps its other annotations) when the annotation is wrong:
  no integer ``image_id`` naming a kept image, an unknown ``category_id``, a ``bbox`` that is not
  four numbers inside the image (0.5 px tolerance on every edge, then clipped to it) with
  positive width and height, a box under DALI's ``size_threshold`` inside the image (0.1 px:
  the reader would silently skip it), a polygon of fewer than
  3 points, an odd number of coordinates or a point far outside the image, an RLE whose size
  is not the image's or whose runs do not cover it exactly, keypoints that are not 3 x the
  category's keypoint names (visibility 0, 1 or 2), a bad ``iscrowd``; any non-numeric value;
* **the category** when it has no integer id from 1 (0 is the background of DALI's pixel
  masks), repeats an earlier id, or has keypoint names that are not strings.

A document that is not JSON, too large or too deep, or not an instances file at all raises
:class:`AnnotationError` before any entry is checked (:func:`.annotations.parse_document`).
The checks themselves are :mod:`pipelines.coco_check`, which the exported module carries too:
training leaves out what the preview left out.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from .coco_check import (
    BOX_TOLERANCE,
    INT32_MAX,
    SIZE_THRESHOLD,
    check_entries,
    is_int,
    is_number,
    numbers,
    rle_counts,
    safe_name,
)

__all__ = ["BOX_TOLERANCE", "INT32_MAX", "MAX_ANNOTATIONS", "MAX_IMAGES", "SIZE_THRESHOLD",
           "AnnotationError", "AnnotationProblem", "Checked", "check_document", "is_int",
           "is_number", "numbers", "rle_counts", "safe_name"]

MAX_ANNOTATIONS = 100_000
"""Annotations (or YOLO label lines) in one document."""
MAX_IMAGES = 100_000
"""Image entries in one document (or images in a YOLO folder)."""


class AnnotationError(ValueError):
    """The document as a whole cannot be used; the message is one paragraph for the user."""


@dataclass(frozen=True)
class AnnotationProblem:
    """One entry left out: the image file it concerns (or the annotation file, for problems
    that belong to no image) and one sentence saying what is wrong and what is allowed."""

    file: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.reason}"


@dataclass
class Checked:
    """The cleaned document's three lists (kept entries, document order) and the problems."""

    images: list[dict]
    annotations: list[dict]
    categories: list[dict]
    problems: list[AnnotationProblem]


def check_document(doc: dict, origin: str, available: Collection[str] | None = None,
                   describe: dict[int, str] | None = None) -> Checked:
    """Every entry of a parsed instances document checked; the kept ones cleaned.
    ``describe``: how messages name annotation ``k`` (YOLO: its file and line)."""
    images, annotations, categories, problems = check_entries(doc, origin, available, describe)
    return Checked(images, annotations, categories,
                   [AnnotationProblem(file, reason) for file, reason in problems])
