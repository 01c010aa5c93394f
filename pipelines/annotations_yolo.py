"""A YOLO-labelled folder as a COCO instances document, so the engine treats both alike.

Each image of the folder (flat, the preview's image types, in byte order) may have a ``.txt``
of the same stem. Where Ultralytics keeps it first: when the folder's path has an ``images``
part and the path with its last ``images`` replaced by ``labels`` is a folder (``ds/images/
train`` -> ``ds/labels/train``, or Roboflow's ``ds/train/images`` -> ``ds/train/labels``),
there; else beside the image. A folder with no image of its own that holds ``images/`` and
``labels/`` (Roboflow's ``ds/train``) is read as its ``images/`` (file names ``images/x.jpg``,
as the preview lists them). A line is ``class cx cy w h`` (a box) or ``class x1 y1 x2 y2 x3
y3 ...`` (a polygon, an even count of at least 6 values: its mask and its bounding box); in a
pose dataset (``kpt_shape: [K, D]`` in ``data.yaml``) it is ``class cx cy w h`` and K
keypoints of D values. All are relative to the image, whose size is read from its header.
Class names come from the caller, else ``classes.txt`` (one a line), else ``data.yaml``
(:mod:`.annotations_yolo_yaml`), each looked for in the folder, then in the dataset root above
its ``images`` part, and ``data.yaml`` one level higher too when the folder is named
``images`` (Roboflow keeps it in ``ds`` beside ``ds/train``); else ``class 0``, ``class 1``
...; category id = class index + 1 (COCO ids start at 1). Nothing is read outside those
folders (nor outside the caller's ``confine``), symlinks followed. A line or file that cannot
be read is a problem naming the file (and line); an image without a ``.txt`` has no boxes, and
a folder none of whose images has one says so.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .annotations_coco import MAX_ANNOTATIONS, MAX_IMAGES, AnnotationError, AnnotationProblem
from .annotations_yolo_yaml import MAX_NAMES, yaml_kpt_shape, yaml_names
from .image_collect import within_root
from .image_files import SUPPORTED_EXTENSIONS, byte_key, matches, os_error_reason, readable
from .image_headers import HeaderLimitError, read_size
from .preset_document import file_kind, quote

__all__ = ["MAX_LABEL_BYTES", "MAX_NAMES", "MAX_NAMES_BYTES", "YoloLayout", "class_names",
           "read_regular", "yaml_names", "yolo_document"]

MAX_LABEL_BYTES = 8 << 20
"""Largest YOLO label file read."""
MAX_NAMES_BYTES = 1 << 20
"""Largest ``classes.txt`` or ``data.yaml`` read (10 000 names fit in a tenth of it)."""


def read_regular(path: Path, limit: int, shown: str) -> bytes:
    """The bytes of a regular file (checked before and after opening: a FIFO would block),
    at most ``limit``; AnnotationError otherwise."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise AnnotationError(f"{shown} is {file_kind(info.st_mode)}, not a regular file.")
        if info.st_size > limit:
            raise AnnotationError(f"{shown}: {info.st_size / 2**20:.1f} MiB is too large; at "
                                  f"most {limit >> 20} MiB is read.")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise AnnotationError(f"{shown}: cannot read it ({os_error_reason(err)}).") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise AnnotationError(f"{shown} is not a regular file.")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as err:
        raise AnnotationError(f"{shown}: cannot read it ({os_error_reason(err)}).") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise AnnotationError(f"{shown}: too large; at most {limit >> 20} MiB is read.")
    return data


def _text(path: Path, shown: str, limit: int = MAX_LABEL_BYTES) -> str:
    try:
        return read_regular(path, limit, shown).decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AnnotationError(f"{shown}: not UTF-8 text.") from None


@dataclass(frozen=True)
class YoloLayout:
    """Where the images, labels and names of a chosen folder may lie, and nowhere else.

    ``folder``: where the images lie: the chosen folder, or its ``images/`` when it holds
    ``images/`` and ``labels/`` and no image of its own (a split of Roboflow's export,
    ``ds/train``), named ``prefix`` + file name as the preview lists them (``images/x.jpg``).
    ``labels``: ``folder``'s path with its last ``images`` part replaced by ``labels``, when
    that is a folder (Ultralytics' rule); ``root``: the part above ``images`` then, else the
    folder itself. ``top``: when ``folder`` itself is named ``images`` (``ds/images`` or
    Roboflow's ``ds/train/images``), the folder above ``root``, where Roboflow keeps
    ``data.yaml``; looked in last, for ``data.yaml`` only. Paths are absolute but never
    shown: messages name files relative to ``root``."""

    folder: Path
    root: Path
    labels: Path | None
    top: Path | None = None
    prefix: str = ""

    @classmethod
    def of(cls, folder: Path, confine: Path | None = None) -> YoloLayout:
        """``confine``: a root every place must resolve inside (the served app's allowed
        root); the split layout is not used when its root lies above it, nor ``top``."""
        parts = Path(os.path.abspath(folder)).parts
        if "images" in parts:
            k = len(parts) - 1 - parts[::-1].index("images")
            root, labels = Path(*parts[:k]), Path(*parts[:k], "labels", *parts[k + 1:])
            if labels.is_dir() and (confine is None or within_root(root, confine)):
                top = root.parent if k == len(parts) - 1 and root.parent != root and (
                    confine is None or within_root(root.parent, confine)) else None
                return cls(Path(*parts), root, labels, top)
        chosen = Path(*parts)
        inner = chosen / "images"
        if inner.is_dir() and (chosen / "labels").is_dir() and not _has_images(chosen) and (
                confine is None or within_root(inner, confine)):
            split = cls.of(inner, confine)
            if split.labels is not None:
                return replace(split, prefix="images/")
        return cls(chosen, chosen, None)

    def places(self, name: str) -> list[Path]:
        """Where ``name`` (``classes.txt``, ``data.yaml``) is looked for: the folder, the
        root, then (``data.yaml`` / ``data.yml``) ``top``."""
        found = [self.folder] if self.root == self.folder else [self.folder, self.root]
        if self.top is not None and name.startswith("data."):
            found.append(self.top)
        return found

    def shown(self, path: Path) -> str:
        """``path`` for a message: relative to the root (its name for the folder's files)."""
        base = self.folder if path.parent == self.folder else self.root
        return readable(os.path.relpath(path, base).replace(os.sep, "/"))

    def inside(self, path: Path) -> bool:
        """Whether ``path`` resolves (symlinks followed) inside the folder or the root."""
        return within_root(path, self.folder) or within_root(path, self.root)

    def names_inside(self, path: Path) -> bool:
        """Whether a names file found in :meth:`places` resolves inside them."""
        return self.inside(path) or (self.top is not None and within_root(path, self.top))

    def label_file(self, image: str) -> Path | None:
        """The first of the image's label paths that exists (as an entry: a broken link or a
        FIFO is found, and refused when read)."""
        stem = image.rsplit(".", 1)[0] + ".txt"
        places = [self.labels, self.folder] if self.labels is not None else [self.folder]
        return next((p / stem for p in places if os.path.lexists(p / stem)), None)

    def missing_labels(self, count: int) -> AnnotationProblem:
        """Why a folder of ``count`` images with no label file loads no boxes."""
        if self.labels is None:
            where = ("beside each image (a dataset split into images/NAME and labels/NAME "
                     "keeps them in labels/NAME)")
        else:
            labels = readable(os.path.relpath(self.labels, self.root).replace(os.sep, "/"))
            where = (f"in {labels}/ (the images path with 'labels' for its last 'images', "
                     "as Ultralytics keeps them) and beside each image")
        return AnnotationProblem(readable(self.folder.name) or "images",
                                 f"none of its {count} images has a label file: looked for "
                                 f"the image's name with .txt {where}; a YOLO dataset has one "
                                 ".txt per image")


def _has_images(folder: Path) -> bool:
    """Whether ``folder`` holds an image file of its own (one it cannot list counts as
    holding some: it is then read as chosen, and listing it names the error)."""
    try:
        with os.scandir(folder) as it:
            return any(matches(e.name, SUPPORTED_EXTENSIONS) and e.is_file() for e in it)
    except OSError:
        return True


def _names_file(layout: YoloLayout, path: Path | None,
                problems: list[AnnotationProblem]) -> str | None:
    """The text of ``classes.txt`` or ``data.yaml``; None (and a problem) when it lies
    outside the dataset or cannot be read."""
    if path is None:
        return None
    shown = layout.shown(path)
    try:
        if not layout.names_inside(path):
            raise AnnotationError(f"{shown} leads outside the dataset folder; it was not opened")
        return _text(path, shown, MAX_NAMES_BYTES)
    except AnnotationError as err:
        problems.append(AnnotationProblem(shown, f"{str(err).rstrip('.')}; it is not used"))
        return None


def class_names(layout: YoloLayout, names: Sequence[str] | None
                ) -> tuple[list[str] | None, tuple[int, int] | None, list[AnnotationProblem]]:
    """(class names, pose ``kpt_shape``, problems): names given, else ``classes.txt``, else
    ``data.yaml``/``data.yml`` (read for ``kpt_shape`` in any case). A file or value that
    cannot be read is a problem naming it, and the classes are numbered."""
    problems: list[AnnotationProblem] = []
    if names is not None and (isinstance(names, str)
                              or not all(isinstance(n, str) for n in names)):
        raise AnnotationError("names must be a sequence of class names (strings).")
    first = {name: next((p / name for p in layout.places(name) if (p / name).is_file()), None)
             for name in ("classes.txt", "data.yaml", "data.yml")}
    yaml = first["data.yaml"] or first["data.yml"]
    text = _names_file(layout, yaml, problems)
    found = list(names) if names is not None else None
    kpt_shape = None
    if found is None and first["classes.txt"] is not None:
        listed = _names_file(layout, first["classes.txt"], problems)
        found = None if listed is None else [n.strip() for n in listed.splitlines() if n.strip()]
    elif found is None and yaml is not None and text is not None:
        try:
            found = yaml_names(text)
        except AnnotationError as err:
            problems.append(AnnotationProblem(layout.shown(yaml),
                                              f"{err}; the classes are numbered instead"))
    if yaml is not None and text is not None:
        try:
            kpt_shape = yaml_kpt_shape(text)
        except AnnotationError as err:
            problems.append(AnnotationProblem(layout.shown(yaml), f"{err}; lines are read as "
                                              "boxes and polygons"))
    if found is not None and len(found) > MAX_NAMES:
        raise AnnotationError(f"{len(found)} class names; at most {MAX_NAMES} are read.")
    return found, kpt_shape, problems


def _box(left: float, top: float, right: float, bottom: float, width: int,
         height: int) -> list[float]:
    """A COCO box in pixels from relative edges; an edge within half a pixel outside the
    image (rounding in the exporter) is put on the image's border."""
    def snap(v: float, size: int) -> float:
        return 0.0 if -0.5 <= v < 0 else float(size) if size < v <= size + 0.5 else v

    x0, x1 = snap(left * width, width), snap(right * width, width)
    y0, y1 = snap(top * height, height), snap(bottom * height, height)
    return [x0, y0, x1 - x0, y1 - y0]


@dataclass(frozen=True)
class _Label:
    """One label line: class index, COCO box in pixels, polygons and COCO keypoints."""

    cls: int
    bbox: list[float]
    segmentation: list[list[float]]
    keypoints: list[float]


def _keypoints(values: list[float], shape: tuple[int, int], width: int,
               height: int) -> list[float] | str:
    """COCO keypoints (x, y in pixels, visibility) of a pose line's values after its box;
    with 2 values a point is labelled unless a coordinate is negative (as Ultralytics)."""
    out: list[float] = []
    count, dims = shape
    for k in range(count):
        x, y = values[k * dims], values[k * dims + 1]
        v = values[k * dims + 2] if dims == 3 else (0 if x < 0 or y < 0 else 2)
        if v not in (0, 1, 2):
            return f"keypoint {k}: visibility {v:g} is not 0, 1 or 2"
        out += [x * width, y * height, int(v)] if v else [0.0, 0.0, 0]
    return out


def _line(tokens: list[str], width: int, height: int, classes: int | None,
          kpt_shape: tuple[int, int] | None) -> _Label | str:
    """One label line read, or why it is refused (naming the value and what is allowed)."""
    if not re.fullmatch(r"[0-9]{1,5}", tokens[0]) or int(tokens[0]) >= MAX_NAMES:
        return f"class {quote(tokens[0])} is not a class index (0 to {MAX_NAMES - 1})"
    values: list[float] = []
    for token in tokens[1:]:
        try:
            values.append(float(token))
        except ValueError:
            return f"{quote(token)}: a value is not a number"
        if not abs(values[-1]) < 1e6:  # NaN and inf fail too
            return (f"{quote(token)}: a value is not a finite number near the image "
                    "(coordinates are relative to it, 0 to 1)")
    cls, points = int(tokens[0]), list[float]()
    if classes is not None and cls >= classes:
        return (f"class {cls} is not one of the {classes} class names (0 to {classes - 1})"
                if classes else f"class {cls}: the list of class names is empty")
    if kpt_shape is not None:
        count, dims = kpt_shape
        if len(values) != 4 + count * dims:
            return (f"{len(values)} values after the class; a line of this pose dataset "
                    f"(kpt_shape [{count}, {dims}] in data.yaml) is 'class cx cy w h' and "
                    f"{count} keypoints of {dims} values: {4 + count * dims} values")
        read = _keypoints(values[4:], kpt_shape, width, height)
        if isinstance(read, str):
            return read
        points = read
    elif len(values) >= 6 and len(values) % 2 == 0:
        xs, ys = values[0::2], values[1::2]
        poly = [c for x, y in zip(xs, ys, strict=True) for c in (x * width, y * height)]
        return _Label(cls, _box(min(xs), min(ys), max(xs), max(ys), width, height), [poly], [])
    elif len(values) != 4:
        return (f"{len(values)} values after the class; a line is 'class cx cy w h' (4 "
                "values) or a polygon 'class x1 y1 x2 y2 x3 y3 ...' (an even number of "
                "values, at least 6), relative to the image")
    cx, cy, w, h = values[:4]
    box = _box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, width, height)
    return _Label(cls, box, [], points)


def _image_size(path: Path) -> tuple[int, int] | str:
    try:
        data_size = None
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as f:
            if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                data_size = read_size(f)
    except OSError as err:
        return os_error_reason(err)
    except HeaderLimitError as err:
        return f"its size cannot be read from its header ({err})"
    if data_size is None or data_size.width < 1 or data_size.height < 1:
        return "its size cannot be read from its header (not an image, or damaged)"
    return data_size.width, data_size.height


def yolo_document(folder: Path, names: Sequence[str] | None,
                  confine: Path | None = None) -> tuple[dict, list[AnnotationProblem],
                                                        dict[int, str]]:
    """(COCO document, problems, each annotation's ``file line N`` for messages);
    ``confine``: nothing is read outside it (the served app's allowed root)."""
    if not folder.is_dir():
        raise AnnotationError(f"{readable(folder.name) or str(folder)}: not a folder; a YOLO "
                              "dataset is a folder of images with one .txt of labels each.")
    layout = YoloLayout.of(folder, confine)
    with os.scandir(layout.folder) as it:
        files = sorted((e.name for e in it if matches(e.name, SUPPORTED_EXTENSIONS)
                        and e.is_file()), key=byte_key)
    if len(files) > MAX_IMAGES:
        raise AnnotationError(f"{len(files)} images; at most {MAX_IMAGES} are read.")
    listed, kpt_shape, problems = class_names(layout, names)
    images: list[dict] = []
    annotations: list[dict] = []
    where: dict[int, str] = {}
    seen, labelled = -1, 0
    for name in files:
        label = layout.label_file(name)
        labelled += label is not None
        size = _image_size(layout.folder / name)
        name = layout.prefix + name  # as the preview lists it, relative to the chosen folder
        if isinstance(size, str):
            problems.append(AnnotationProblem(readable(name), size))
            continue
        shown = layout.shown(label) if label is not None else ""
        try:
            if label is not None and not layout.inside(label):
                raise AnnotationError(f"{shown} leads outside the dataset folder; it was not "
                                      "opened")
            lines = _text(label, shown).splitlines() if label is not None else []
        except AnnotationError as err:  # its boxes are unknown: not shown as unlabelled
            problems.append(AnnotationProblem(readable(name), str(err).rstrip(".")))
            continue
        image = {"id": len(images) + 1, "file_name": name, "width": size[0], "height": size[1]}
        images.append(image)
        for n, line in enumerate(lines, 1):
            tokens = line.split()
            if not tokens or tokens[0].startswith("#"):
                continue
            parsed = _line(tokens, size[0], size[1], None if listed is None else len(listed),
                           kpt_shape)
            if isinstance(parsed, str):
                problems.append(AnnotationProblem(readable(name), f"{shown} line {n}: {parsed}"))
                continue
            if len(annotations) >= MAX_ANNOTATIONS:
                raise AnnotationError(f"more than {MAX_ANNOTATIONS} labels; at most "
                                      f"{MAX_ANNOTATIONS} are read (split the dataset).")
            seen = max(seen, parsed.cls)
            where[len(annotations)] = f"{shown} line {n}"
            box = parsed.bbox
            ann = {"id": len(annotations) + 1, "image_id": image["id"],
                   "category_id": parsed.cls + 1, "bbox": box, "iscrowd": 0,
                   "segmentation": parsed.segmentation, "area": box[2] * box[3]}
            if kpt_shape is not None:
                ann["keypoints"] = parsed.keypoints
                ann["num_keypoints"] = sum(1 for v in parsed.keypoints[2::3] if v)
            annotations.append(ann)
    if files and not labelled:
        problems.append(layout.missing_labels(len(files)))
    names_used = listed if listed is not None else [f"class {k}" for k in range(seen + 1)]
    points = [f"keypoint {k}" for k in range(kpt_shape[0])] if kpt_shape is not None else []
    categories = [{"id": k + 1, "name": n} | ({"keypoints": points} if points else {})
                  for k, n in enumerate(names_used)]
    return {"images": images, "annotations": annotations, "categories": categories}, \
        problems, where
