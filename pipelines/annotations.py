"""Object-detection and segmentation labels of a set of images, checked before DALI reads them.

A COCO instances file (:func:`parse_coco`, :func:`load_coco`) or a YOLO-labelled folder
(:func:`load_yolo`) becomes :class:`Annotations`: the categories, each kept image's labels
exactly as ``fn.readers.coco(ltrb=True, ratio=True, avoid_class_remapping=True)`` gives them
(same float32 bits, same image order), the problems (each bad entry named, the rest still
loading; :mod:`.annotations_coco` says what drops an annotation and what drops an image), and
a cleaned COCO document holding only what passed, which is what DALI is handed.

What the reader does, mirrored here (read from DALI 2.4's ``coco_loader.cc`` and checked
against the real reader in the tests):

* images are read in the order of their ``id`` (not of the file), or in the order of the
  ``images`` argument when one is given; ``skip_empty=False`` keeps images without boxes;
* an image's boxes come in the document order of its annotations;
* ``size_threshold`` (0.1 px) drops boxes whose float32 width or height is below it: such boxes
  are left out of the cleaned document, with a problem, instead of vanishing silently;
* ``include_iscrowd`` (default True) keeps crowd annotations: they are boxes like the others;
* with ``avoid_class_remapping=True`` labels are the category ids as written;
* ``ltrb``/``ratio`` compute in float32: ``(x + w) / width``, the width converted to float.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .annotations_coco import (
    MAX_ANNOTATIONS,
    MAX_IMAGES,
    AnnotationError,
    AnnotationProblem,
    Checked,
    check_document,
    is_int,
)
from .annotations_yolo import read_regular, yolo_document
from .coco_check import listed_files
from .dali_errors import error_text
from .image_files import readable
from .preset_document import BadNumber, quote

MAX_TEXT_BYTES = 64 << 20
"""Largest document (COCO val2017 instances is 25 MB; train2017, 448 MB, is refused)."""
MAX_DEPTH = 10
"""Nesting of objects and lists; an instances file needs 5 (root/annotations/ann/segm/poly)."""
MAX_CONTAINERS = 2_000_000
"""Objects and lists in the document, counted before ``json`` builds them (memory bound)."""
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
"""A JSON string; the closing quote is optional so that no match fails and backtracks."""
_NOT_BRACKETS = bytes(c for c in range(256) if c not in b"[]{}")
CLEAN_NAME = "instances_clean.json"
"""The file :meth:`Annotations.write_clean` writes."""
MASK_BATCH = 8
"""Images per run of the mask pipeline."""

__all__ = [
    "AnnotationError", "AnnotationProblem", "Annotations", "Category", "ImageLabels",
    "dali_masks", "load_coco", "load_yolo", "parse_coco",
]


@dataclass(frozen=True)
class Category:
    """A category: its id (as the labels and masks carry it), name and keypoint names."""

    id: int
    name: str
    keypoints: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class ImageLabels:
    """One image's labels as the reader gives them (arrays read-only; compared by identity,
    since arrays have no single truth value)."""

    file: str
    image_id: int
    width: int
    height: int
    boxes: np.ndarray
    """float32 (N, 4): left, top, right, bottom relative to width/height."""
    classes: np.ndarray
    """int32 (N,): category ids, in the order of ``boxes``."""
    keypoints: np.ndarray
    """float32 (N, K, 3): x, y relative, visibility; K = the most keypoints of its categories."""
    has_masks: bool


@dataclass
class Annotations:
    """The labels of a set of images: what was kept, what was wrong, and the cleaned document."""

    categories: dict[int, Category]
    images: list[ImageLabels]
    """The images kept, in the order ``fn.readers.coco`` reads them (by image id)."""
    problems: list[AnnotationProblem]
    source: str
    _text: str = field(default="{}", repr=False)

    def coco_document(self) -> dict:
        """The cleaned COCO instances document (a fresh copy): only the kept images,
        annotations and categories, with their ids, file names, boxes, masks and keypoints."""
        return json.loads(self._text)

    def by_file(self) -> dict[str, ImageLabels]:
        return {img.file: img for img in self.images}

    def write_clean(self, folder: str | Path) -> Path:
        """Writes :meth:`coco_document` to ``folder``/``instances_clean.json`` (atomically:
        a reader never sees half a file) and returns its path."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / CLEAN_NAME
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".instances-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(self._text)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path


def document_text(data: str | bytes | bytearray | memoryview, origin: str) -> str:
    """The document as text within the size budget, or AnnotationError."""
    if isinstance(data, str):
        size = len(data) if len(data) > MAX_TEXT_BYTES else len(data.encode("utf-8",
                                                                            "surrogatepass"))
        check_size(size, origin)
        return data.removeprefix("\ufeff")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise AnnotationError(f"{origin}: expected the document's text or bytes, got "
                              f"{type(data).__name__}.")
    check_size(len(data), origin)
    try:
        return bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise AnnotationError(f"{origin}: not UTF-8 text (byte {e.start} is "
                              f"{bytes(data)[e.start]:#04x}); a COCO annotations file is a "
                              "JSON document.") from None


def check_size(size: int, origin: str) -> None:
    if size > MAX_TEXT_BYTES:
        raise AnnotationError(f"{origin}: {size / 2**20:.1f} MiB is too large; an annotations "
                              f"file is at most {MAX_TEXT_BYTES >> 20} MiB (split the dataset "
                              "into several files).")


def bracket_counts(text: str) -> tuple[int, int]:
    """(deepest nesting, number of objects and lists) outside JSON strings, without recursion
    and with memory proportional to the brackets only."""
    brackets = _STRING.sub('""', text).encode("utf-8", "surrogatepass").translate(
        None, _NOT_BRACKETS)
    codes = np.frombuffer(brackets, np.uint8)
    delta = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int32)
    return int(np.cumsum(delta).max(initial=0)), int((delta > 0).sum())


def _parse_int(text: str) -> int | BadNumber:
    return BadNumber(f"an integer of {len(text)} digits") if len(text) > 300 else int(text)


def parse_document(data: str | bytes | bytearray | memoryview, origin: str) -> dict:
    """The JSON object of an instances document, every budget checked first; never a path."""
    text = document_text(data, origin)
    what = ("a COCO annotations file is a JSON object with 'images', 'annotations' and "
            "'categories' lists")
    if not text.lstrip().startswith("{"):
        raise AnnotationError(f"{origin}: not a JSON object; {what}.")
    depth, containers = bracket_counts(text)
    if depth > MAX_DEPTH:
        raise AnnotationError(f"{origin}: nested {depth} levels deep; an instances file nests "
                              f"5 levels and at most {MAX_DEPTH} are accepted.")
    if containers > MAX_CONTAINERS:
        raise AnnotationError(f"{origin}: {containers} JSON objects and lists; at most "
                              f"{MAX_CONTAINERS} are read (split the dataset).")
    try:
        doc = json.loads(text, parse_int=_parse_int, parse_constant=BadNumber)
    except (json.JSONDecodeError, RecursionError) as e:
        where = (f" ({e.msg} at line {e.lineno} column {e.colno})"
                 if isinstance(e, json.JSONDecodeError) else "")
        raise AnnotationError(f"{origin}: not valid JSON{where}; {what}.") from None
    if not isinstance(doc, dict):
        raise AnnotationError(f"{origin}: not a JSON object; {what}.")
    for key in ("images", "categories"):
        if not isinstance(doc.get(key), list):
            raise AnnotationError(f"{origin}: not a COCO instances file (no '{key}' list); "
                                  f"{what}.")
    annotations = doc.setdefault("annotations", [])
    if not isinstance(annotations, list):
        raise AnnotationError(f"{origin}: 'annotations' is not a list; {what}.")
    if len(annotations) > MAX_ANNOTATIONS or len(doc["images"]) > MAX_IMAGES:
        raise AnnotationError(f"{origin}: {len(doc['images'])} images and {len(annotations)} "
                              f"annotations; at most {MAX_IMAGES} images and {MAX_ANNOTATIONS} "
                              "annotations are read from one file (split the dataset).")
    if annotations and not any(isinstance(a, dict) and "bbox" in a for a in annotations):
        raise AnnotationError(f"{origin}: no annotation has a 'bbox', so this is not an "
                              "instances file (captions or panoptic files are not read); "
                              f"{what}.")
    return doc


def _ratio(values: list, size: int) -> np.ndarray:
    """DALI's float32 ``value / size`` (the JSON double rounded to float first)."""
    return np.array(values, np.float64).astype(np.float32) / np.float32(size)


def _image_labels(image: dict, anns: list[dict], categories: dict[int, Category]) -> ImageLabels:
    w, h = image["width"], image["height"]
    xywh = np.array([a["bbox"] for a in anns], np.float64).reshape(-1, 4).astype(np.float32)
    ltrb = np.stack([xywh[:, 0], xywh[:, 1], xywh[:, 0] + xywh[:, 2], xywh[:, 1] + xywh[:, 3]],
                    axis=1)
    boxes = ltrb / np.array([w, h, w, h], np.float32)
    counts = [len(categories[a["category_id"]].keypoints) for a in anns]
    points = np.zeros((len(anns), max(counts, default=0), 3), np.float32)
    for k, ann in enumerate(anns):
        values = ann.get("keypoints") or []
        n = len(values) // 3
        if n:
            points[k, :n, 0] = _ratio(values[0::3], w)
            points[k, :n, 1] = _ratio(values[1::3], h)
            points[k, :n, 2] = values[2::3]
    classes = np.array([a["category_id"] for a in anns], np.int32)
    for array in (boxes, classes, points):
        array.setflags(write=False)
    masks = any(isinstance(a["segmentation"], dict) or any(a["segmentation"]) for a in anns)
    return ImageLabels(image["file_name"], image["id"], w, h, boxes, classes, points, masks)


def _annotations(checked: Checked, source: str) -> Annotations:
    categories = {c["id"]: Category(c["id"], c["name"], tuple(c.get("keypoints", ())))
                  for c in checked.categories}
    per_image: dict[int, list[dict]] = {img["id"]: [] for img in checked.images}
    for ann in checked.annotations:
        per_image[ann["image_id"]].append(ann)
    ordered = sorted(checked.images, key=lambda img: img["id"])
    images = [_image_labels(img, per_image[img["id"]], categories) for img in ordered]
    text = json.dumps({"images": checked.images, "annotations": checked.annotations,
                       "categories": checked.categories}, ensure_ascii=False, allow_nan=False)
    return Annotations(categories, images, checked.problems, source, text)


def parse_coco(data: bytes | str, available: Collection[str] | None = None, *,
               origin: str = "annotations") -> Annotations:
    """The labels of a COCO instances document given as its text or bytes (never a path).

    ``available``: the image file names present (None: not checked); ``origin`` names the
    document in messages. AnnotationError when the document as a whole cannot be used."""
    doc = parse_document(data, origin)
    names = None if available is None else set(available)
    return _annotations(check_document(doc, origin, names), "coco")


def load_coco(path: str | Path, images_dir: str | Path) -> Annotations:
    """The labels of a COCO instances file for the images in ``images_dir`` (CLI, notebooks).

    Only a regular file is read, its size checked first; an entry whose image file is not in
    ``images_dir`` is a problem."""
    path, images_dir = Path(path), Path(images_dir)
    origin = readable(path.name) or "annotations"
    if not images_dir.is_dir():
        raise AnnotationError(f"{quote(str(images_dir), 200)} is not a folder; the images of "
                              "an annotations file are read from a folder.")
    doc = parse_document(read_regular(path, MAX_TEXT_BYTES, origin), origin)
    available = listed_files(images_dir, doc["images"])
    return _annotations(check_document(doc, origin, available), "coco")


def load_yolo(images_dir: str | Path, names: Sequence[str] | None = None,
              confine: str | Path | None = None) -> Annotations:
    """The labels of a YOLO folder (see :mod:`.annotations_yolo`), as COCO ids and boxes;
    nothing outside ``confine`` is read (the served app's allowed root)."""
    doc, problems, where = yolo_document(Path(images_dir), names,
                                         Path(confine) if confine is not None else None)
    checked = check_document(doc, "YOLO labels", None, where)
    checked.problems[:0] = problems
    return _annotations(checked, "yolo")


def dali_masks(annotations_file: str | Path, images_dir: str | Path,
               files: Sequence[str]) -> dict[str, np.ndarray]:
    """The pixel masks of ``files`` as DALI rasterises them: int32 (H, W, 1) maps of category
    ids (0: background), keyed by file name. Files the document does not list are left out.

    Each mask is matched to its file by the reader's own ``image_ids`` output, not by position.
    A mask is H x W x 4 bytes: ask for a few files at a time."""
    from nvidia.dali import fn, pipeline_def

    annotations_file, images_dir = Path(annotations_file), Path(images_dir)
    origin = readable(annotations_file.name) or "annotations"
    doc = parse_document(read_regular(annotations_file, MAX_TEXT_BYTES, origin), origin)
    by_name = {img["file_name"]: img["id"] for img in doc["images"]
               if isinstance(img, dict) and is_int(img.get("id"))
               and isinstance(img.get("file_name"), str)}  # the last entry wins, as in DALI
    file_of = {iid: name for name, iid in by_name.items()}
    wanted = list(dict.fromkeys(f for f in files if f in by_name))
    if not wanted:
        return {}
    batch = min(len(wanted), MASK_BATCH)

    @pipeline_def(batch_size=batch, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def masks_pipeline():  # type: ignore[no-untyped-def]
        _, _, _, masks, ids = fn.readers.coco(
            file_root=str(images_dir), annotations_file=str(annotations_file),
            pixelwise_masks=True, ltrb=True, ratio=True, avoid_class_remapping=True,
            images=wanted, image_ids=True, skip_empty=False, random_shuffle=False)
        return masks, ids

    out: dict[str, np.ndarray] = {}
    pipe = None
    try:
        pipe = masks_pipeline()
        pipe.build()
        for _ in range(math.ceil(len(wanted) / batch)):
            masks, ids = pipe.run()
            for i in range(batch):
                name = file_of.get(int(np.array(ids[i]).reshape(-1)[0]))
                if name is not None:
                    out.setdefault(name, np.array(masks[i]))
    except (RuntimeError, UnicodeDecodeError) as err:
        raise AnnotationError(f"DALI could not read the masks of {origin}: "
                              f"{readable(error_text(err))[:500]}") from None
    finally:
        del pipe
    return out
