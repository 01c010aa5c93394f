"""Check a training folder with the very reader and decoder the exported pipeline uses.

DALI stops a training run at the first file it cannot read or decode, and it silently trains on
garbage from JPEGs with corrupt entropy-coded data. ``dali-gallery check-images DIR`` finds all of
those up front: it reads ``DIR`` with ``fn.readers.file(file_root=DIR, dont_use_mmap=True)`` and
``fn.decoders.image(device="cpu", output_type=types.RGB)``, batch size 1 so every failure names
one file, and carries on after each failure.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
from pathlib import Path
from typing import TextIO

import numpy as np

from .images import (
    MAX_PIXELS,
    SUPPORTED_EXTENSIONS,
    ImageProblem,
    captured_stderr,
    dali_error_text,
    decode_failure_reason,
    garbage_reason,
    garbage_warning,
    header_size,
    os_error_reason,
    pixel_limit_reason,
    scan_folder,
)


class DatasetRootError(Exception):
    """The folder cannot be checked at all (missing, not a folder, no images)."""


def _build(root: Path, files: list[str] | None, num_threads: int) -> object:
    """The training reader + decoder; ``files`` (relative to root) restarts after a failure."""
    from nvidia.dali import fn, types
    from nvidia.dali.pipeline import Pipeline

    pipe = Pipeline(batch_size=1, num_threads=num_threads, device_id=None, prefetch_queue_depth=1)
    with pipe:
        kwargs: dict[str, object] = {"file_root": str(root), "dont_use_mmap": True}
        if files is not None:
            kwargs["files"] = files
        data, _labels = fn.readers.file(**kwargs)
        image = fn.decoders.image(data, device="cpu", output_type=types.RGB)
        pipe.set_outputs(image.shape(), fn.get_property(data, key="source_info"))
    pipe.build()
    return pipe


def _rel(info: str, root: Path) -> str:
    """``source_info`` is relative to ``file_root`` in DALI 2.4; accept absolute paths too."""
    if os.path.isabs(info):
        try:
            return Path(info).relative_to(root).as_posix()
        except ValueError:
            return info
    return info


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


def _read_reason(path: Path, err: BaseException) -> str:
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
    return f"cannot be read ({dali_error_text(err)})"


def _decode_reason(path: Path, err: BaseException, stderr_text: str) -> str:
    """A 0-byte file reaches the decoder with ``dont_use_mmap=True``; say so plainly."""
    try:
        if os.stat(path).st_size == 0:
            return "empty file (0 bytes)"
    except OSError:
        pass
    return decode_failure_reason(err, stderr_text)


def _open_regular(path: Path) -> int | None:
    """An fd for ``path`` if it is a regular file; never blocks on a FIFO."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    if stat.S_ISREG(os.fstat(fd).st_mode):
        return fd
    os.close(fd)
    return None


def _pre_problems(root: Path, files: list[str], max_pixels: int) -> dict[str, str]:
    """Files the reader must not get: not regular files (a link to a FIFO would hang it) and
    headers claiming more than ``max_pixels`` (decoding them could exhaust memory)."""
    found: dict[str, str] = {}
    for rel in files:
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
            head = f.read(256 * 1024)
        size = header_size(head)
        if size is not None and size[0] * size[1] > max_pixels:
            found[rel] = pixel_limit_reason(*size, max_pixels) + ", not decoded"
    return found


def check_dataset(
    root: str | Path, *, num_threads: int = 2, max_pixels: int = MAX_PIXELS
) -> tuple[int, list[ImageProblem]]:
    """Reads and decodes every file ``readers.file(file_root=root)`` would train on.

    Returns (files checked, problems). Problems name files relative to ``root``: files that
    cannot be read or decoded, JPEGs that decode to garbage, images over the pixel limit, links to
    non-files (checked in Python first: a link to a FIFO would hang the reader), entries
    that break the reader's folder scan, and images the reader silently ignores (directly in
    ``root`` or in folders nested inside class folders). A reader error leaves the pipeline
    unusable and is raised ahead of its sample (the reader reads ahead), so the pipeline is
    rebuilt with ``files=`` set to the files not yet checked. Raises :class:`DatasetRootError`
    when ``root`` cannot be checked at all.
    """
    root = Path(root)
    if not root.exists():
        raise DatasetRootError(f"{root} does not exist.")
    if not root.is_dir():
        raise DatasetRootError(f"{root} is not a folder.")
    try:
        scan = scan_folder(root)
    except OSError as err:
        raise DatasetRootError(f"{root} cannot be listed: {os_error_reason(err)}.") from err
    problems: list[ImageProblem] = []
    for entry, reason in scan.blocking:
        problems.append(
            ImageProblem(entry, f"{reason}; readers.file fails on it when it scans the folder")
        )
    # A flat folder (images, no subfolders) is what the exported pipeline reads as a file list
    # (its flat_folder_files); check it the same way.
    flat = not scan.files and bool(scan.top_level) and not any(
        p.is_dir() for p in root.iterdir())
    files = sorted(scan.top_level, key=lambda r: r.encode()) if flat else scan.files
    if not files:
        hint = (
            f" It has {len(scan.top_level)} image files directly inside it, which readers.file "
            "ignores."
            if scan.top_level
            else ""
        )
        raise DatasetRootError(
            f"{root} has no images where DALI's readers.file looks for them: it reads files "
            "inside class subfolders (ROOT/<class>/<image>.jpg) and uses the subfolder as the "
            f"label.{hint}"
        )
    for rel in [] if flat else scan.top_level:
        problems.append(ImageProblem(rel, "directly in the dataset folder: readers.file ignores "
                                          "it (move it into a class subfolder)"))
    for rel in scan.nested:
        problems.append(ImageProblem(rel + "/", "folder inside a class folder: readers.file "
                                                "ignores the images in it"))

    excluded = _pre_problems(root, files, max_pixels)
    found: dict[str, str] = dict(excluded)
    pending = [rel for rel in files if rel not in excluded]
    use_file_root = not scan.blocking and not excluded and not flat
    while pending:
        try:
            pipe = _build(root, None if use_file_root else pending, num_threads)
        except Exception as err:  # DALI raises RuntimeError at build
            if not use_file_root:
                raise DatasetRootError(
                    f"DALI's readers.file could not be built on {root}: {dali_error_text(err)}."
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
            except Exception as err:  # DALI raises RuntimeError
                text = str(err)
                if "decoders.image" in text:
                    # A decode error: the reader is fine and moves on to the next sample.
                    rel = _named_file(text, root, pending[done:]) or pending[done]
                    found[rel] = _decode_reason(root / rel, err, cap.text)
                    done = pending.index(rel) + 1
                    continue
                # A reader error (possibly for a file read ahead): the pipeline is unusable.
                rel = _named_file(text, root, pending[done:]) or _unreadable(root, pending[done:])
                found[rel] = _read_reason(root / rel, err)
                restart = [r for r in pending[done:] if r != rel]
                break
            rel = _rel(np.array(info[0]).tobytes().decode("utf-8", "replace"), root)
            warning = garbage_warning(cap.text)
            if warning is not None:
                found[rel] = garbage_reason(warning)
            done = pending.index(rel, done) + 1 if rel in pending[done:] else done + 1
        del pipe
        if restart is None:
            break
        pending = restart
    order = {rel: i for i, rel in enumerate(files)}
    problems.extend(
        ImageProblem(rel, found[rel]) for rel in sorted(found, key=lambda r: order.get(r, -1))
    )
    return len(files), problems


def format_report(checked: int, problems: list[ImageProblem]) -> str:
    """The text ``check-images`` prints: a summary line, then one line per problem."""
    files = f"{checked} file{'s' if checked != 1 else ''}"
    if not problems:
        return f"Checked {files} with DALI's readers.file + decoders.image: all decode cleanly."
    lines = [
        f"Checked {files} with DALI's readers.file + decoders.image: "
        f"{len(problems)} problem{'s' if len(problems) != 1 else ''}."
    ]
    lines += [f"  {p.name}: {p.reason}" for p in problems]
    lines.append(
        "A training pipeline stops at the first file it cannot read or decode, and trains on "
        "garbage from corrupt JPEG data: fix or remove these files."
    )
    return "\n".join(lines)


def run_check(root: str | Path, out: TextIO | None = None) -> int:
    """CLI body: prints the report; returns 0 (all good), 1 (problems) or 2 (cannot check).

    ``out`` defaults to the ``sys.stdout`` of call time (not import time, which pytest/Jupyter
    replace).
    """
    out = sys.stdout if out is None else out
    try:
        checked, problems = check_dataset(root)
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
