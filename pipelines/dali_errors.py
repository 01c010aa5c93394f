"""What DALI's decoders and readers say when they fail, turned into short reasons for users.

* A JPEG with damaged entropy-coded data decodes "successfully" into garbage; the only sign is a
  libjpeg warning on the C-level stderr, so fd 2 is captured around each run.
* nvImageCodec's errors name only a status code (``'#3'``); the useful words are on stderr.
* DALI builds its error messages from raw file-name bytes; when a name is not UTF-8 the
  ``RuntimeError`` cannot even be created and Python raises a ``UnicodeDecodeError`` whose
  ``object`` holds the message: :func:`error_text` recovers it.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import threading
from collections.abc import Iterator

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

DALI_LOCK = threading.RLock()
"""Serialises fd 2 redirection and the cached decode pipelines (DALI pipelines are not
thread-safe, and fd 2 is one per process)."""


class Captured:
    """Text written to file descriptor 2 inside :func:`captured_stderr` (set on exit)."""

    text: str = ""


@contextlib.contextmanager
def captured_stderr() -> Iterator[Captured]:
    """Redirects the C-level stderr (fd 2) to a temp file; always restores it.

    libjpeg reports "Corrupt JPEG data" only there, so Python's ``sys.stderr`` is not enough.
    """
    box = Captured()
    with DALI_LOCK, tempfile.TemporaryFile() as tmp:
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
            box.text = _ANSI.sub("", tmp.read().decode("utf-8", errors="surrogateescape"))


def error_text(err: BaseException) -> str:
    """The text of a DALI error; file names that are not UTF-8 keep their bytes as
    surrogates (``os.fsdecode`` style), so they compare equal to names from ``os.scandir``."""
    if isinstance(err, UnicodeDecodeError) and isinstance(err.object, (bytes, bytearray)):
        return bytes(err.object).decode("utf-8", "surrogateescape")
    return str(err)


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
    text = error_text(err)
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
