"""The entry-by-entry checks of a COCO instances document, shared by the preview and training.

The preview (:mod:`pipelines.annotations_coco`) and the exported module with labels run these
same functions (the export carries them verbatim, :data:`EMBEDDED`), so training leaves out
exactly the entries the preview left out and reads the same cleaned document: what
:func:`check_entries` returns. A box that passes an edge by less than :data:`BOX_TOLERANCE`
(rounding in exporters) is clipped to the image there (:func:`clipped_box`), so every box is
relative 0..1 in both. No type hints, like :mod:`pipelines.shards`: the export's own code.
Messages quote values with :func:`pipelines.preset_document.quote` and name files with
:func:`pipelines.image_files.readable` (embedded too).
"""

from __future__ import annotations

import collections
import math
import os
import pathlib

import numpy as np

from .coco_masks import drawable_masks
from .image_files import readable
from .preset_document import quote

SIZE_THRESHOLD = np.float32(0.1)
"""``readers.coco``'s default ``size_threshold``: it skips boxes narrower or lower (float32)."""
BOX_TOLERANCE = 0.5
"""Pixels a box may pass an edge of its image (rounding in exporters); it is clipped there."""
INT32_MAX = 2**31 - 1


def is_int(value, low=-(2**31), high=INT32_MAX):
    """An integer as DALI's GetInt reads it (a JSON integer, int32), within bounds."""
    if not isinstance(value, int) or isinstance(value, bool):
        return False
    return low <= value <= high


def is_number(value):
    """A finite JSON number (True, "3", NaN and 1e400, read as inf, are not)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    return math.isfinite(value)


def numbers(values):
    """A list of finite JSON numbers, checked at C speed (polygons have thousands)."""
    if not isinstance(values, list) or not set(map(type, values)) <= {int, float}:
        return False
    return all(map(math.isfinite, values))


def safe_name(name):
    """A file_name DALI can join to its file_root: relative, inside it, UTF-8, written
    in normal form (no "./", "//" or trailing "/")."""
    if not isinstance(name, str) or not name or "\x00" in name:
        return False
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    path = pathlib.PurePosixPath(name)
    return not path.is_absolute() and ".." not in path.parts and name == path.as_posix()


def check_categories(doc, origin, problems):
    """The kept categories (document order); each one left out is a problem."""
    kept = {}
    for k, cat in enumerate(doc["categories"]):
        cid = cat.get("id") if isinstance(cat, dict) else None
        label = f"category {cid}" if is_int(cid) else f"categories[{k}]"
        if not is_int(cid, 1):
            why = (
                f"{label}: the id {quote(cid)} is not an integer from 1 to 2^31-1 "
                "(0 is the background of DALI's pixel masks); it is left out"
            )
            problems.append((origin, why))
            continue
        if cid in kept:
            why = f"{label} is defined twice; each category id may appear once"
            why += " (the first is kept)"
            problems.append((origin, why))
            continue
        points = cat.get("keypoints", [])
        if not isinstance(points, list) or not all(isinstance(p, str) for p in points):
            why = f"{label}: 'keypoints' must be a list of keypoint names (strings)"
            why += "; it is left out"
            problems.append((origin, why))
            continue
        name = cat.get("name")
        if not isinstance(name, str):
            name = f"category {cid}"
        clean = {"id": cid, "name": name}
        if isinstance(cat.get("supercategory"), str):
            clean["supercategory"] = cat["supercategory"]
        if points:
            clean["keypoints"] = list(points)
            skeleton = cat.get("skeleton")
            pairs = isinstance(skeleton, list) and all(
                isinstance(e, list) and len(e) == 2 for e in skeleton
            )
            if pairs and all(is_int(v) for e in skeleton for v in e):
                clean["skeleton"] = skeleton
        kept[cid] = clean
    return list(kept.values())


def image_problem(img, ids, names, available):
    """Why an image entry is left out (None: it is kept). ids: how many entries use each
    id; names: the file names kept so far; available: the files present (None: any)."""
    iid, name, w, h = (img.get(key) for key in ("id", "file_name", "width", "height"))
    if not is_int(iid):
        return f"image id {quote(iid)} is not an integer (int32)"
    if ids[iid] > 1:
        return (
            f"image id {iid} is used by {ids[iid]} image entries; ids must be unique "
            "(every entry of that id is left out with its annotations)"
        )
    if not safe_name(name):
        return (
            f"file_name {quote(name)} is not a relative path inside the images folder, "
            "written in normal form (no absolute path, '..', './' or '//'; UTF-8)"
        )
    if name in names:
        return (
            f"file_name is already used by image {names[name]}; each file may be "
            "listed once (the first entry is kept)"
        )
    if "width" not in img or "height" not in img:
        return "the image entry has no width/height; both are required (pixels)"
    if not (is_int(w, 1) and is_int(h, 1)):
        size = f"({quote(w)}, {quote(h)})"
        return f"width and height {size} must be positive integers (pixels)"
    if available is not None and name not in available:
        return "missing image file: it is not in the images folder"
    return None


def check_images(doc, origin, available, problems):
    """Kept image entries and the ids of dropped ones (their annotations go quietly)."""
    entries = doc["images"]
    ids = collections.Counter(
        e["id"] for e in entries if isinstance(e, dict) and is_int(e.get("id"))
    )
    kept, dropped, names = [], set(), {}
    for k, img in enumerate(entries):
        if not isinstance(img, dict):
            problems.append((origin, f"images[{k}] is not an object; it is left out"))
            continue
        name = img.get("file_name")
        reason = image_problem(img, ids, names, available)
        if reason is not None:
            file = readable(name) if isinstance(name, str) and name else origin
            problems.append((file, reason))
            if is_int(img.get("id")):
                dropped.add(img["id"])
            continue
        names[name] = img["id"]
        entry = {"id": img["id"], "file_name": name}
        entry["width"], entry["height"] = img["width"], img["height"]
        kept.append(entry)
    return kept, dropped - {img["id"] for img in kept}


def box_problem(bbox, width, height):
    """Why a bbox [x, y, width, height] (pixels) is left out (None: it is kept)."""
    if not (numbers(bbox) and len(bbox) == 4):
        return f"bbox {quote(bbox)} is not 4 numbers [x, y, width, height] (pixels)"
    x, y, w, h = (float(v) for v in bbox)
    if w <= 0 or h <= 0:
        return f"bbox {quote(bbox)} has no area; width and height must be positive"
    t = BOX_TOLERANCE
    if x < -t or y < -t or x + w > width + t or y + h > height + t:
        return (
            f"bbox {quote(bbox)} lies outside the {width}x{height} image; a box must "
            f"lie within it ({t:g} px tolerance)"
        )
    _, _, w, h = clipped_box(bbox, width, height)
    if not (np.float32(w) >= SIZE_THRESHOLD and np.float32(h) >= SIZE_THRESHOLD):
        return (
            f"bbox {quote(bbox)} is under {float(SIZE_THRESHOLD):g} px wide or high "
            "inside the image; DALI's readers.coco skips such boxes (size_threshold), "
            "so it is left out"
        )
    return None


def clipped_box(bbox, width, height):
    """bbox as given when it lies within the image, else clipped to it: left and top at
    least 0, and right and bottom, as DALI's reader adds them in float32, at most the
    width and height (the boxes are then relative 0..1)."""
    x, y, w, h = (float(v) for v in bbox)
    if x >= 0 and y >= 0 and x + w <= width and y + h <= height:
        return bbox
    out = []
    for start, extent, size in ((x, w, width), (y, h, height)):
        low = max(start, 0.0)
        extent = np.float32(min(start + extent, size) - low)
        while np.float32(low) + extent > np.float32(size):
            extent = np.nextafter(extent, np.float32(0))
        out += [low, float(extent)]
    return [out[0], out[2], out[1], out[3]]


def rle_counts(counts):
    """The run lengths of a compressed COCO RLE string (pycocotools' rleFrString), or
    None when the string is not one (bad characters, a value cut short, over 35
    bits)."""
    if not counts.isascii():
        return None
    c = np.frombuffer(counts.encode("ascii"), np.uint8).astype(np.int64) - 48
    if c.size == 0 or c.min() < 0 or c.max() > 63 or c[-1] & 0x20:
        return None
    # a value ends on a byte without "more" (0x20)
    ends = np.flatnonzero((c & 0x20) == 0)
    starts = np.concatenate(([0], ends[:-1] + 1))
    lengths = ends - starts + 1
    if lengths.max() > 7:
        return None
    group = np.repeat(np.arange(ends.size), lengths)
    shift = 5 * (np.arange(c.size) - starts[group])
    values = np.bincount(group, (c & 0x1F) << shift, ends.size).astype(np.int64)
    values -= np.where(c[ends] & 0x10, np.int64(1) << (5 * lengths), 0)  # sign bit
    # from the third value on, each is a delta to the one two before
    runs = values.copy()
    runs[1::2] = np.cumsum(values[1::2])
    runs[2::2] = np.cumsum(values[2::2])
    return runs


def rle_problem(segm, width, height):
    """Why an RLE mask {size, counts} is left out (None: it is kept)."""
    size, counts = segm.get("size"), segm.get("counts")
    if size != [height, width] or not all(is_int(v) for v in size):
        want = [height, width]
        return f"RLE mask size {quote(size)} is not the image's [height, width] {want}"
    if isinstance(counts, str):
        runs = rle_counts(counts)
    elif isinstance(counts, list) and set(map(type, counts)) <= {int}:
        runs = np.array([v if -1 <= v <= INT32_MAX else -1 for v in counts], np.int64)
    else:
        runs = None
    if runs is None or runs.size == 0 or runs.min() < 0 or runs.sum() != width * height:
        return (
            f"RLE mask counts do not cover the {width}x{height} image exactly; counts "
            "must be a COCO RLE string or non-negative run lengths summing to width x "
            "height"
        )
    return None


def segmentation_problem(segm, width, height):
    """Why a segmentation (polygons or an RLE) is left out (None: it is kept)."""
    if isinstance(segm, dict):
        return rle_problem(segm, width, height)
    if not isinstance(segm, list):
        return (
            f"segmentation {quote(segm)} is neither a list of polygons nor an RLE "
            "object {size, counts}"
        )
    for poly in segm:
        if not numbers(poly):
            why = "is not a list of numbers [x1, y1, x2, y2, ...]"
            return f"polygon {quote(poly)} {why}"
        if len(poly) < 6 or len(poly) % 2:
            return (
                f"a polygon has {len(poly)} coordinates; a polygon needs at least 3 "
                "points (6 numbers) and an even count"
            )
        xs, ys = poly[0::2], poly[1::2]
        outside = min(xs) < -width or max(xs) > 2 * width
        if outside or min(ys) < -height or max(ys) > 2 * height:
            return (
                f"a polygon point lies far outside the {width}x{height} image; points "
                "must lie within the image"
            )
    return None


def keypoints_problem(points, count, width, height):
    """Why an annotation's keypoints are left out (count: its category's names); a
    labelled point far outside its image is a mistake, as a polygon's is."""
    if points is None or (points == [] and count == 0):
        return None
    if not isinstance(points, list) or len(points) != 3 * count:
        size = len(points) if isinstance(points, list) else quote(points)
        return (
            f"keypoints has {size} values; its category names {count} keypoints, so it "
            f"must hold {3 * count} (x, y, visibility for each)"
        )
    if not numbers(points) or any(v not in (0, 1, 2) for v in points[2::3]):
        return "keypoints must be numbers, each visibility 0, 1 or 2"
    for x, y, v in zip(points[0::3], points[1::3], points[2::3], strict=True):
        if v and not (-width <= x <= 2 * width and -height <= y <= 2 * height):
            return f"keypoint ({x}, {y}) lies far outside the {width}x{height} image"
    return None


def annotation_problem(ann, image, categories):
    """Why an annotation of a kept image is left out (None: it is kept)."""
    cid = ann.get("category_id")
    if not is_int(cid) or cid not in categories:
        known = quote(sorted(categories))
        return f"category_id {quote(cid)} is not one of the categories ({known})"
    crowd = ann.get("iscrowd", 0)
    if not (is_int(crowd) and crowd in (0, 1)):
        return f"iscrowd {quote(crowd)} must be 0 or 1"
    w, h = image["width"], image["height"]
    names = len(categories[cid].get("keypoints", []))
    return (
        box_problem(ann.get("bbox"), w, h)
        or segmentation_problem(ann.get("segmentation", []), w, h)
        or keypoints_problem(ann.get("keypoints"), names, w, h)
    )


def clean_annotation(ann, image):
    """The fields a detection/segmentation pipeline uses, as given, the box clipped to
    its image (segmentation is always written: DALI reads an absent one as uninitialised
    memory when it rasterises masks)."""
    out = {}
    if is_int(ann.get("id"), -(2**63), 2**63 - 1):
        out["id"] = ann["id"]
    out["image_id"] = ann["image_id"]
    out["category_id"] = ann["category_id"]
    out["bbox"] = clipped_box(ann["bbox"], image["width"], image["height"])
    out["iscrowd"] = ann.get("iscrowd", 0)
    out["segmentation"] = ann.get("segmentation", [])
    if is_number(ann.get("area")):
        out["area"] = ann["area"]
    if ann.get("keypoints"):
        out["keypoints"] = ann["keypoints"]
        if is_int(ann.get("num_keypoints"), 0):
            out["num_keypoints"] = ann["num_keypoints"]
    return out


def check_entries(doc, origin, available=None, describe=None):
    """Every entry of a parsed instances document ({"images", "annotations",
    "categories"} lists) checked: (images, annotations, categories, problems), the kept
    entries cleaned, each problem (file, reason). available: the image files present
    (None: not checked); describe: how messages name annotation k (YOLO: file, line)."""
    problems = []
    categories = {c["id"]: c for c in check_categories(doc, origin, problems)}
    images, dropped = check_images(doc, origin, available, problems)
    by_id = {img["id"]: img for img in images}
    kept = []
    for k, ann in enumerate(doc["annotations"]):
        aid = ann.get("id") if isinstance(ann, dict) else None
        if describe and k in describe:
            label = describe[k]
        elif is_int(aid, -(2**63), 2**63 - 1):
            label = f"annotation {aid}"
        else:
            label = f"annotations[{k}]"
        iid = ann.get("image_id") if isinstance(ann, dict) else None
        if not isinstance(ann, dict) or not is_int(iid):
            why = f"{label}: image_id {quote(iid)} is not an integer image id"
            why += "; it is left out"
            problems.append((origin, why))
            continue
        if iid in dropped:
            continue  # its image was left out, with its own problem
        image = by_id.get(iid)
        if image is None:
            why = f"{label}: image_id {iid} names no image entry; it is left out"
            problems.append((origin, why))
            continue
        reason = annotation_problem(ann, image, categories)
        if reason is not None:
            problems.append((readable(image["file_name"]), f"{label}: {reason}"))
            continue
        kept.append(clean_annotation(ann, image))
    return images, drawable_masks(images, kept), list(categories.values()), problems


def listed_files(images_dir, images):
    """Which file names of the image entries (safe ones: relative paths) are files in
    images_dir: one listing per folder they name, not one stat per image."""
    names = [img.get("file_name") for img in images if isinstance(img, dict)]
    names = {name for name in names if safe_name(name)}
    found = set()
    for parent in {os.path.dirname(n) for n in names}:
        try:
            with os.scandir(os.path.join(images_dir, parent)) as it:
                entries = [(e.name, e.is_file()) for e in it]
        except OSError:
            continue
        files = [n for n, is_file in entries if is_file]
        found.update(f"{parent}/{n}" if parent else n for n in files)
    return found & names


EMBEDDED = (is_int, is_number, numbers, safe_name, check_categories, image_problem,
            check_images, box_problem, clipped_box, rle_counts, rle_problem,
            segmentation_problem, keypoints_problem, annotation_problem, clean_annotation,
            drawable_masks, check_entries, listed_files)
"""The functions the exported module with labels carries verbatim, in this order."""
