"""Which files are images, and how a folder is listed: exactly like DALI's ``readers.file``.

Also how a file name is shown: names are bytes on POSIX; ``os.fsdecode`` keeps the bytes that
are not UTF-8 as lone surrogates, which no UTF-8 terminal, JSON message or HTML page can carry,
so every name shown to a user goes through :func:`readable` first.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

IMAGE_EXTENSIONS: tuple[str, ...] = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
"""The one declaration of the image file types dali-gallery reads (lower case, compared
case-insensitively): the preview, the upload button and the exported training module's flat
folder listing all use it."""

SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(IMAGE_EXTENSIONS)
""":data:`IMAGE_EXTENSIONS` as a set, for membership tests."""

DALI_FILE_FILTERS: tuple[str, ...] = (
    ".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".pnm", ".ppm", ".pgm", ".pbm", ".jp2",
    ".webp", ".flac", ".ogg", ".wav",
)
"""``readers.file``'s default ``file_filters`` (``*.jpg`` ...), matched case-insensitively: a
fact about DALI, which reads more types than the preview accepts."""


UNREAD_IMAGE_TYPES: tuple[str, ...] = (
    ".gif", ".jfif", ".jpe", ".jif", ".heic", ".heif", ".avif", ".jxl", ".ico", ".tga", ".psd",
    ".svg",
)
"""Image file types that neither ``readers.file``'s filters nor the preview take: a training
folder's files of these types are left out of training, so they are reported, never skipped
in silence (not a complete list of image formats: the common ones people have)."""

_LOOSE_UNREAD = UNREAD_IMAGE_TYPES + (".pnm", ".ppm", ".pgm", ".pbm", ".jp2")
"""Image types beside the class folders, or in a flat folder, that the exported module's flat
file list (:data:`IMAGE_EXTENSIONS`) leaves out."""


def readable(name: str) -> str:
    """``name`` as text any terminal, JSON message or page can show, one line.

    Bytes that are not UTF-8 (lone surrogates from ``os.fsdecode``) become ``\\xNN``;
    control and invisible format characters (line breaks, escape sequences,
    right-to-left overrides) become ``\\n``/``\\x1b``/``\\u202e`` escapes, so a name
    cannot forge a line of a report.
    """
    if name.isprintable():
        return name
    out = []
    for ch in name:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte os.fsdecode could not decode
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch.isprintable():
            out.append(ch)
        else:
            out.append(ch.encode("unicode_escape", "backslashreplace").decode("ascii"))
    return "".join(out)


def is_utf8(name: str) -> bool:
    """Whether DALI can take ``name`` as a string argument (it encodes them as strict UTF-8)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@dataclass
class FolderScan:
    """What ``readers.file(file_root=folder)`` sees in a folder (paths relative to it, POSIX).

    Names are ``str`` as ``os.scandir`` gives them (``os.fsencode`` returns the exact bytes)."""

    files: list[str] = field(default_factory=list)
    """What the reader reads, in its order."""
    top_level: list[str] = field(default_factory=list)
    """Image files directly in the folder: ignored by the reader."""
    nested: list[str] = field(default_factory=list)
    """Folders inside class folders holding image files: the reader does not descend into them."""
    blocking: list[tuple[str, str]] = field(default_factory=list)
    """(entry, reason) for entries that make the reader fail when it is built."""
    unread_types: list[str] = field(default_factory=list)
    """Image files in class folders of a type the reader leaves out (:data:`UNREAD_IMAGE_TYPES`),
    in its order."""
    loose_unread_types: list[str] = field(default_factory=list)
    """Image files directly in the folder of a type a flat folder's file list leaves out."""


def byte_key(name: str) -> bytes:
    """DALI sorts with ``std::sort`` on raw bytes; sorting on the encoded name matches that."""
    return os.fsencode(name)


def matches(name: str, suffixes: Sequence[str] | frozenset[str]) -> bool:
    """Whether ``name`` ends with one of ``suffixes``, case-insensitively."""
    lower = name.lower()
    return any(lower.endswith(s) for s in suffixes)


def _is_listed_file(entry: os.DirEntry[str]) -> bool:
    """readers.file keeps regular files and symlinks (whatever they point to), by ``d_type``."""
    try:
        return entry.is_symlink() or entry.is_file(follow_symlinks=False)
    except OSError:
        return False


def os_error_reason(err: OSError) -> str:
    """A short reason for a failed ``stat``/``open``, worded for the user."""
    if err.errno == errno.ELOOP:
        return "symbolic link loop"
    if err.errno == errno.ENOENT:
        return "file not found"
    if err.errno in (errno.EACCES, errno.EPERM):
        return "permission denied (unreadable)"
    return f"cannot be read ({err.strerror or type(err).__name__})"


def scan_folder(folder: str | Path) -> FolderScan:
    """Lists ``folder`` the way DALI 2.4's ``readers.file(file_root=folder)`` does.

    The rule (read from ``discover_files.cc`` and verified with real readers.file runs):

    * Every top-level entry is ``stat``-ed (following symlinks); one that cannot be (a symlink
      loop, a broken link) makes the reader fail at build time ("Could not access ...").
    * Top-level directories, and symlinks to directories, are the classes: sorted by their raw
      bytes (``"A" < "a" < "a b" < "a-b" < "a.b" < "é"``), hidden ones included; label = index.
    * Files directly in the root are ignored, and so are folders nested inside class folders.
    * In each class folder, entries whose ``d_type`` is a regular file or a symlink (even a broken
      or looping one, which then fails at run time) and whose name matches the default filters
      case-insensitively (``*.jpg``, ``*.JPEG``, ``.jpg`` ...) are read, sorted by raw bytes.
    * The order is class by class (not a global sort of ``class/file`` strings).
    """
    root = Path(folder)
    scan = FolderScan()
    classes: list[str] = []
    with os.scandir(root) as it:
        entries = sorted(it, key=lambda e: byte_key(e.name))
    for entry in entries:
        try:
            st = os.stat(entry.path)
        except OSError as err:
            scan.blocking.append((entry.name, os_error_reason(err)))
            continue
        if stat.S_ISDIR(st.st_mode):
            classes.append(entry.name)
        elif _is_listed_file(entry) and matches(entry.name, SUPPORTED_EXTENSIONS):
            scan.top_level.append(entry.name)
        elif _is_listed_file(entry) and matches(entry.name, _LOOSE_UNREAD):
            scan.loose_unread_types.append(entry.name)
    for cls in classes:
        try:
            with os.scandir(root / cls) as it:
                entries = sorted(it, key=lambda e: byte_key(e.name))
        except OSError as err:
            scan.blocking.append((cls, f"class folder {os_error_reason(err)}"))
            continue
        for entry in entries:
            if _is_listed_file(entry):
                if matches(entry.name, DALI_FILE_FILTERS):
                    scan.files.append(f"{cls}/{entry.name}")
                elif matches(entry.name, UNREAD_IMAGE_TYPES):
                    scan.unread_types.append(f"{cls}/{entry.name}")
            elif entry.is_dir(follow_symlinks=False) and _has_images(Path(entry.path)):
                scan.nested.append(f"{cls}/{entry.name}")
    return scan


def _has_images(folder: Path) -> bool:
    try:
        with os.scandir(folder) as it:
            return any(matches(e.name, SUPPORTED_EXTENSIONS) for e in it)
    except OSError:
        return False


def image_listing(scan: FolderScan) -> list[str]:
    """The images a preview of the folder can show, in file order: the images directly in it
    (which ``readers.file`` ignores), then the reader's files of a type the preview reads."""
    return scan.top_level + [r for r in scan.files if matches(r, SUPPORTED_EXTENSIONS)]


def class_of(rel: str) -> str:
    """The class folder of a listed image ("" for an image directly in the folder)."""
    return rel.split("/", 1)[0] if "/" in rel else ""


def spread(listing: Sequence[str]) -> list[str]:
    """``listing`` round-robin over its class folders (images directly in the folder count as
    one group, first): the first of each class, then the second of each, and so on. The first
    N of a folder of classes then show every class, not N images of the first one."""
    groups: dict[str, list[str]] = {}
    for rel in listing:
        groups.setdefault(class_of(rel), []).append(rel)
    out: list[str] = []
    queues = list(groups.values())
    for k in range(max((len(q) for q in queues), default=0)):
        out.extend(q[k] for q in queues if k < len(q))
    return out


def reader_order(folder: str | Path) -> list[Path]:
    """The files ``fn.readers.file(file_root=folder)`` reads, in the order it reads them.

    Sample ``i`` of an unshuffled reader is ``reader_order(folder)[i]``; see :func:`scan_folder`
    for the rule. Top-level entries that would break the reader's build are left out.
    """
    root = Path(folder)
    return [root / rel for rel in scan_folder(root).files]
