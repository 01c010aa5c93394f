"""What the preview's images are: a source (samples, a folder, files or uploads), a folder's
listing, and the checks on folders a user types.

A folder is previewed through a :class:`FolderSelection` of its files: by default the first of
each class folder, then the second of each, and so on (:func:`pipelines.image_files.spread`), so
that a folder of classes shows every class rather than a screenful of the first one; the user can
pick other files from the listing (:class:`FolderListing`). A path given in code that does not
exist is an error at once: a notebook copied elsewhere must not silently preview nothing.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dali_gallery.pipelines.image_collect import FolderSelection, ImageProblem, within_root
from dali_gallery.pipelines.image_files import (
    class_of,
    image_listing,
    os_error_reason,
    scan_folder,
    spread,
)
from dali_gallery.pipelines.shards import flat_folder_files, training_files

SAMPLES_DIR = Path(__file__).resolve().parents[1] / "gallery" / "samples"
"""The bundled sample images (package data next to this package; read, not imported)."""
SAMPLE_ANNOTATIONS = SAMPLES_DIR / "instances.json"
"""COCO instances (boxes and polygon masks drawn by hand) for four of the sample images."""
DEFAULT_PICK = 6
"""Images of a folder previewed by default (the builder passes its own ``max_images``)."""
MAX_FOLDERS_LISTED = 300
MAX_FOLDER_CHARS = 1024
"""Longest folder name typed in the app (a path of the allowed root's folders, not a document)."""


@dataclass(frozen=True)
class FolderListing:
    """The images of one folder: ``files`` in file order (those directly in the folder first),
    what the preview can show and the user pick from; ``order`` round-robin over the class
    folders (what the preview picks); ``reader`` what the exported pipeline reads, in its order
    (:func:`pipelines.shards.training_files`), which ``dali-gallery render --images`` previews
    first. ``files`` and ``reader`` differ where the preview deliberately shows more (images
    beside class folders, which the reader ignores) or cannot show a file the reader reads (a
    type such as ``.ppm``): :meth:`describe` counts both."""

    folder: Path
    files: tuple[str, ...]
    order: tuple[str, ...]
    classes: int
    loose: int
    reader: tuple[str, ...]
    unread_types: int = 0
    """Image files of a type neither the preview nor the exported pipeline reads (a ``.gif``):
    training leaves them out, so :meth:`describe` counts them."""

    @classmethod
    def of(cls, folder: Path, root: Path | None = None) -> FolderListing:
        """List ``folder`` (OSError when it cannot be read); with ``root`` (the allowed
        root), the files of a class folder that resolves outside it (a symlink) are not
        listed: their names would show the page what lies outside. (A file's own link is
        listed by its name inside the root, and refused with a problem when read.)"""
        scan = scan_folder(folder)
        files = image_listing(scan)
        if root is not None:
            parents = {os.path.dirname(f) for f in files}
            outside = {p for p in parents if p and not within_root(Path(folder) / p, root)}
            files = [f for f in files if os.path.dirname(f) not in outside]
        names = {class_of(r) for r in files}
        reader = training_files(folder)
        flat = flat_folder_files(folder) is not None
        return cls(Path(folder), tuple(files), tuple(spread(files)), len(names - {""}),
                   sum(1 for r in files if not class_of(r)), tuple(reader),
                   len(scan.loose_unread_types if flat else scan.unread_types))

    def pick(self, n: int) -> FolderSelection:
        """The first ``n`` images in round-robin order (so that fewer rows still show every
        class first)."""
        return FolderSelection(self.folder, self.order[:n])

    def is_prefix(self, files: Sequence[str]) -> bool:
        """Whether ``files`` are the first files the exported pipeline reads, in its order
        (what ``render --images FOLDER --batch-size len(files)`` previews)."""
        return tuple(files) == self.reader[: len(files)]

    @property
    def unread(self) -> int:
        """Images the preview offers that the exported pipeline never reads."""
        return len(set(self.files) - set(self.reader))

    @property
    def unshown(self) -> int:
        """Files the exported pipeline reads that the preview cannot show."""
        return len(set(self.reader) - set(self.files))

    def describe(self) -> str:
        n = len(self.files)
        text = f"{n} image{'s' if n != 1 else ''}"
        if self.classes:
            text += f" in {self.classes} class folder{'s' if self.classes != 1 else ''}"
            if self.loose:
                text += f" (+{self.loose} directly in the folder)"
        if self.unread:
            text += f"; {self.unread} of them not read by the exported pipeline"
        if self.unshown:
            text += (f"; {self.unshown} file{'s' if self.unshown != 1 else ''} it reads "
                     "cannot be previewed (a type the preview does not read)")
        if self.unread_types:
            text += (f"; {self.unread_types} image file{'s' if self.unread_types != 1 else ''} "
                     "of a type neither the preview nor the exported pipeline reads (e.g. "
                     ".gif): training leaves them out")
        return text


@dataclass
class ImageSource:
    """A set of images to preview and how to name it (for the UI and the CLI command)."""

    kind: str  # "samples" | "folder" | "paths" | "upload"
    items: Any  # a FolderSelection, a folder Path, a list of paths, or a list of (name, bytes)
    label: str
    root: Path | None = None
    problems: list[ImageProblem] = field(default_factory=list)
    listing: FolderListing | None = None

    @property
    def folder(self) -> Path | None:
        """The folder the images come from, for a samples or folder source."""
        if isinstance(self.items, FolderSelection):
            return Path(self.items.folder)
        return Path(self.items) if self.kind in ("samples", "folder") else None

    @property
    def selected_prefix(self) -> bool:
        """Whether the previewed files are the folder's first ones (what the CLI reads)."""
        if not isinstance(self.items, FolderSelection):
            return True
        if self.listing is None:
            return False
        return self.listing.is_prefix(self.items.files)

    @property
    def cli_path(self) -> str | None:
        """What ``dali-gallery render --images`` takes to read the same files, if anything.

        A confined source (``root`` set: the served app) is named relative to its root, never
        by the server's absolute path, which the page would show to every visitor."""
        path = self.folder
        if path is not None:
            if not self.selected_prefix:
                return None
        elif self.kind == "paths" and len(self.items) == 1:
            path = Path(self.items[0])
        else:
            return None
        if self.root is None:
            return str(path.resolve())
        if self.kind == "samples":  # confined to the samples folder, not under the allowed root
            return None
        return _relative(path, self.root)

    @property
    def cli_note(self) -> str:
        """Why the CLI command cannot name these images ("" when it can)."""
        if self.cli_path is not None:
            return ""
        if self.folder is not None and not self.selected_prefix:
            return ("The preview shows chosen files of the folder (spread over its class "
                    "folders); --images FOLDER renders the first files the exported pipeline "
                    "reads, in its order: put the chosen files in a folder of their own to "
                    "render exactly these.")
        return ("The preview images are not one folder on the server: put the same files in a "
                "folder and pass it to --images.")


def source_from(images: Any, root: Path | None = None, pick: int = DEFAULT_PICK) -> ImageSource:
    """An :class:`ImageSource` for what ``Builder(images=...)`` accepts: a folder or file
    path, a list of paths, or a list of (name, bytes) uploads (an ImageSource as it is).
    A folder previews ``pick`` of its images spread over its class folders. With ``root`` every
    file must lie inside it (symlinks followed) and paths are shown relative to it.
    FileNotFoundError: a path that does not exist (no silent empty preview)."""
    if isinstance(images, ImageSource):
        return images
    if isinstance(images, (str, os.PathLike)):
        path = Path(images)
        if not path.exists():
            raise FileNotFoundError(
                f"images={os.fspath(images)!r}: no such folder or file (a relative path is "
                "taken from the current working folder; the bundled samples are "
                "dali_gallery.gallery.samples_dir())")
        kind = "samples" if root is None and _same_path(path, SAMPLES_DIR) else (
            "folder" if path.is_dir() else "paths")
        label = str(path) if root is None else (_relative(path, root) or path.name)
        label = Path(root).name if root is not None and label == "." else label
        if kind == "paths":
            return ImageSource(kind, [path], label, root)
        try:
            listing = FolderListing.of(path, root)
        except OSError:  # collect() reports why, as a problem of the folder
            return ImageSource(kind, path, label, root)
        return ImageSource(kind, listing.pick(pick), label, root, listing=listing)
    if isinstance(images, Sequence) and not isinstance(images, (bytes, bytearray)):
        if all(isinstance(x, tuple) and len(x) == 2 for x in images):
            return ImageSource("upload", list(images), f"{len(images)} uploaded file(s)")
        paths = [Path(x) for x in images]
        return ImageSource("paths", paths, f"{len(paths)} file(s)", root)
    raise TypeError(f"images={type(images).__name__} is not allowed; expected a folder, a "
                    "file, a list of paths or a list of (name, bytes)")


def _relative(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` (POSIX, "." for the root itself); None when outside."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    return None if rel == os.pardir or rel.startswith(os.pardir + os.sep) else Path(rel).as_posix()


def _same_path(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def resolve_folder(text: str, root: Path | None) -> Path:
    """The folder a user typed, checked against the allowed root; ValueError says why not.
    The text comes from a browser: it is bounded before any file system call (a long name made
    ``stat`` raise an OSError carrying the server's path), quoted cut short in refusals, and a
    folder that cannot be examined is refused with the reason, never a server path."""
    text = text.strip()
    if not text:
        raise ValueError("enter a folder" + (" inside the allowed root" if root else ""))
    if len(text) > MAX_FOLDER_CHARS:
        raise ValueError(f"the folder name is {len(text)} characters; at most "
                         f"{MAX_FOLDER_CHARS} are allowed")
    if "\x00" in text:
        raise ValueError("the folder name contains a NUL character")
    if root is None:
        path = Path(text).expanduser()
    else:
        if os.path.isabs(text) or text.startswith("~"):
            raise ValueError(f"{text!r}: absolute paths are not allowed; give a folder "
                             "relative to the allowed root")
        if ".." in Path(text).parts:
            raise ValueError(f"{text!r}: '..' is not allowed; folders must stay inside the "
                             "allowed root")
        path = root / text
        real, root_real = os.path.realpath(path), os.path.realpath(root)
        if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
            raise ValueError(f"{text!r} leads outside the allowed root (through a "
                             "symbolic link); it was not opened")
    try:
        st = path.stat()
    except OSError as err:
        if err.errno in (errno.ENOENT, errno.ENOTDIR):
            raise ValueError(f"{text!r} does not exist") from None
        raise ValueError(f"{text!r}: {os_error_reason(err)}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{text!r} is not a folder")
    return path


def list_folders(root: Path, depth: int = 2, limit: int = MAX_FOLDERS_LISTED) -> list[str]:
    """Sub-folders of ``root`` (relative, POSIX) for the folder box's suggestions; symlinked
    folders leading outside the root are left out."""
    out: list[str] = []
    root_real = os.path.realpath(root)

    def walk(folder: Path, rel: str, level: int) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            if len(out) >= limit or e.name.startswith("."):
                continue
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            real = os.path.realpath(e.path)
            if not is_dir or not (real + os.sep).startswith(root_real.rstrip(os.sep) + os.sep):
                continue
            name = f"{rel}/{e.name}" if rel else e.name
            out.append(name)
            if level < depth:
                walk(Path(e.path), name, level + 1)

    walk(root, "", 1)
    return out
