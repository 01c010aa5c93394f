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
  four numbers inside the image (0.5 px tolerance) with positive width and height, a box under
  DALI's ``size_threshold`` (0.1 px: the reader would silently skip it), a polygon of fewer than
  3 points, an odd number of coordinates or a point far outside the image, an RLE whose size
  is not the image's or whose runs do not cover it exactly, keypoints that are not 3 x the
  category's keypoint names (visibility 0, 1 or 2), a bad ``iscrowd``; any non-numeric value;
* **the category** when it has no integer id from 1 (0 is the background of DALI's pixel
  masks), repeats an earlier id, or has keypoint names that are not strings.

A document that is not JSON, too large or too deep, or not an instances file at all raises
:class:`AnnotationError` before any entry is checked (:func:`.annotations.parse_document`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import numpy as np

from .image_files import is_utf8, readable
from .preset_document import quote

MAX_ANNOTATIONS = 100_000
"""Annotations (or YOLO label lines) in one document."""
MAX_IMAGES = 100_000
"""Image entries in one document (or images in a YOLO folder)."""
SIZE_THRESHOLD = np.float32(0.1)
"""``readers.coco``'s default ``size_threshold``: it skips boxes narrower or lower (float32)."""
BOX_TOLERANCE = 0.5
"""Pixels a box may pass the image's right or bottom edge (rounding in exporters)."""
INT32_MAX = 2**31 - 1


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


def is_int(value: Any, low: int = -(2**31), high: int = INT32_MAX) -> bool:
    """An integer as DALI's ``GetInt`` reads it (a JSON integer, int32), within bounds."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def is_number(value: Any) -> bool:
    """A finite JSON number (``True``, ``"3"``, NaN and 1e400, read as inf, are not)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def numbers(values: Any) -> bool:
    """A list of finite JSON numbers, checked at C speed (polygons have thousands)."""
    return (isinstance(values, list) and set(map(type, values)) <= {int, float}
            and all(map(math.isfinite, values)))


def safe_name(name: Any) -> bool:
    """A ``file_name`` DALI can join to its ``file_root``: relative, inside it, UTF-8."""
    if not isinstance(name, str) or not name or "\x00" in name or not is_utf8(name):
        return False
    path = PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts and name == path.as_posix()


@dataclass
class Checked:
    """The cleaned document's three lists (kept entries, document order) and the problems."""

    images: list[dict]
    annotations: list[dict]
    categories: list[dict]
    problems: list[AnnotationProblem]


def _categories(doc: dict, origin: str, problems: list[AnnotationProblem]) -> list[dict]:
    kept: dict[int, dict] = {}
    for k, cat in enumerate(doc["categories"]):
        cid = cat.get("id") if isinstance(cat, dict) else None
        label = f"category {cid}" if is_int(cid) else f"categories[{k}]"
        if not is_int(cid, 1):
            problems.append(AnnotationProblem(origin, f"{label}: the id {quote(cid)} is not an "
                                              "integer from 1 to 2^31-1 (0 is the background "
                                              "of DALI's pixel masks); it is left out"))
            continue
        if cid in kept:
            problems.append(AnnotationProblem(origin, f"{label} is defined twice; each "
                                              "category id may appear once (the first is kept)"))
            continue
        points = cat.get("keypoints", [])
        if not isinstance(points, list) or not all(isinstance(p, str) for p in points):
            problems.append(AnnotationProblem(origin, f"{label}: 'keypoints' must be a list of "
                                              "keypoint names (strings); it is left out"))
            continue
        name = cat.get("name")
        clean = {"id": cid, "name": name if isinstance(name, str) else f"category {cid}"}
        if isinstance(cat.get("supercategory"), str):
            clean["supercategory"] = cat["supercategory"]
        if points:
            clean["keypoints"] = list(points)
            skeleton = cat.get("skeleton")
            if isinstance(skeleton, list) and all(
                    isinstance(e, list) and len(e) == 2 and all(is_int(v) for v in e)
                    for e in skeleton):
                clean["skeleton"] = skeleton
        kept[cid] = clean
    return list(kept.values())


def _images(doc: dict, origin: str, available: Collection[str] | None,
            problems: list[AnnotationProblem]) -> tuple[list[dict], set[int]]:
    """Kept image entries and the ids of dropped ones (their annotations go quietly)."""
    entries = doc["images"]
    ids = Counter(e["id"] for e in entries if isinstance(e, dict) and is_int(e.get("id")))
    kept: list[dict] = []
    dropped: set[int] = set()
    names: dict[str, int] = {}
    for k, img in enumerate(entries):
        if not isinstance(img, dict):
            problems.append(AnnotationProblem(origin, f"images[{k}] is not an object; it is "
                                              "left out"))
            continue
        iid, name, w, h = (img.get(key) for key in ("id", "file_name", "width", "height"))
        file = readable(name) if isinstance(name, str) and name else origin
        reason = None
        if not is_int(iid):
            reason = f"image id {quote(iid)} is not an integer (int32)"
        elif ids[iid] > 1:
            reason = (f"image id {iid} is used by {ids[iid]} image entries; ids must be "
                      "unique (every entry of that id is left out with its annotations)")
        elif not safe_name(name):
            reason = (f"file_name {quote(name)} is not a relative path inside the images "
                      "folder (no absolute paths, no '..', UTF-8)")
        elif name in names:
            reason = (f"file_name is already used by image {names[name]}; each file may be "
                      "listed once (the first entry is kept)")
        elif "width" not in img or "height" not in img:
            reason = "the image entry has no width/height; both are required (pixels)"
        elif not (is_int(w, 1) and is_int(h, 1)):
            reason = (f"width and height ({quote(w)}, {quote(h)}) must be positive integers "
                      "(pixels)")
        elif available is not None and name not in available:
            reason = "missing image file: it is not in the images folder"
        if reason is not None:
            problems.append(AnnotationProblem(file, reason))
            if is_int(iid):
                dropped.add(iid)
            continue
        names[name] = iid
        kept.append({"id": iid, "file_name": name, "width": w, "height": h})
    return kept, dropped - {img["id"] for img in kept}


def _box_problem(bbox: Any, width: int, height: int) -> str | None:
    if not (numbers(bbox) and len(bbox) == 4):
        return (f"bbox {quote(bbox)} is not 4 numbers [x, y, width, height] (pixels)")
    x, y, w, h = (float(v) for v in bbox)
    if w <= 0 or h <= 0:
        return f"bbox {quote(bbox)} has no area; width and height must be positive"
    if x < 0 or y < 0 or x + w > width + BOX_TOLERANCE or y + h > height + BOX_TOLERANCE:
        return (f"bbox {quote(bbox)} lies outside the {width}x{height} image; a box must lie "
                f"within it ({BOX_TOLERANCE:g} px tolerance)")
    if not (np.float32(w) >= SIZE_THRESHOLD and np.float32(h) >= SIZE_THRESHOLD):
        return (f"bbox {quote(bbox)} is under {float(SIZE_THRESHOLD):g} px wide or high; "
                "DALI's readers.coco skips such boxes (size_threshold), so it is left out")
    return None


def rle_counts(counts: str) -> np.ndarray | None:
    """The run lengths of a compressed COCO RLE string (pycocotools' ``rleFrString``), or
    None when the string is not one (bad characters, a value cut short, over 35 bits)."""
    if not counts.isascii():
        return None
    c = np.frombuffer(counts.encode("ascii"), np.uint8).astype(np.int64) - 48
    if c.size == 0 or c.min() < 0 or c.max() > 63 or c[-1] & 0x20:
        return None
    ends = np.flatnonzero((c & 0x20) == 0)  # each value ends on a byte without "more" (0x20)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > 7:
        return None
    group = np.repeat(np.arange(ends.size), lengths)
    shift = 5 * (np.arange(c.size) - starts[group])
    values = np.bincount(group, (c & 0x1F) << shift, ends.size).astype(np.int64)
    values -= np.where(c[ends] & 0x10, np.int64(1) << (5 * lengths), 0)  # sign bit
    runs = values.copy()  # from the third value on, each is a delta to the one two before
    runs[1::2] = np.cumsum(values[1::2])
    runs[2::2] = np.cumsum(values[2::2])
    return runs


def _segmentation_problem(segm: Any, width: int, height: int) -> str | None:
    if isinstance(segm, dict):
        size, counts = segm.get("size"), segm.get("counts")
        if size != [height, width] or not all(is_int(v) for v in size):
            return (f"RLE mask size {quote(size)} is not the image's [height, width] "
                    f"[{height}, {width}]")
        if isinstance(counts, str):
            runs = rle_counts(counts)
        elif isinstance(counts, list) and set(map(type, counts)) <= {int}:
            runs = np.array([v if -1 <= v <= INT32_MAX else -1 for v in counts], np.int64)
        else:
            runs = None
        if runs is None or runs.size == 0 or runs.min() < 0 or runs.sum() != width * height:
            return (f"RLE mask counts do not cover the {width}x{height} image exactly; counts "
                    "must be a COCO RLE string or non-negative run lengths summing to "
                    "width x height")
        return None
    if not isinstance(segm, list):
        return (f"segmentation {quote(segm)} is neither a list of polygons nor an RLE "
                "object {size, counts}")
    for poly in segm:
        if not numbers(poly):
            return (f"polygon {quote(poly)} is not a list of numbers [x1, y1, x2, y2, ...]")
        if len(poly) < 6 or len(poly) % 2:
            return (f"a polygon has {len(poly)} coordinates; a polygon needs at least 3 points "
                    "(6 numbers) and an even count")
        xs, ys = poly[0::2], poly[1::2]
        if min(xs) < -width or max(xs) > 2 * width or min(ys) < -height or max(ys) > 2 * height:
            return (f"a polygon point lies far outside the {width}x{height} image; points must "
                    "lie within the image")
    return None


def _keypoints_problem(points: Any, count: int) -> str | None:
    if points is None or (points == [] and count == 0):
        return None
    if not isinstance(points, list) or len(points) != 3 * count:
        size = len(points) if isinstance(points, list) else quote(points)
        return (f"keypoints has {size} values; its category names {count} keypoints, so it "
                f"must hold {3 * count} (x, y, visibility for each)")
    if not numbers(points) or any(v not in (0, 1, 2) for v in points[2::3]):
        return "keypoints must be numbers, each visibility 0, 1 or 2"
    return None


def _annotation_problem(ann: dict, image: dict, categories: dict[int, dict]) -> str | None:
    cid = ann.get("category_id")
    if not is_int(cid) or cid not in categories:
        return (f"category_id {quote(cid)} is not one of the categories "
                f"({quote(sorted(categories))})")
    crowd = ann.get("iscrowd", 0)
    if not (is_int(crowd) and crowd in (0, 1)):
        return f"iscrowd {quote(crowd)} must be 0 or 1"
    w, h = image["width"], image["height"]
    return (_box_problem(ann.get("bbox"), w, h)
            or _segmentation_problem(ann.get("segmentation", []), w, h)
            or _keypoints_problem(ann.get("keypoints"),
                                  len(categories[cid].get("keypoints", []))))


def _clean_annotation(ann: dict) -> dict:
    """The fields a detection/segmentation pipeline uses, as given (``segmentation`` is always
    written: DALI reads an absent one as uninitialised memory when it rasterises masks)."""
    out: dict[str, Any] = {}
    if is_int(ann.get("id"), -(2**63), 2**63 - 1):
        out["id"] = ann["id"]
    out |= {"image_id": ann["image_id"], "category_id": ann["category_id"],
            "bbox": ann["bbox"], "iscrowd": ann.get("iscrowd", 0),
            "segmentation": ann.get("segmentation", [])}
    if is_number(ann.get("area")):
        out["area"] = ann["area"]
    if ann.get("keypoints"):
        out["keypoints"] = ann["keypoints"]
        if is_int(ann.get("num_keypoints"), 0):
            out["num_keypoints"] = ann["num_keypoints"]
    return out


def check_document(doc: dict, origin: str, available: Collection[str] | None = None,
                   describe: dict[int, str] | None = None) -> Checked:
    """Every entry of a parsed instances document checked; the kept ones cleaned.
    ``describe``: how messages name annotation ``k`` (YOLO: its file and line)."""
    problems: list[AnnotationProblem] = []
    categories = {c["id"]: c for c in _categories(doc, origin, problems)}
    images, dropped = _images(doc, origin, available, problems)
    by_id = {img["id"]: img for img in images}
    kept: list[dict] = []
    for k, ann in enumerate(doc["annotations"]):
        aid = ann.get("id") if isinstance(ann, dict) else None
        label = (describe[k] if describe and k in describe
                 else f"annotation {aid}" if is_int(aid, -(2**63), 2**63 - 1)
                 else f"annotations[{k}]")
        iid = ann.get("image_id") if isinstance(ann, dict) else None
        if not isinstance(ann, dict) or not is_int(iid):
            problems.append(AnnotationProblem(origin, f"{label}: image_id {quote(iid)} is not "
                                              "an integer image id; it is left out"))
            continue
        if iid in dropped:
            continue  # its image was left out, with its own problem
        image = by_id.get(iid)
        if image is None:
            problems.append(AnnotationProblem(origin, f"{label}: image_id {iid} names no image "
                                              "entry; it is left out"))
            continue
        reason = _annotation_problem(ann, image, categories)
        if reason is not None:
            problems.append(AnnotationProblem(readable(image["file_name"]),
                                              f"{label}: {reason}"))
            continue
        kept.append(_clean_annotation(ann))
    return Checked(images, kept, list(categories.values()), problems)
