"""The preset as an untrusted document: size and depth budgets, JSON parsing, reading a file.

An uploaded preset is bytes from a browser: it is parsed as a document and never used as a
path. Every budget is checked before the work it bounds: the size before decoding, the nesting
depth (by scanning brackets) before ``json`` recurses, the digits of a number before ``int``
converts it. Reading by path is for the CLI and notebooks only, and refuses anything that is
not a regular file (a FIFO blocks a reader forever, ``/dev/zero`` never ends).
"""

from __future__ import annotations

import json
import math
import os
import re
import reprlib
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .preset_types import PresetError, cut

MAX_DOCUMENT_BYTES = 1 << 20
"""A preset of 64 steps with every parameter a 32-value choice is ~0.3 MB."""
MAX_DEPTH = 16
"""Nesting of objects and lists; a valid preset needs 6 (preset/steps/step/params/value/list)."""
MAX_INT_DIGITS = 320
"""Longer integers do not fit a float64 (1.8e308), which every number in a preset must."""
MAX_QUOTE = 60
"""Characters of a user's value quoted in a message."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
"""A JSON string; the closing quote is optional so that no match ever fails and backtracks
(an unterminated string hides only brackets that ``json`` never reaches)."""
_OPEN = np.frombuffer(b"[{", np.uint8)
_CLOSE = np.frombuffer(b"]}", np.uint8)


class _Quoter(reprlib.Repr):
    """``repr`` with a budget: long strings, deep lists and huge integers are elided."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.maxlevel, self.maxdict, self.maxlist, self.maxtuple = 3, 4, 4, 4
        self.maxstring = self.maxother = self.maxlong = limit

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 200:  # repr itself refuses beyond 4300 digits
            return f"<an integer of about {int(x.bit_length() * 0.30103) + 1} digits>"
        return super().repr_int(x, level)


def quote(value: object, limit: int = MAX_QUOTE) -> str:
    """A value for a message: its repr, cut with an ellipsis, bounded whatever the
    value (the exported module with labels carries it for its annotation checks)."""
    try:
        text = _Quoter(limit).repr(value)
    except (RecursionError, ValueError):
        # a self-referencing or exotic object from code
        text = f"<{type(value).__name__}>"
    return cut(text, limit)


def document_text(data: str | bytes | bytearray | memoryview, origin: str = "preset") -> str:
    """The document as text, within the size budget; PresetError if too large or not UTF-8."""
    if isinstance(data, str):
        size = len(data) if len(data) > MAX_DOCUMENT_BYTES else len(data.encode("utf-8",
                                                                                "surrogatepass"))
        _check_size(size, origin)
        return data.removeprefix("\ufeff")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise PresetError([f"{origin}: expected text or bytes, got {type(data).__name__}"])
    _check_size(len(data), origin)
    try:
        return bytes(data).decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise PresetError([f"{origin}: not UTF-8 text (byte {e.start} is {data[e.start]:#04x}); "
                           "a preset is a JSON file"]) from None


def _check_size(size: int, origin: str) -> None:
    if size > MAX_DOCUMENT_BYTES:
        raise PresetError([f"{origin}: {size / 2**20:.1f} MiB is too large; a preset document is "
                           f"at most {MAX_DOCUMENT_BYTES / 2**20:.0f} MiB"])


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting outside JSON strings, found without recursion."""
    stripped = _STRING.sub('""', text).encode("utf-8", "surrogatepass")
    codes = np.frombuffer(stripped, np.uint8)
    delta = np.isin(codes, _OPEN).astype(np.int32) - np.isin(codes, _CLOSE).astype(np.int32)
    return int(np.cumsum(delta).max(initial=0))


@dataclass(frozen=True)
class BadNumber:
    """A number the format cannot hold (NaN, 1e400, 400 digits), left in place by the parser
    so that validation reports it where it is (step, parameter) instead of json failing."""

    text: str

    def __repr__(self) -> str:
        return self.text


def _parse_int(text: str) -> int | BadNumber:
    if len(text) > MAX_INT_DIGITS:  # beyond float range; int() itself raises past 4300 digits
        return BadNumber(f"an integer of {len(text)} digits")
    return int(text)


def _parse_float(text: str) -> float | BadNumber:
    value = float(text)
    return BadNumber(text) if math.isinf(value) else value


def _parse_constant(name: str) -> BadNumber:
    return BadNumber(name)


def _object(pairs: list[tuple[str, object]], origin: str) -> dict:
    """A JSON object; a key given twice is refused (``json`` keeps the last silently, so
    the value a reader of the file sees first would not be the one loaded)."""
    value = dict(pairs)
    if len(value) < len(pairs):
        keys = [k for k, _ in pairs]
        counts = Counter(keys)  # linear: an object may hold 100 000 keys
        twice = next(k for k in keys if counts[k] > 1)
        raise PresetError([f"{origin}: key {quote(twice)} appears {counts[twice]} times in "
                           f"one object (keys {quote(keys, 120)}); each key may appear once"])
    return value


def parse_json(data: str | bytes | bytearray | memoryview, origin: str = "preset") -> dict:
    """The JSON object in a document, every budget checked first; never reads a path.

    Numbers the format cannot hold come back as :class:`BadNumber` for validation to name."""
    text = document_text(data, origin)
    if not text.lstrip().startswith(("{", "[")):  # e.g. a path: never opened, whatever it names
        raise PresetError([f"{origin}: not valid JSON; a preset document is a JSON object, "
                           "starting with '{'"])
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise PresetError([f"{origin}: nested {depth} levels deep; a preset document nests at "
                           f"most {MAX_DEPTH} levels"])
    try:
        value = json.loads(text, parse_constant=_parse_constant, parse_int=_parse_int,
                           parse_float=_parse_float,
                           object_pairs_hook=lambda pairs: _object(pairs, origin))
    except json.JSONDecodeError as e:
        raise PresetError([f"{origin}: not valid JSON ({e.msg}: line {e.lineno} column "
                           f"{e.colno})"]) from None
    if not isinstance(value, dict):
        raise PresetError([f"{origin}: expected a JSON object, got {type(value).__name__}"])
    return value


def read_document(path: str | os.PathLike[str], origin: str | None = None) -> bytes:
    """The bytes of a preset file (CLI and notebooks only: never called with browser input).

    Only a regular file is opened (checked before opening and again on the open descriptor);
    at most ``MAX_DOCUMENT_BYTES`` + 1 bytes are read. ``origin`` names the file in messages
    (default: its path)."""
    shown = origin or path_origin(path)
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise PresetError([f"{shown} is {file_kind(info.st_mode)}, not a regular file"])
        _check_size(info.st_size, shown)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise PresetError([f"{shown}: cannot read it (it does not exist)"]) from None
    except OSError as e:
        raise PresetError([f"{shown}: cannot read it ({e.strerror})"]) from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PresetError([f"{shown} is not a regular file"])
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_DOCUMENT_BYTES + 1)
    except OSError as e:
        raise PresetError([f"{shown}: cannot read it ({e.strerror})"]) from None
    finally:
        os.close(fd)
    _check_size(len(data), shown)
    return data


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words (for messages)."""
    for test, words in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "a regular file" if stat.S_ISREG(mode) else "not a file"


def path_origin(path: str | os.PathLike[str]) -> str:
    """How messages name a preset read from ``path``."""
    return f"preset file {quote(str(Path(path)), 200)}"
