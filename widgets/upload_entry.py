"""One file of a ``FileUpload`` value, as a browser sent it: checked before its bytes are used.

Every field of an entry comes from the browser's comm message, not from the file: ``size`` is
whatever number the page wrote, and ``content`` is a binary buffer only when the page sent one
(a forged message can put a JSON number or string there, and ``bytes(10**11)`` allocates 100 GB
of zeros). So the size that counts is the length of the bytes actually received, and content
that is not a buffer is refused with a reason, never converted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["UploadRefused", "entry_bytes", "entry_name"]


class UploadRefused(ValueError):
    """An upload entry that cannot be used; the message says what is allowed."""


def entry_name(entry: Mapping[str, Any], default: str) -> str:
    """The file name the browser gave (``default`` when it gave no string)."""
    name = entry.get("name")
    return name if isinstance(name, str) and name else default


def entry_bytes(entry: Mapping[str, Any], limit: int | None = None) -> bytes:
    """The bytes received for one file, at most ``limit`` of them (counted, not the browser's
    ``size``; None: the document's parser checks the size). UploadRefused: no binary content,
    or too large."""
    content = entry.get("content")
    if not isinstance(content, (bytes, bytearray, memoryview)):
        raise UploadRefused("no file content received (an upload carries the file's bytes; "
                            f"got {type(content).__name__})")
    size = content.nbytes if isinstance(content, memoryview) else len(content)
    if limit is not None and size > limit:
        raise UploadRefused(f"too large ({size / 2**20:.1f} MiB; the limit is "
                            f"{limit / 2**20:.0f} MiB per file)" if limit >= 2**20 else
                            f"too large ({size} bytes; at most {limit} are read)")
    return bytes(content)
