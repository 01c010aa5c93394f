"""Loading the user's images for previews: collect encoded files safely, decode them with DALI.

Why this module is careful (see dali-2.4-notes.md, section 5):

* DALI has no "skip corrupt" option: one bad image fails the whole batch, so a failed batch is
  decoded again one image at a time to name the culprit.
* A JPEG with damaged entropy-coded data decodes "successfully" into garbage; the only sign is a
  libjpeg warning on the C-level stderr, so fd 2 is captured around each run.
* ``output_type=types.ANY_DATA`` kills the process on grayscale JPEGs: only ``types.RGB`` is used.
* Reading user-chosen paths must not escape an allowed folder, hang on a FIFO or follow symlink
  loops, and decoding must not explode on decompression bombs.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import re
import stat
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(
    {".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff", ".bmp"}
)
"""Suffixes (lower case, compared case-insensitively) that the preview accepts."""

DALI_FILE_FILTERS: tuple[str, ...] = (
    ".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".pnm", ".ppm", ".pgm", ".pbm", ".jp2",
    ".webp", ".flac", ".ogg", ".wav",
)
"""``readers.file``'s default ``file_filters`` (``*.jpg`` ...), matched case-insensitively."""

MAX_PIXELS = 160_000_000
"""Largest image decoded (W x H). 160 MP keeps 100-150 MP camera files (480 MB as RGB) usable
while refusing decompression bombs; callers can lower it."""

HUGE_PIXELS = 24_000_000
"""Images above this are decoded alone, in a pipeline that is dropped afterwards."""

BATCH_PIXELS = 48_000_000
"""Pixel budget of one decode batch, which bounds the memory of batched decoding."""

BATCH_SIZE = 8

_GARBAGE_MARKERS = (
    "Corrupt JPEG data",
    "Premature end of JPEG file",
    "Invalid SOS parameters",
    "Inconsistent progression sequence",
)
"""libjpeg warnings that mean the pixels are (partly) garbage although decoding "succeeded"."""

_BENIGN_MARKERS = ("bad ICC marker",)
"""libjpeg 'Corrupt JPEG data' warnings that do not affect the pixels."""

_NVIMGCODEC_CODES = {
    "2": "empty or invalid data",
    "3": "damaged or truncated image data",
    "4": "not a recognised image format",
    "17": "the decoder failed on this data",
}
"""nvImageCodec status codes seen in DALI 2.4 decode errors (the message names only the code)."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_LOCK = threading.RLock()
"""Serialises fd 2 redirection and the cached pipelines (DALI pipelines are not thread-safe)."""


@dataclass(frozen=True)
class ImageProblem:
    """Why one input cannot be shown; ``str()`` gives the message for the user."""

    name: str
    reason: str

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


Source = str | os.PathLike | bytes | bytearray | memoryview | tuple[str, bytes]
"""One input of :func:`collect`: a path, anonymous upload bytes, or a named upload."""


# ---------------------------------------------------------------------------------------------
# Folder listing, exactly like readers.file
# ---------------------------------------------------------------------------------------------


@dataclass
class FolderScan:
    """What ``readers.file(file_root=folder)`` sees in a folder (paths relative to it, POSIX)."""

    files: list[str] = field(default_factory=list)
    """What the reader reads, in its order."""
    top_level: list[str] = field(default_factory=list)
    """Image files directly in the folder: ignored by the reader."""
    nested: list[str] = field(default_factory=list)
    """Folders inside class folders holding image files: the reader does not descend into them."""
    blocking: list[tuple[str, str]] = field(default_factory=list)
    """(entry, reason) for entries that make the reader fail when it is built."""


def _byte_key(name: str) -> bytes:
    """DALI sorts with ``std::sort`` on raw bytes; sorting on the encoded name matches that."""
    return os.fsencode(name)


def _matches(name: str, suffixes: Sequence[str] | frozenset[str]) -> bool:
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
    return f"cannot be read ({err.strerror or err})"


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
        entries = sorted(it, key=lambda e: _byte_key(e.name))
    for entry in entries:
        try:
            st = os.stat(entry.path)
        except OSError as err:
            scan.blocking.append((entry.name, os_error_reason(err)))
            continue
        if stat.S_ISDIR(st.st_mode):
            classes.append(entry.name)
        elif _is_listed_file(entry) and _matches(entry.name, SUPPORTED_EXTENSIONS):
            scan.top_level.append(entry.name)
    for cls in classes:
        try:
            with os.scandir(root / cls) as it:
                entries = sorted(it, key=lambda e: _byte_key(e.name))
        except OSError as err:
            scan.blocking.append((cls, f"class folder {os_error_reason(err)}"))
            continue
        for entry in entries:
            if _is_listed_file(entry):
                if _matches(entry.name, DALI_FILE_FILTERS):
                    scan.files.append(f"{cls}/{entry.name}")
            elif entry.is_dir(follow_symlinks=False) and _has_images(Path(entry.path)):
                scan.nested.append(f"{cls}/{entry.name}")
    return scan


def _has_images(folder: Path) -> bool:
    try:
        with os.scandir(folder) as it:
            return any(_matches(e.name, SUPPORTED_EXTENSIONS) for e in it)
    except OSError:
        return False


def reader_order(folder: str | Path) -> list[Path]:
    """The files ``fn.readers.file(file_root=folder)`` reads, in the order it reads them.

    Sample ``i`` of an unshuffled reader is ``reader_order(folder)[i]``; see :func:`scan_folder`
    for the rule. Top-level entries that would break the reader's build are left out.
    """
    root = Path(folder)
    return [root / rel for rel in scan_folder(root).files]


# ---------------------------------------------------------------------------------------------
# collect
# ---------------------------------------------------------------------------------------------


def _inside(path: str, root_real: str) -> bool:
    return path == root_real or path.startswith(root_real.rstrip(os.sep) + os.sep)


def _human_bytes(n: int) -> str:
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

    def problem(self, name: str, reason: str) -> None:
        self.problems.append(ImageProblem(name, reason))

    def full(self, name: str) -> bool:
        if len(self.images) < self.max_files:
            return False
        if not self.skipped:
            self.skipped_in = name
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
            self.images.append(EncodedImage(name, bytes(data)))

    def add_path(self, raw: str | os.PathLike, *, in_folder: str | None = None) -> None:
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
        if suffix not in SUPPORTED_EXTENSIONS:
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

    def add_folder(self, folder: Path, name: str, *, single: bool = False) -> None:
        try:
            scan = scan_folder(folder)
        except OSError as err:
            self.problem(name, os_error_reason(err))
            return
        rels = scan.top_level + [r for r in scan.files if _matches(r, SUPPORTED_EXTENSIONS)]
        for entry, reason in scan.blocking:
            if _matches(entry, SUPPORTED_EXTENSIONS):
                shown = entry if single else f"{name.rstrip('/')}/{entry}"
                self.problem(shown, reason)
                rels.append("")  # counted: the folder is not "empty"
        rels = [r for r in rels if r]
        if not rels and not any(_matches(e, SUPPORTED_EXTENSIONS) for e, _ in scan.blocking):
            self.problem(name, "no images found")
            return
        for rel in rels:
            shown = rel if single else f"{name.rstrip('/')}/{rel}"
            self.add_path(folder / rel, in_folder=shown)


def _unsupported(suffix: str) -> str:
    kinds = ", ".join(sorted(s.lstrip(".") for s in SUPPORTED_EXTENSIONS))
    return f"unsupported file type '{suffix or '(none)'}' (supported: {kinds})"


def _too_big(size: int, limit: int) -> str:
    return f"too large ({_human_bytes(size)}; the limit is {_human_bytes(limit)})"


def collect(
    sources: Source | Sequence[Source],
    *,
    root: Path | None = None,
    max_bytes: int = 50 * 2**20,
    max_files: int = 1000,
) -> tuple[list[EncodedImage], list[ImageProblem]]:
    """Gathers encoded images from paths or uploads; every failure is a problem, never a raise.

    ``sources`` is a folder, a file, or a sequence of paths, ``bytes`` (named ``upload-N``) and
    ``(name, bytes)`` uploads. A folder lists, first, the images directly in it (which
    ``readers.file`` ignores but a preview should show), then exactly the images
    ``readers.file(file_root=folder)`` reads, in its order (:func:`scan_folder`); other files are
    skipped like the reader's filters skip them. With ``root``, relative paths are taken inside
    it and every path must resolve, symlinks followed, inside it, else it is not opened.
    Names are never URL-decoded.
    """
    col = _Collector(root, max_bytes, max_files)
    if isinstance(sources, (str, os.PathLike)):
        path = col.resolve(sources)
        if col.allowed(path) and path.is_dir():
            col.add_folder(path, col.display(path), single=True)
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
        )
    return col.problems


# ---------------------------------------------------------------------------------------------
# stderr capture and error messages
# ---------------------------------------------------------------------------------------------


class Captured:
    """Text written to file descriptor 2 inside :func:`captured_stderr` (set on exit)."""

    text: str = ""


@contextlib.contextmanager
def captured_stderr() -> Iterator[Captured]:
    """Redirects the C-level stderr (fd 2) to a temp file; always restores it.

    libjpeg reports "Corrupt JPEG data" only there, so Python's ``sys.stderr`` is not enough.
    """
    box = Captured()
    with _LOCK, tempfile.TemporaryFile() as tmp:
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        try:
            saved: int | None = os.dup(2)
        except OSError:  # fd 2 closed (e.g. a daemon): capture anyway, close it again after
            saved = None
        try:
            os.dup2(tmp.fileno(), 2)
            yield box
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            if saved is None:
                os.close(2)
            else:
                os.dup2(saved, 2)
                os.close(saved)
            tmp.seek(0)
            box.text = _ANSI.sub("", tmp.read().decode("utf-8", errors="replace"))


def garbage_warning(stderr_text: str) -> str | None:
    """The libjpeg warning that says a "successful" decode is garbage, if any."""
    for line in stderr_text.splitlines():
        if any(m in line for m in _GARBAGE_MARKERS) and not any(
            b in line for b in _BENIGN_MARKERS
        ):
            return line.strip()
    return None


def garbage_reason(warning: str) -> str:
    detail = warning.split(":", 1)[1].strip() if ":" in warning else warning
    return f"corrupt JPEG data, decodes to garbage ({detail})"


def _detail_from_stderr(text: str) -> str | None:
    """The most useful line nvImageCodec/libjpeg/libpng printed for a failed decode."""
    found = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("libpng error:"):
            found = line.split(":", 1)[1].strip()
        elif "[ERROR]" in line or "Premature end" in line:
            msg = line.split("]")[-1].strip()
            if " - " in msg:
                msg = msg.split(" - ", 1)[1]
            msg = re.sub(r"\.\s*Stopped at line.*$", "", msg).strip().rstrip(".")
            if msg:
                found = msg
    if not found:
        return None
    return found[0].lower() + found[1:] if found[:2] != found[:2].upper() else found


def dali_error_text(err: BaseException) -> str:
    """The part of a DALI error after "encountered:", without the boilerplate."""
    text = str(err)
    if "encountered:" in text:
        text = text.split("encountered:", 1)[1]
    lines = [
        ln.strip()
        for ln in text.splitlines()
        if ln.strip()
        and "pipeline object is no longer valid" not in ln
        and not ln.strip().startswith("C++ context")
        and ln.strip() != "Critical error in pipeline:"
    ]
    return " ".join(lines)[:300]


def decode_failure_reason(err: BaseException, stderr_text: str = "") -> str:
    """A short human reason for a failed decode, e.g. 'cannot be decoded (premature end ...)'."""
    if isinstance(err, MemoryError):
        return "cannot be decoded (out of memory)"
    detail = _detail_from_stderr(stderr_text)
    if detail is None:
        text = dali_error_text(err)
        code = re.search(r"nvImageCodec failure: '#(\d+)'", text)
        if code:
            detail = _NVIMGCODEC_CODES.get(code.group(1), f"nvImageCodec error {code.group(1)}")
        else:
            detail = re.sub(r"Failed to decode sample #\d+ :\s*\S*", "", text).strip() or None
    return f"cannot be decoded ({detail or 'unknown decoder error'})"


# ---------------------------------------------------------------------------------------------
# header checks
# ---------------------------------------------------------------------------------------------


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR" and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None


_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    """Walks the JPEG marker segments up to the first SOFn frame header."""
    if data[:2] != b"\xff\xd8":
        return None
    pos, n = 2, len(data)
    while pos + 4 <= n:
        if data[pos] != 0xFF:
            return None
        marker = data[pos + 1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0x01, 0xD8) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        if marker in (0xD9, 0xDA):
            return None
        length = int.from_bytes(data[pos + 2 : pos + 4], "big")
        if marker in _SOF and pos + 9 <= n:
            height = int.from_bytes(data[pos + 5 : pos + 7], "big")
            width = int.from_bytes(data[pos + 7 : pos + 9], "big")
            return width, height
        pos += 2 + length
    return None


def header_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from the header bytes only, or None if it cannot be told.

    This runs before DALI sees the data, so a header claiming gigapixels is refused without
    allocating anything. PNG and JPEG are parsed here; other formats by Pillow (header only),
    whose own bomb error still yields the pixel count, reported as (pixels, 1).
    """
    size = _png_size(data) or _jpeg_size(data)
    if size is not None:
        return size
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(data)) as im:
                return int(im.size[0]), int(im.size[1])
    except Image.DecompressionBombError as err:
        m = re.search(r"\((\d+) pixels\)", str(err))
        return (int(m.group(1)) if m else sys.maxsize), 1
    except Exception:
        return None


def pixel_limit_reason(w: int, h: int, limit: int) -> str:
    px = w * h
    what = f"{w}x{h}, " if h > 1 else ""
    return f"too large ({what}{px / 1e6:.0f} MP; the limit is {limit / 1e6:.0f} MP)"


# ---------------------------------------------------------------------------------------------
# DALI pipelines
# ---------------------------------------------------------------------------------------------

_PIPES: dict[tuple[str, int, int], object] = {}
"""Built pipelines by (kind, batch_size, num_threads): building costs a few ms, reuse is free."""


def clear_pipeline_cache() -> None:
    """Drops the cached decode pipelines and the buffers they keep (e.g. after a big batch)."""
    with _LOCK:
        _PIPES.clear()


def _build(kind: str, batch_size: int, num_threads: int) -> object:
    """A CPU pipeline fed with encoded bytes: 'peek' (shapes), 'decode' or 'resize'."""
    import nvidia.dali.math as dmath
    from nvidia.dali import fn, types
    from nvidia.dali.pipeline import Pipeline

    pipe = Pipeline(
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=None,
        prefetch_queue_depth=1,
    )
    with pipe:
        enc = fn.external_source(name="enc", dtype=types.UINT8, ndim=1)
        if kind == "peek":
            pipe.set_outputs(fn.peek_image_shape(enc))
        else:
            img = fn.decoders.image(enc, device="cpu", output_type=types.RGB)
            if kind == "resize":
                limit = fn.external_source(name="max_side", dtype=types.FLOAT, ndim=0)
                shape = img.shape(dtype=types.FLOAT)
                h, w = shape[0], shape[1]
                scale = dmath.min(1.0, limit / dmath.max(h, w))  # never upscale
                size = fn.stack(
                    dmath.max(1.0, dmath.floor(h * scale + 0.5)),
                    dmath.max(1.0, dmath.floor(w * scale + 0.5)),
                )
                img = fn.resize(img, size=size, antialias=True)
            pipe.set_outputs(img)
    pipe.build()
    return pipe


def _pipe(kind: str, batch_size: int, num_threads: int, *, fresh: bool = False) -> object:
    key = (kind, batch_size, num_threads)
    if fresh or key not in _PIPES:
        _PIPES.pop(key, None)
        _PIPES[key] = _build(kind, batch_size, num_threads)
    return _PIPES[key]


def _feed(datas: list[bytes], max_side: int | None) -> dict[str, list[np.ndarray]]:
    inputs = {"enc": [np.frombuffer(d, dtype=np.uint8) for d in datas]}
    if max_side is not None:
        inputs["max_side"] = [np.float32(max_side) for _ in datas]
    return inputs


class _DecodeFailure(Exception):
    def __init__(self, err: BaseException, stderr_text: str) -> None:
        super().__init__(str(err))
        self.err = err
        self.stderr_text = stderr_text


def _run_or_fail(pipe: object, inputs: dict[str, list[np.ndarray]]) -> tuple[list, str]:
    cap = Captured()
    try:
        with captured_stderr() as cap:
            (out,) = pipe.run(**inputs)  # type: ignore[attr-defined]
            arrays = [np.array(out[i]) for i in range(len(out))]
    except Exception as err:  # DALI raises RuntimeError; anything else is reported the same way
        raise _DecodeFailure(err, cap.text) from err
    return arrays, cap.text


def peek_shapes(
    datas: list[bytes], *, num_threads: int = 2
) -> list[tuple[int, int, int] | None]:
    """(H, W, C) after EXIF orientation via ``fn.peek_image_shape``; None where the header fails.

    Only headers are parsed, so this is cheap and allocates no pixels.
    """
    shapes: list[tuple[int, int, int] | None] = [None] * len(datas)
    for start in range(0, len(datas), BATCH_SIZE):
        chunk = datas[start : start + BATCH_SIZE]
        try:
            arrays, _ = _run_or_fail(_pipe("peek", BATCH_SIZE, num_threads), _feed(chunk, None))
        except _DecodeFailure:
            arrays = []
            for one in chunk:
                try:
                    arrays.append(_run_or_fail(_pipe("peek", BATCH_SIZE, num_threads),
                                               _feed([one], None))[0][0])
                except _DecodeFailure:
                    arrays.append(None)
        for i, a in enumerate(arrays):
            if a is not None and a.size >= 2:
                c = int(a[2]) if a.size > 2 else 1
                shapes[start + i] = (int(a[0]), int(a[1]), c)
    return shapes


def decode(
    images: list[EncodedImage],
    *,
    max_side: int | None = None,
    num_threads: int = 2,
    max_pixels: int = MAX_PIXELS,
) -> tuple[list[np.ndarray], list[EncodedImage], list[ImageProblem]]:
    """Decodes with DALI on CPU to HWC uint8 RGB; bad images become problems, not exceptions.

    EXIF orientation is applied; gray, CMYK, RGBA, 16-bit and palette images come out as 3-channel
    uint8. With ``max_side`` every image is shrunk (``fn.resize``, aspect kept, never enlarged)
    so its longer side is at most ``max_side``. Images are checked from their headers first
    (Pillow, then ``fn.peek_image_shape``); over ``max_pixels`` is a problem. Small images are
    decoded in batches bounded by :data:`BATCH_PIXELS`; huge ones one at a time in a throwaway
    pipeline. A batch that fails or prints a libjpeg corruption warning is decoded again one
    image at a time to name the culprits. Returned lists keep the input order.
    """
    if max_side is not None and max_side < 1:
        raise ValueError(f"max_side must be >= 1, got {max_side}")
    kind = "decode" if max_side is None else "resize"
    results: dict[int, np.ndarray] = {}
    problems: dict[int, ImageProblem] = {}
    with _LOCK:
        candidates: list[int] = []
        for i, img in enumerate(images):
            if not img.data:
                problems[i] = ImageProblem(img.name, "empty (0 bytes)")
                continue
            size = header_size(img.data)
            if size is not None and size[0] * size[1] > max_pixels:
                problems[i] = ImageProblem(img.name, pixel_limit_reason(*size, max_pixels))
                continue
            candidates.append(i)
        shapes = peek_shapes([images[i].data for i in candidates], num_threads=num_threads)
        batches: list[list[int]] = []
        alone: list[int] = []
        current: list[int] = []
        budget = 0
        for i, shape in zip(candidates, shapes, strict=True):
            if shape is None:
                alone.append(i)  # the header fails; decoding it alone gives the reason
                continue
            px = shape[0] * shape[1]
            if px > max_pixels:
                problems[i] = ImageProblem(
                    images[i].name, pixel_limit_reason(shape[1], shape[0], max_pixels)
                )
            elif px > HUGE_PIXELS:
                alone.append(i)
            else:
                if current and (len(current) == BATCH_SIZE or budget + px > BATCH_PIXELS):
                    batches.append(current)
                    current, budget = [], 0
                current.append(i)
                budget += px
        if current:
            batches.append(current)

        for batch in batches:
            pipe = _pipe(kind, BATCH_SIZE, num_threads)
            try:
                arrays, text = _run_or_fail(pipe, _feed([images[i].data for i in batch], max_side))
            except _DecodeFailure:
                arrays, text = [], "failed"
            if arrays and garbage_warning(text) is None:
                results.update(zip(batch, arrays, strict=True))
                continue
            for i in batch:
                _decode_one(images, i, kind, max_side, num_threads, results, problems)
        shape_of = dict(zip(candidates, shapes, strict=True))
        for i in alone:
            shape = shape_of[i]
            huge = shape is not None and shape[0] * shape[1] > HUGE_PIXELS
            _decode_one(images, i, kind, max_side, num_threads, results, problems, throwaway=huge)

    order = sorted(results)
    return (
        [results[i] for i in order],
        [images[i] for i in order],
        [problems[i] for i in sorted(problems)],
    )


def _decode_one(
    images: list[EncodedImage],
    i: int,
    kind: str,
    max_side: int | None,
    num_threads: int,
    results: dict[int, np.ndarray],
    problems: dict[int, ImageProblem],
    *,
    throwaway: bool = False,
) -> None:
    """Decodes image ``i`` alone; retries once on a rebuilt pipeline before blaming the image."""
    inputs = _feed([images[i].data], max_side)
    failure: _DecodeFailure | None = None
    for attempt in range(2):
        if throwaway:
            pipe = _build(kind, 1, num_threads)
        else:
            pipe = _pipe(kind, BATCH_SIZE, num_threads, fresh=attempt > 0)
        try:
            arrays, text = _run_or_fail(pipe, inputs)
        except _DecodeFailure as err:
            failure = err
            continue
        finally:
            if throwaway:
                del pipe  # frees the huge buffers now
        warning = garbage_warning(text)
        if warning is not None:
            problems[i] = ImageProblem(images[i].name, garbage_reason(warning))
        else:
            results[i] = arrays[0]
        return
    assert failure is not None
    problems[i] = ImageProblem(
        images[i].name, decode_failure_reason(failure.err, failure.stderr_text)
    )
