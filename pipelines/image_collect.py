"""Gathering the user's encoded images safely: from paths inside an allowed folder or uploads.

Reading user-chosen paths must not escape the allowed folder, hang on a FIFO or follow symlink
loops; every failure is a named problem, never an exception. Names shown to the user are
relative to the folder the user chose and made printable (:func:`readable`): error text never
carries a server path.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .image_files import (
    SUPPORTED_EXTENSIONS,
    image_listing,
    matches,
    os_error_reason,
    readable,
    scan_folder,
)

MAX_BYTES = 50 * 2**20
"""Largest encoded file read (bytes)."""
MAX_FILES = 1000
"""Most images gathered by one :func:`collect`."""


@dataclass(frozen=True)
class ImageProblem:
    """Why one input cannot be shown; ``str()`` gives the message for the user.
    ``over_limit``: the input was not read because ``max_files`` were gathered already."""

    name: str
    reason: str
    over_limit: bool = False

    @property
    def message(self) -> str:
        return f"{self.name}: {self.reason}"

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class EncodedImage:
    """The encoded bytes of one image and the name shown for it (e.g. its relative path)."""

    name: str
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class FolderSelection:
    """Chosen images of one folder, by their names relative to it (as the folder's listing,
    :func:`~.image_files.image_listing`, gives them), loaded in this order. A name that is not
    in the listing is refused, never opened: the names may come from a browser."""

    folder: Path
    files: tuple[str, ...]


@dataclass(frozen=True)
class ReaderFiles:
    """Files of a folder as the exported training pipeline lists them
    (:func:`pipelines.shards.training_files`), loaded in this order (repeats included) and
    named relative to it. For trusted callers (the CLI): the names are not checked against the
    preview's listing, nor their types against :data:`SUPPORTED_EXTENSIONS`: the reader reads
    them (``.ppm`` too), so DALI decodes them as the exported pipeline does, and one it cannot
    decode is a problem naming the reason the training run would fail on."""

    folder: Path
    files: tuple[str, ...]


Source = str | os.PathLike | bytes | bytearray | memoryview | tuple[str, bytes]
"""One input of :func:`collect`: a path, anonymous upload bytes, or a named upload."""


def _inside(path: str, root_real: str) -> bool:
    return path == root_real or path.startswith(root_real.rstrip(os.sep) + os.sep)


def within_root(path: str | os.PathLike, root: str | os.PathLike) -> bool:
    """Whether ``path`` resolves (symlinks followed) to ``root`` or inside it: the one
    allowed-root test, for sources other than :func:`collect` (labels, listings)."""
    return _inside(os.path.realpath(path), os.path.realpath(root))


def human_bytes(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


class _Collector:
    """Accumulates images and problems for :func:`collect`."""

    def __init__(self, root: Path | None, max_bytes: int, max_files: int) -> None:
        self.root = Path(root) if root is not None else None
        self.root_real = os.path.realpath(self.root) if self.root is not None else None
        self.max_bytes = max_bytes
        self.max_files = max_files
        self.images: list[EncodedImage] = []
        self.problems: list[ImageProblem] = []
        self.skipped = 0
        self.skipped_in = ""

    def problem(self, name: str, reason: str, over_limit: bool = False) -> None:
        self.problems.append(ImageProblem(readable(name), reason, over_limit))

    def full(self, name: str) -> bool:
        if len(self.images) < self.max_files:
            return False
        if not self.skipped:
            self.skipped_in = readable(name)
        self.skipped += 1
        return True

    def display(self, path: Path) -> str:
        if self.root is not None:
            with contextlib.suppress(ValueError):
                return path.relative_to(self.root).as_posix()
        return str(path)

    def resolve(self, raw: str | os.PathLike) -> Path:
        path = Path(raw)
        if self.root is not None and not path.is_absolute():
            path = self.root / path
        return path

    def allowed(self, path: Path) -> bool:
        return self.root_real is None or _inside(os.path.realpath(path), self.root_real)

    def add_bytes(self, name: str, data: bytes, *, check_suffix: bool) -> None:
        suffix = Path(name).suffix.lower()
        if check_suffix and suffix and suffix not in SUPPORTED_EXTENSIONS:
            self.problem(name, _unsupported(suffix))
        elif not data:
            self.problem(name, "empty (0 bytes)")
        elif len(data) > self.max_bytes:
            self.problem(name, _too_big(len(data), self.max_bytes))
        elif not self.full(name):
            self.images.append(EncodedImage(readable(name), bytes(data)))

    def add_path(self, raw: str | os.PathLike, *, in_folder: str | None = None,
                 check_suffix: bool = True) -> None:
        path = self.resolve(raw)
        name = in_folder if in_folder is not None else self.display(path)
        if not self.allowed(path):
            self.problem(name, "outside the allowed folder")
            return
        try:
            st = os.stat(path)
        except OSError as err:
            if err.errno == errno.ENOENT and os.path.islink(path):
                self.problem(name, "broken symbolic link")
            else:
                self.problem(name, os_error_reason(err))
            return
        if stat.S_ISDIR(st.st_mode) and in_folder is None:
            self.add_folder(path, name)
            return
        if not stat.S_ISREG(st.st_mode):
            self.problem(name, "not a regular file")
            return
        suffix = path.suffix.lower()
        if check_suffix and suffix not in SUPPORTED_EXTENSIONS:
            self.problem(name, _unsupported(suffix))
        elif st.st_size == 0:
            self.problem(name, "empty file (0 bytes)")
        elif st.st_size > self.max_bytes:
            self.problem(name, _too_big(st.st_size, self.max_bytes))
        elif not self.full(name):
            data = self.read(path, name)
            if data is not None:
                self.add_bytes(name, data, check_suffix=False)

    def read(self, path: Path, name: str) -> bytes | None:
        try:
            # O_NONBLOCK: a FIFO swapped in after the stat must not hang the app.
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError as err:
            self.problem(name, os_error_reason(err))
            return None
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                self.problem(name, "not a regular file")
                return None
            try:
                data = f.read(self.max_bytes + 1)
            except OSError as err:
                self.problem(name, os_error_reason(err))
                return None
        if len(data) > self.max_bytes:
            self.problem(name, _too_big(len(data), self.max_bytes))
            return None
        return data

    def add_folder(self, folder: Path, name: str, *, single: bool = False,
                   only: Sequence[str] | None = None) -> None:
        try:
            scan = scan_folder(folder)
        except OSError as err:
            self.problem(name, os_error_reason(err))
            return
        rels = image_listing(scan)
        if only is not None:
            listed = set(rels)
            for rel in only:
                if rel not in listed:
                    self.problem(rel, "not an image listed in this folder; it was not opened")
            rels = [r for r in only if r in listed]
        for entry, reason in scan.blocking:
            if matches(entry, SUPPORTED_EXTENSIONS):
                shown = entry if single else f"{name.rstrip('/')}/{entry}"
                self.problem(shown, reason)
                rels.append("")  # counted: the folder is not "empty"
        rels = [r for r in rels if r]
        if not rels and not any(matches(e, SUPPORTED_EXTENSIONS) for e, _ in scan.blocking):
            self.problem(name, "no images found")
            return
        for rel in rels:
            shown = rel if single else f"{name.rstrip('/')}/{rel}"
            self.add_path(folder / rel, in_folder=shown)


def _unsupported(suffix: str) -> str:
    kinds = ", ".join(sorted(s.lstrip(".") for s in SUPPORTED_EXTENSIONS))
    return f"unsupported file type '{readable(suffix) or '(none)'}' (supported: {kinds})"


def _too_big(size: int, limit: int) -> str:
    return f"too large ({human_bytes(size)}; the limit is {human_bytes(limit)})"


def collect(
    sources: Source | Sequence[Source],
    *,
    root: Path | None = None,
    max_bytes: int = MAX_BYTES,
    max_files: int = MAX_FILES,
) -> tuple[list[EncodedImage], list[ImageProblem]]:
    """Gathers encoded images from paths or uploads; every failure is a problem, never a raise.

    ``sources`` is a folder, a file, a :class:`FolderSelection`, :class:`ReaderFiles`, or a
    sequence of paths, ``bytes`` (named ``upload-N``) and ``(name, bytes)`` uploads. A folder
    lists, first, the images directly in it (which ``readers.file`` ignores but the app shows),
    then the files ``readers.file(file_root=folder)`` reads, in its order (:func:`scan_folder`),
    of the types the preview reads (:data:`SUPPORTED_EXTENSIONS`; the reader also reads
    ``.ppm`` and others): not the exported pipeline's set, which :class:`ReaderFiles` loads. A
    selection loads only its files, each checked against that listing first. With ``root``,
    relative paths are taken inside it and every path must resolve, symlinks followed, inside
    it, else it is not opened.
    Images of a folder are named relative to it; the folder itself, in a problem, by its path
    relative to ``root`` or (without ``root``) by its own name, never by a server path.
    Names are never URL-decoded.
    """
    col = _Collector(root, max_bytes, max_files)
    if isinstance(sources, ReaderFiles):
        for rel in sources.files:
            col.add_path(Path(sources.folder) / rel, in_folder=rel, check_suffix=False)
        return col.images, _finish(col)
    if isinstance(sources, FolderSelection):
        path = col.resolve(sources.folder)
        shown = col.display(path) if root is not None else (path.name or str(path))
        if not col.allowed(path):
            col.problem(shown, "outside the allowed folder")
        elif not path.is_dir():
            col.problem(shown, "not a folder")
        else:
            col.add_folder(path, shown, single=True, only=sources.files)
        return col.images, _finish(col)
    if isinstance(sources, (str, os.PathLike)):
        path = col.resolve(sources)
        if col.allowed(path) and path.is_dir():
            shown = col.display(path) if root is not None else (path.name or str(path))
            col.add_folder(path, shown, single=True)
        else:
            col.add_path(sources)
        return col.images, _finish(col)
    if isinstance(sources, (bytes, bytearray, memoryview)):
        items: Sequence[Source] = [sources]
    elif _is_named_upload(sources):
        items = [sources]  # type: ignore[list-item]
    else:
        items = sources  # type: ignore[assignment]
    uploads = 0
    for item in items:
        if isinstance(item, (bytes, bytearray, memoryview)):
            uploads += 1
            col.add_bytes(f"upload-{uploads}", bytes(item), check_suffix=False)
        elif _is_named_upload(item):
            name, data = item  # type: ignore[misc]
            col.add_bytes(str(name), bytes(data), check_suffix=True)
        elif isinstance(item, (str, os.PathLike)):
            col.add_path(item)
        else:
            col.problem(repr(item)[:60], "not a path, bytes or (name, bytes)")
    return col.images, _finish(col)


def _is_named_upload(item: object) -> bool:
    return (
        isinstance(item, tuple)
        and len(item) == 2
        and isinstance(item[0], str)
        and isinstance(item[1], (bytes, bytearray, memoryview))
    )


def _finish(col: _Collector) -> list[ImageProblem]:
    if col.skipped:
        col.problem(
            col.skipped_in,
            f"not loaded: only {col.max_files} images are loaded at once "
            f"({col.skipped} more skipped from here on)",
            over_limit=True,
        )
    return col.problems
