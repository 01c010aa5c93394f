"""A YOLO-labelled folder as a COCO instances document, so the engine treats both alike.

Each image of the folder (flat, the preview's image types, in byte order) may have a ``.txt``
of the same stem beside it, or in a sibling ``labels/`` folder when the folder is named
``images`` (the Ultralytics layout). A line is ``class cx cy w h`` (a box) or
``class x1 y1 x2 y2 x3 y3 ...`` (a polygon: its mask and its bounding box), all relative to
the image, whose size is read from its header. Class names come from the caller, else
``classes.txt`` (one a line), else ``data.yaml`` (``names:`` as a list or an index map), else
``class 0``, ``class 1`` ...; category id = class index + 1 (COCO ids start at 1). A line that
cannot be read is a problem naming the file and line; an image without a ``.txt`` has no boxes.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from .annotations_coco import MAX_ANNOTATIONS, MAX_IMAGES, AnnotationError, AnnotationProblem
from .image_files import SUPPORTED_EXTENSIONS, byte_key, matches, os_error_reason, readable
from .image_headers import HeaderLimitError, read_size
from .preset_document import file_kind, quote

MAX_LABEL_BYTES = 8 << 20
"""Largest YOLO label file read."""
MAX_NAMES = 10_000
"""Most class names."""
MAX_NAMES_BYTES = 1 << 20
"""Largest ``classes.txt`` or ``data.yaml`` read (10 000 names fit in a tenth of it)."""
_KEY = re.compile(r"(\d{1,6})[ \t]*:[ \t]*")


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


def _quoted(text: str, i: int) -> tuple[str, int]:
    """The value of a quoted YAML scalar starting at ``text[i]`` and the index after it."""
    mark, chars, i = text[i], [], i + 1
    while i < len(text):
        if mark == "'" and text.startswith("''", i):
            chars.append("'")
            i += 2
        elif mark == '"' and text[i] == "\\" and i + 1 < len(text):
            chars.append(text[i + 1])
            i += 2
        elif text[i] == mark:
            return "".join(chars), i + 1
        else:
            chars.append(text[i])
            i += 1
    return "".join(chars), i


def _items(text: str) -> list[tuple[str | None, str]]:
    """(index or None, value) of each item of a YAML flow list or map body: values plain,
    'single' or "double" quoted. One pass, so no input makes it slow."""
    out: list[tuple[str | None, str]] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t":
            i += 1
        m = _KEY.match(text, i)
        key, i = (m.group(1), m.end()) if m else (None, i)
        comma = text.find(",", i)
        end = n if comma < 0 else comma
        if i < n and text[i] in "'\"":
            value, i = _quoted(text, i)
            comma = text.find(",", i)
            end = n if comma < 0 else comma
        else:
            value = text[i:end].strip()
        if value or key is not None:
            out.append((key, value))
        i = end + 1
    return out


def yaml_names(text: str) -> list[str] | None:
    """``names`` of a YOLO ``data.yaml``: a flow list ``[a, 'b c']``, a block list
    (``- a`` lines) or an index map (``0: a`` lines, or ``{0: a, 1: b}``); None when absent.
    A few lines of parsing rather than a YAML dependency for one key."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"names\s*:(.*)$", line)
        if m is None:
            continue
        rest = m.group(1).strip()
        rest = "" if rest.startswith("#") else rest.split(" #", 1)[0].strip()
        if rest[:1] in ("[", "{"):
            body = " ".join([rest] + [more.strip() for more in lines[i + 1:]])
            close = body.find("]" if rest[0] == "[" else "}")
            entries = _items(body[1:close] if close > 0 else body[1:])
        elif rest:
            return None
        else:
            entries = []
            for raw in lines[i + 1:]:
                item = raw.strip()
                if not item or item.startswith("#"):
                    continue
                if not raw[:1].isspace():
                    break
                entries.extend(_items(item[1:] if item.startswith("-") else item)[:1])
        if entries and all(key is not None for key, _ in entries):
            found = {int(k): v for k, v in entries if int(k) < MAX_NAMES}  # type: ignore[arg-type]
            return [found.get(k, f"class {k}") for k in range(max(found, default=-1) + 1)]
        return [value for _, value in entries]
    return None


def class_names(folder: Path, names: Sequence[str] | None) -> list[str] | None:
    """The class names: given, else ``classes.txt``, else ``data.yaml``/``data.yml``."""
    if names is not None:
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise AnnotationError("names must be a sequence of class names (strings).")
        found: list[str] | None = list(names)
    elif (folder / "classes.txt").is_file():
        found = [n.strip() for n in _text(folder / "classes.txt", "classes.txt",
                                          MAX_NAMES_BYTES).splitlines() if n.strip()]
    else:
        yaml = next((folder / n for n in ("data.yaml", "data.yml") if (folder / n).is_file()),
                    None)
        found = (yaml_names(_text(yaml, yaml.name, MAX_NAMES_BYTES)) if yaml is not None
                 else None)
    if found is not None and len(found) > MAX_NAMES:
        raise AnnotationError(f"{len(found)} class names; at most {MAX_NAMES} are read.")
    return found


def _label_file(folder: Path, image: str) -> Path | None:
    stem = image.rsplit(".", 1)[0] + ".txt"
    candidates = [folder / stem]
    if folder.name == "images":
        candidates.append(folder.parent / "labels" / stem)
    return next((p for p in candidates if os.path.lexists(p)), None)


def _box(left: float, top: float, right: float, bottom: float, width: int,
         height: int) -> list[float]:
    """A COCO box in pixels from relative edges; an edge within half a pixel outside the
    image (rounding in the exporter) is put on the image's border."""
    def snap(v: float, size: int) -> float:
        return 0.0 if -0.5 <= v < 0 else float(size) if size < v <= size + 0.5 else v

    x0, x1 = snap(left * width, width), snap(right * width, width)
    y0, y1 = snap(top * height, height), snap(bottom * height, height)
    return [x0, y0, x1 - x0, y1 - y0]


def _line(tokens: list[str], width: int, height: int,
          classes: int | None) -> tuple[int, list[float], list[list[float]]] | str:
    """(class, COCO bbox in pixels, segmentation) of one label line, or why it is refused."""
    if not re.fullmatch(r"[0-9]{1,5}", tokens[0]) or int(tokens[0]) >= MAX_NAMES:
        return f"class {quote(tokens[0])} is not a class index (0 to {MAX_NAMES - 1})"
    try:
        values = [float(t) for t in tokens[1:]]
    except ValueError:
        return "a value is not a number"
    if not all(abs(v) < 1e6 for v in values):  # NaN and inf fail too
        return "a value is not a finite number near the image (relative coordinates)"
    cls = int(tokens[0])
    if classes is not None and cls >= classes:
        return f"class {cls} is not one of the {classes} class names (0 to {classes - 1})"
    if len(values) == 4:
        cx, cy, w, h = values
        return cls, _box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2, width, height), []
    if len(values) >= 6 and len(values) % 2 == 0:
        xs, ys = values[0::2], values[1::2]
        poly = [c for x, y in zip(xs, ys, strict=True) for c in (x * width, y * height)]
        return cls, _box(min(xs), min(ys), max(xs), max(ys), width, height), [poly]
    return (f"{len(values)} values after the class; a line is 'class cx cy w h' or a polygon "
            "'class x1 y1 x2 y2 x3 y3 ...' (at least 3 points), relative to the image")


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


def yolo_document(folder: Path,
                  names: Sequence[str] | None) -> tuple[dict, list[AnnotationProblem],
                                                        dict[int, str]]:
    """(COCO document, problems, each annotation's ``file line N`` for messages)."""
    if not folder.is_dir():
        raise AnnotationError(f"{readable(folder.name) or str(folder)}: not a folder; a YOLO "
                              "dataset is a folder of images with one .txt of labels each.")
    with os.scandir(folder) as it:
        files = sorted((e.name for e in it if matches(e.name, SUPPORTED_EXTENSIONS)
                        and e.is_file()), key=byte_key)
    if len(files) > MAX_IMAGES:
        raise AnnotationError(f"{len(files)} images; at most {MAX_IMAGES} are read.")
    listed = class_names(folder, names)
    problems: list[AnnotationProblem] = []
    images: list[dict] = []
    annotations: list[dict] = []
    where: dict[int, str] = {}
    seen = -1
    for name in files:
        size = _image_size(folder / name)
        if isinstance(size, str):
            problems.append(AnnotationProblem(readable(name), size))
            continue
        label = _label_file(folder, name)
        shown = readable(label.name) if label is not None else ""
        try:
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
            parsed = _line(tokens, size[0], size[1], None if listed is None else len(listed))
            if isinstance(parsed, str):
                problems.append(AnnotationProblem(readable(name), f"{shown} line {n}: {parsed}"))
                continue
            if len(annotations) >= MAX_ANNOTATIONS:
                raise AnnotationError(f"more than {MAX_ANNOTATIONS} labels; at most "
                                      f"{MAX_ANNOTATIONS} are read (split the dataset).")
            cls, box, segmentation = parsed
            seen = max(seen, cls)
            where[len(annotations)] = f"{shown} line {n}"
            annotations.append({"id": len(annotations) + 1, "image_id": image["id"],
                                "category_id": cls + 1, "bbox": box, "iscrowd": 0,
                                "segmentation": segmentation, "area": box[2] * box[3]})
    names_used = listed if listed is not None else [f"class {k}" for k in range(seen + 1)]
    categories = [{"id": k + 1, "name": n} for k, n in enumerate(names_used)]
    return {"images": images, "annotations": annotations, "categories": categories}, \
        problems, where
