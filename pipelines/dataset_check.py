"""Check a training folder with the very reader and decoder the exported pipeline uses.

DALI stops a training run at the first file it cannot read or decode, and it silently trains on
garbage from JPEGs with corrupt entropy-coded data. ``dali-gallery check-images DIR`` finds all of
those up front: it reads ``DIR`` with ``fn.readers.file(file_root=DIR, dont_use_mmap=True)`` and
``fn.decoders.image(device="cpu", output_type=types.RGB)``, batch size 1 so every failure names
one file, and carries on after each failure.

Files are never decoded before their header says they fit (:func:`check_size`, the preview's
check). File names are bytes: DALI takes string arguments only as UTF-8, so an explicit list of
files (a restart, a flat folder, a folder whose path is not UTF-8) is given to the reader as a
``file_list`` file written in bytes, and names are printed through :func:`readable`.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import TextIO

import numpy as np

from .budget import IMAGE_PIXELS
from .codec_extensions import cpu_codecs
from .dali_errors import (
    captured_stderr,
    dali_error_text,
    decode_failure_reason,
    error_text,
    garbage_reason,
    garbage_warning,
)
from .image_collect import ImageProblem
from .image_decode import peek_shapes
from .image_files import (
    DALI_FILE_FILTERS,
    IMAGE_EXTENSIONS,
    SUPPORTED_EXTENSIONS,
    byte_key,
    is_utf8,
    os_error_reason,
    readable,
    scan_folder,
)
from .image_headers import check_size, pixel_limit_reason

MAX_PEEK_BYTES = 64 * 2**20
"""Files whose header our reader does not know are read whole for ``fn.peek_image_shape`` up
to this size; larger ones are left to the decoder."""


DALI_IMAGE_TYPES = tuple(s for s in DALI_FILE_FILTERS if s not in (".flac", ".ogg", ".wav"))
"""The image types among ``readers.file``'s default filters."""


class DatasetRootError(Exception):
    """The folder cannot be checked at all (missing, not a folder, no images)."""


def _prefixes(root: Path) -> tuple[str, ...]:
    """How DALI writes a file of ``root`` in ``source_info`` and its messages: after the
    absolute folder (a file list holds absolute paths) or after ``file_root`` as given."""
    absolute = os.fsdecode(os.fsencode(os.path.abspath(root)).rstrip(b"/") + b"/")
    return absolute, str(root).rstrip("/") + "/"


def _rel(info: str, root: Path) -> str:
    """The name relative to ``root`` of a path DALI reports (``source_info`` is relative to
    ``file_root`` in DALI 2.4, absolute for a file list of absolute paths)."""
    for prefix in _prefixes(root):
        if info.startswith(prefix):
            return info[len(prefix):]
    return info


def _file_list(folder: str, root: Path, files: list[str]) -> str:
    """A ``file_list`` for readers.file in ``folder``: one ``<absolute path bytes> 0`` line per
    file (bytes: DALI reads this file itself, so no name has to be UTF-8)."""
    base = os.fsencode(_prefixes(root)[0])
    path = os.path.join(folder, "files.txt")
    with open(path, "wb") as f:
        for rel in files:
            f.write(base + os.fsencode(rel) + b" 0\n")
    return path


def _build(root: Path, files: list[str] | None, num_threads: int) -> object:
    """The training reader + decoder; ``files`` (relative to root) restarts after a failure
    or leaves out files that must not be read, as a file list (read at build time)."""
    from nvidia.dali import fn, types
    from nvidia.dali.pipeline import Pipeline

    pipe = Pipeline(batch_size=1, num_threads=num_threads, device_id=None, prefetch_queue_depth=1)
    with tempfile.TemporaryDirectory(prefix="dali-gallery-check-") as folder, cpu_codecs():
        with pipe:
            if files is None:
                kwargs: dict[str, object] = {"file_root": str(root)}
            else:
                kwargs = {"file_list": _file_list(folder, root, files)}
            data, _labels = fn.readers.file(**kwargs, dont_use_mmap=True)
            image = fn.decoders.image(data, device="cpu", output_type=types.RGB)
            pipe.set_outputs(image.shape(), fn.get_property(data, key="source_info"))
        pipe.build()
    return pipe


_PATH_IN_ERROR = (
    re.compile(r"Could not open file (.+?): [^:]+$", re.M),
    re.compile(r"Failed to read file: (.+?)\s*$", re.M),
    re.compile(r"File mapping failed: (.+?)\s*$", re.M),
    re.compile(r"Failed to decode sample #\d+ : (.+?)\s*$", re.M),
)


def _named_file(text: str, root: Path, pending: list[str]) -> str | None:
    """The file a reader/decoder error message names, if it is one of ``pending``."""
    for pattern in _PATH_IN_ERROR:
        m = pattern.search(text)
        if m:
            rel = _rel(m.group(1).strip(), root)
            if rel in pending:
                return rel
    return None


def _unreadable(root: Path, rels: list[str]) -> str:
    """The first of ``rels`` Python cannot read either (used when DALI names no file)."""
    for rel in rels[:16]:  # the reader reads only a few samples ahead
        try:
            fd = _open_regular(root / rel)
        except OSError:
            return rel
        if fd is None:
            return rel
        with os.fdopen(fd, "rb") as f:
            if not f.read(1):
                return rel
    return rels[0]


def _without_root(text: str, root: Path) -> str:
    """DALI's text with the folder's path cut from the names it quotes (no server paths)."""
    for prefix in _prefixes(root):
        text = text.replace(prefix, "")
    return text


def _read_reason(path: Path, err: BaseException, root: Path) -> str:
    """Why the reader could not read ``path``: from the file system first, else DALI's text."""
    try:
        st = os.stat(path)
    except OSError as os_err:
        if os_err.errno == errno.ENOENT and os.path.islink(path):
            return "broken symbolic link"
        return os_error_reason(os_err)
    if not os.path.isfile(path):
        return "not a regular file"
    if st.st_size == 0:
        return "empty file (0 bytes)"
    if not os.access(path, os.R_OK):
        return "permission denied (unreadable)"
    return f"cannot be read ({readable(_without_root(dali_error_text(err), root))})"


def _decode_reason(path: Path, err: BaseException, stderr_text: str) -> str:
    """A 0-byte file reaches the decoder with ``dont_use_mmap=True``; say so plainly."""
    try:
        if os.stat(path).st_size == 0:
            return "empty file (0 bytes)"
    except OSError:
        pass
    return readable(decode_failure_reason(err, stderr_text))


def _open_regular(path: Path) -> int | None:
    """An fd for ``path`` if it is a regular file; never blocks on a FIFO."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    return None


def _pre_problems(root: Path, files: list[str], max_pixels: int) -> dict[str, str]:
    """Files the reader must not get: not regular files (a link to a FIFO would hang it),
    images whose header claims more than ``max_pixels`` or cannot be read within bounds
    (decoding them could exhaust memory), and names a ``file_list`` cannot hold."""
    found: dict[str, str] = {}
    for rel in files:
        if "\n" in rel or "\r" in rel:
            found[rel] = ("its name contains a line break: readers.file cannot be given it in a "
                          "file list; rename it")
            continue
        try:
            if not stat.S_ISREG(os.stat(root / rel).st_mode):
                found[rel] = "not a regular file"
                continue
            fd = _open_regular(root / rel)
        except OSError:
            continue  # missing, looping, unreadable: the reader reports it
        if fd is None:
            found[rel] = "not a regular file"
            continue
        with os.fdopen(fd, "rb") as f:
            check = check_size(f, max_pixels)
            problem = check.problem
            unknown = check.problem is None and check.size is None
            if unknown and f.seek(0, os.SEEK_END) <= MAX_PEEK_BYTES:
                f.seek(0)  # a format our reader does not know: ask DALI's parser, as the preview
                shape = peek_shapes([f.read()])[0]
                if shape is not None and shape[0] * shape[1] > max_pixels:
                    problem = pixel_limit_reason(shape[1], shape[0], max_pixels)
        if problem is not None:
            found[rel] = problem + ", not decoded"
    return found


def check_dataset(
    root: str | Path, *, num_threads: int = 2, max_pixels: int = IMAGE_PIXELS
) -> tuple[int, list[ImageProblem]]:
    """Reads and decodes every file ``readers.file(file_root=root)`` would train on.

    Returns (files checked, problems). Problems name files relative to ``root``, printable
    (:func:`readable`): files that cannot be read or decoded, JPEGs that decode to garbage,
    images over the pixel limit, links to non-files (checked in Python first: a link to a FIFO
    would hang the reader), entries that break the reader's folder scan, and images the reader
    silently ignores (directly in ``root``, in folders nested inside class folders, or of an
    image type it does not read: :data:`~.image_files.UNREAD_IMAGE_TYPES`). A reader
    error leaves the pipeline unusable and is raised ahead of its sample (the reader reads
    ahead), so the pipeline is rebuilt with a list of the files not yet checked. Raises
    :class:`DatasetRootError` when ``root`` cannot be checked at all.
    """
    root = Path(root)
    shown = readable(str(root))
    if not root.exists():
        raise DatasetRootError(f"{shown} does not exist.")
    if not root.is_dir():
        raise DatasetRootError(f"{shown} is not a folder.")
    try:
        scan = scan_folder(root)
    except OSError as err:
        raise DatasetRootError(f"{shown} cannot be listed: {os_error_reason(err)}.") from err
    problems: list[ImageProblem] = []
    for entry, reason in scan.blocking:
        problems.append(ImageProblem(
            readable(entry), f"{reason}; readers.file fails on it when it scans the folder"))
    # A flat folder (images, no subfolders) is what the exported pipeline reads as a file list
    # (its flat_folder_files); check it the same way.
    flat = not scan.files and bool(scan.top_level) and not any(
        p.is_dir() for p in root.iterdir())
    files = sorted(scan.top_level, key=byte_key) if flat else scan.files
    if not files:
        hint = (
            f" It has {len(scan.top_level)} image files directly inside it, which readers.file "
            "ignores."
            if scan.top_level
            else ""
        )
        if scan.loose_unread_types:
            hint += (f" It has {len(scan.loose_unread_types)} image files of a type the "
                     f"exported pipeline does not read ({_types(scan.loose_unread_types)}).")
        raise DatasetRootError(
            f"{shown} has no images where DALI's readers.file looks for them: it reads files "
            "inside class subfolders (ROOT/<class>/<image>.jpg) and uses the subfolder as the "
            f"label.{hint}"
        )
    for rel in [] if flat else scan.top_level:
        problems.append(ImageProblem(readable(rel), "directly in the dataset folder: "
                                     "readers.file ignores it (move it into a class subfolder)"))
    for rel in scan.nested:
        problems.append(ImageProblem(readable(rel) + "/", "folder inside a class folder: "
                                     "readers.file ignores the images in it"))
    for rel in scan.loose_unread_types if flat else scan.unread_types:
        problems.append(ImageProblem(readable(rel), _unread_type_reason(rel, flat)))

    found = _read_all(root, files, scan.blocking, flat, max_pixels, num_threads)
    order = {rel: i for i, rel in enumerate(files)}
    problems.extend(
        ImageProblem(readable(rel), found[rel])
        for rel in sorted(found, key=lambda r: order.get(r, -1))
    )
    return len(files), problems


def _types(rels: list[str]) -> str:
    return ", ".join(sorted({os.path.splitext(r)[1].lower() for r in rels}))


def _unread_type_reason(rel: str, flat: bool) -> str:
    """Why a file of an image type the exported pipeline does not read is left out."""
    kinds = ", ".join(s.lstrip(".") for s in (IMAGE_EXTENSIONS if flat else DALI_IMAGE_TYPES))
    reader = "the exported pipeline reads a flat folder's" if flat else "readers.file reads"
    return (f"not read: a {_types([rel])} file, and {reader} {kinds} files only, so training "
            "leaves it out (convert it to one of those)")


def _read_all(root: Path, files: list[str], blocking: list[tuple[str, str]], flat: bool,
              max_pixels: int, num_threads: int) -> dict[str, str]:
    """Runs the reader + decoder over ``files``; returns {relative name: reason}."""
    excluded = _pre_problems(root, files, max_pixels)
    found: dict[str, str] = dict(excluded)
    pending = [rel for rel in files if rel not in excluded]
    use_file_root = not blocking and not excluded and not flat and is_utf8(str(root))
    while pending:
        try:
            pipe = _build(root, None if use_file_root else pending, num_threads)
        except Exception as err:  # DALI raises RuntimeError at build
            if not use_file_root:
                raise DatasetRootError(
                    f"DALI's readers.file could not be built on {readable(str(root))}: "
                    f"{readable(_without_root(dali_error_text(err), root))}."
                ) from err
            use_file_root = False  # e.g. the folder changed under us: list the files explicitly
            continue
        use_file_root = False
        done = 0
        restart: list[str] | None = None
        while done < len(pending):
            try:
                with captured_stderr() as cap:
                    _shape, info = pipe.run()  # type: ignore[attr-defined]
            except Exception as err:  # DALI raises RuntimeError (UnicodeDecodeError for names
                text = error_text(err)  # that are not UTF-8)
                if "decoders.image" in text:
                    # A decode error: the reader is fine and moves on to the next sample.
                    rel = _named_file(text, root, pending[done:]) or pending[done]
                    found[rel] = _decode_reason(root / rel, err, cap.text)
                    done = pending.index(rel) + 1
                    continue
                # A reader error (possibly for a file read ahead): the pipeline is unusable.
                rel = (_named_file(text, root, pending[done:])
                       or _unreadable(root, pending[done:]))
                found[rel] = _read_reason(root / rel, err, root)
                restart = [r for r in pending[done:] if r != rel]
                break
            rel = _rel(os.fsdecode(np.array(info[0]).tobytes()), root)
            warning = garbage_warning(cap.text)
            if warning is not None:
                found[rel] = garbage_reason(warning)
            done = pending.index(rel, done) + 1 if rel in pending[done:] else done + 1
        del pipe
        if restart is None:
            break
        pending = restart
    return found


def format_report(checked: int, problems: list[ImageProblem]) -> str:
    """The text ``check-images`` prints: a summary line, then one line per problem."""
    files = f"{checked} file{'s' if checked != 1 else ''}"
    if not problems:
        return f"Checked {files} with DALI's readers.file + decoders.image: all decode cleanly."
    lines = [
        f"Checked {files} with DALI's readers.file + decoders.image: "
        f"{len(problems)} problem{'s' if len(problems) != 1 else ''}."
    ]
    lines += [f"  {readable(p.name)}: {p.reason}" for p in problems]
    lines.append(
        "A training pipeline stops at the first file it cannot read or decode, and trains on "
        "garbage from corrupt JPEG data: fix or remove these files."
    )
    return "\n".join(lines)


def run_check(root: str | Path, out: TextIO | None = None, *,
              max_pixels: int = IMAGE_PIXELS) -> int:
    """CLI body: prints the report; returns 0 (all good), 1 (problems) or 2 (cannot check).

    ``out`` defaults to the ``sys.stdout`` of call time (not import time, which pytest/Jupyter
    replace).
    """
    out = sys.stdout if out is None else out
    try:
        checked, problems = check_dataset(root, max_pixels=max_pixels)
    except DatasetRootError as err:
        kinds = ", ".join(sorted(s.lstrip(".") for s in SUPPORTED_EXTENSIONS))
        print(
            f"Cannot check images: {err} dali-gallery check-images expects a training folder "
            f"laid out for readers.file: one subfolder per class holding {kinds} images.",
            file=out,
        )
        return 2
    print(format_report(checked, problems), file=out)
    return 1 if problems else 0
