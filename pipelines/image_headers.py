"""An image's width and height from its header alone: the one size check before any decode.

The preview and ``check-images`` both refuse images over the pixel budget before DALI sees
them, and both use :func:`read_size`. It reads a header wherever it is, by seeking: a JPEG's
frame header after megabytes of APP segments, a TIFF's first IFD at the end of the file, a
PNG's IHDR, a WebP's VP8/VP8L/VP8X header, a BMP's DIB header, a PNM's text header and a
JPEG 2000 ``ihdr`` box or SIZ marker (the formats DALI's ``readers.file`` filters pass; GIF is
not among them). It never decodes, and a file that would need more than
:data:`MAX_HEADER_BYTES` bytes read, :data:`MAX_SEGMENTS` segments walked or
:data:`MAX_HEADER_SECONDS` to tell its size raises :class:`HeaderLimitError`, which callers
report as a problem (the file is not decoded). A TIFF layout DALI 2.4 decodes to garbage
without an error (a grayscale image with an alpha channel) is refused here too
(:attr:`HeaderSize.garbage`): its header is where it shows.
"""

from __future__ import annotations

import io
import re
import time
from dataclasses import dataclass
from typing import BinaryIO

from .budget import mp

MAX_HEADER_BYTES = 1 << 20
"""Bytes read at most to find one image's size (seeks over skipped segments cost nothing)."""
MAX_SEGMENTS = 65_536
"""JPEG segments or JPEG 2000 boxes walked at most before the frame header (real files: < 30)."""
MAX_HEADER_SECONDS = 1.0
"""Wall time at most to find one image's size."""

_SOF = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF})
"""JPEG start-of-frame markers (SOF0-SOF15 less DHT C4, JPG C8 and DAC CC)."""


class HeaderLimitError(Exception):
    """The size could not be told within the byte, segment or time bounds."""


@dataclass(frozen=True)
class HeaderSize:
    """Width and height a header declares (before EXIF orientation, which keeps the count)."""

    width: int
    height: int
    format: str
    garbage: str | None = None
    """Why DALI 2.4's decoder would make garbage of this image although it "succeeds" (None:
    it decodes it right, as far as we know); such an image is refused like an oversized one."""

    @property
    def pixels(self) -> int:
        return self.width * self.height


class _Reader:
    """Seek-and-read on a binary file that counts bytes and time against the bounds."""

    def __init__(self, f: BinaryIO, max_bytes: int, seconds: float) -> None:
        self.f = f
        self.left = max_bytes
        self.deadline = time.monotonic() + seconds
        self.size = f.seek(0, io.SEEK_END)

    def at(self, offset: int, n: int) -> bytes:
        """Up to ``n`` bytes at ``offset`` (fewer at the end of the file)."""
        if time.monotonic() > self.deadline:
            raise HeaderLimitError(f"finding its size took over {MAX_HEADER_SECONDS:g} s")
        if offset < 0 or offset >= self.size:
            return b""
        n = min(n, self.size - offset)
        if n > self.left:
            raise HeaderLimitError(f"its header needs more than {MAX_HEADER_BYTES} bytes read")
        self.left -= n
        self.f.seek(offset)
        return self.f.read(n)


def _u(data: bytes, start: int, n: int, order: str) -> int:
    return int.from_bytes(data[start:start + n], order)  # type: ignore[arg-type]


def _png(r: _Reader, head: bytes) -> HeaderSize | None:
    if len(head) >= 24 and head[12:16] == b"IHDR":
        return HeaderSize(_u(head, 16, 4, "big"), _u(head, 20, 4, "big"), "PNG")
    return None


def _jpeg(r: _Reader) -> HeaderSize | None:
    """Walks the marker segments up to the first SOFn frame header, seeking over each body.

    Like libjpeg's ``next_marker``, bytes that are not a marker are skipped up to the next
    0xFF, so a file libjpeg decodes is never one whose size is unknown here."""
    pos, segments = 2, 0
    while True:
        segments += 1
        if segments > MAX_SEGMENTS:
            raise HeaderLimitError(f"more than {MAX_SEGMENTS} JPEG segments before the frame "
                                   "header")
        chunk = r.at(pos, 4)
        if len(chunk) < 2:
            return None
        if chunk[0] != 0xFF:  # garbage between segments: find the next 0xFF
            skip = _find_ff(r, pos)
            if skip is None:
                return None
            pos = skip
            continue
        marker = chunk[1]
        if marker == 0xFF:  # fill byte
            pos += 1
            continue
        if marker in (0x00, 0x01, 0xD8) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image or scan data before any frame header
            return None
        if len(chunk) < 4:
            return None
        length = _u(chunk, 2, 2, "big")
        if length < 2:
            return None
        if marker in _SOF:
            frame = r.at(pos + 4, 5)
            if len(frame) < 5:
                return None
            height, width = _u(frame, 1, 2, "big"), _u(frame, 3, 2, "big")
            return HeaderSize(width, height, "JPEG") if height else None
        pos += 2 + length


def _find_ff(r: _Reader, pos: int) -> int | None:
    while True:
        block = r.at(pos, 4096)
        if not block:
            return None
        i = block.find(b"\xff")
        if i >= 0:
            return pos + i
        pos += len(block)


def _tiff(r: _Reader, head: bytes) -> HeaderSize | None:
    """The first IFD (the image DALI decodes), wherever its offset points."""
    order = "little" if head[:2] == b"II" else "big"
    big = _u(head, 2, 2, order) == 43
    if big:
        first = r.at(8, 8)
        offset, count_size, entry_size, value_at = _u(first, 0, 8, order), 8, 20, 12
    else:
        offset, count_size, entry_size, value_at = _u(head, 4, 4, order), 2, 12, 8
    count_bytes = r.at(offset, count_size)
    if len(count_bytes) < count_size:
        return None
    count = _u(count_bytes, 0, count_size, order)
    if count > MAX_SEGMENTS:
        raise HeaderLimitError(f"its first TIFF directory claims {count} entries")
    table = r.at(offset + count_size, count * entry_size)
    found: dict[int, int] = {}
    for k in range(len(table) // entry_size):
        e = table[k * entry_size:(k + 1) * entry_size]
        tag, kind = _u(e, 0, 2, order), _u(e, 2, 2, order)
        if tag in _TIFF_TAGS:
            width = {3: 2, 4: 4, 16: 8}.get(kind)  # SHORT, LONG, LONG8
            if width is None:
                return None
            if _u(e, 4, 8 if big else 4, order) * width > entry_size - value_at:
                first = r.at(_u(e, value_at, entry_size - value_at, order), width)  # an offset
            else:
                first = e[value_at:value_at + width]
            found[tag] = _u(first, 0, width, order)
    if 256 in found and 257 in found:
        return HeaderSize(found[256], found[257], "TIFF", _tiff_garbage(found))
    return None


_TIFF_TAGS = frozenset({256, 257, 258, 262, 277, 284})
"""ImageWidth, ImageLength, BitsPerSample (the first sample's), PhotometricInterpretation,
SamplesPerPixel, PlanarConfiguration."""


def _tiff_garbage(tags: dict[int, int]) -> str | None:
    """The TIFF layouts DALI 2.4's CPU decoder (nvImageCodec 0.9, libtiff) turns into garbage
    without an error, found by decoding each one: the samples are read as if they were
    interleaved RGB (and an 8-bit one reads past each row, different on every run)."""
    samples, bits = tags.get(277, 1), tags.get(258, 1)
    if tags.get(262) in (0, 1) and samples > 1:
        return (f"a grayscale TIFF with {samples} samples per pixel (an alpha or extra channel) "
                "decodes to garbage in DALI 2.4; save it as plain grayscale, RGB or RGBA")
    if tags.get(284) == 2 and samples > 1 and bits > 8:
        return (f"a {bits}-bit TIFF with separate colour planes (PlanarConfiguration 2) decodes "
                "to garbage in DALI 2.4; save it with contiguous (interleaved) samples")
    return None


def _webp(r: _Reader, head: bytes) -> HeaderSize | None:
    kind, data = head[12:16], r.at(20, 10)
    if kind == b"VP8 " and len(data) >= 10 and data[3:6] == b"\x9d\x01\x2a":
        return HeaderSize(_u(data, 6, 2, "little") & 0x3FFF, _u(data, 8, 2, "little") & 0x3FFF,
                          "WebP")
    if kind == b"VP8L" and len(data) >= 5 and data[0] == 0x2F:
        bits = _u(data, 1, 4, "little")
        return HeaderSize((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1, "WebP")
    if kind == b"VP8X" and len(data) >= 10:
        return HeaderSize(_u(data, 4, 3, "little") + 1, _u(data, 7, 3, "little") + 1, "WebP")
    return None


def _bmp(r: _Reader, head: bytes) -> HeaderSize | None:
    dib = _u(head, 14, 4, "little")
    if dib == 12:
        return HeaderSize(_u(head, 18, 2, "little"), _u(head, 20, 2, "little"), "BMP")
    if dib >= 40 and len(head) >= 26:
        width = int.from_bytes(head[18:22], "little", signed=True)
        height = int.from_bytes(head[22:26], "little", signed=True)
        return HeaderSize(abs(width), abs(height), "BMP")
    return None


_PNM_FIELDS = re.compile(rb"^P[1-7]((?:\s+|#[^\n\r]*[\n\r])+)(\d+)((?:\s+|#[^\n\r]*[\n\r])+)(\d+)")


def _pnm(r: _Reader) -> HeaderSize | None:
    text = r.at(0, 64 * 1024)
    m = _PNM_FIELDS.match(text)
    if m is None:
        if len(text) == 64 * 1024:
            raise HeaderLimitError("its PNM header is longer than 64 KiB")
        return None
    return HeaderSize(int(m.group(2)), int(m.group(4)), "PNM")


def _jp2(r: _Reader, head: bytes) -> HeaderSize | None:
    if head[:4] == b"\xff\x4f\xff\x51":  # a raw codestream: SIZ follows SOC
        siz = r.at(8, 16)
        if len(siz) < 16:
            return None
        return HeaderSize(_u(siz, 0, 4, "big") - _u(siz, 8, 4, "big"),
                          _u(siz, 4, 4, "big") - _u(siz, 12, 4, "big"), "JPEG 2000")
    pos, end, boxes = 0, r.size, 0
    while pos + 8 <= end:
        boxes += 1
        if boxes > MAX_SEGMENTS:
            raise HeaderLimitError(f"more than {MAX_SEGMENTS} JPEG 2000 boxes before 'ihdr'")
        box = r.at(pos, 16)
        length, kind, body = _u(box, 0, 4, "big"), box[4:8], 8
        if length == 1:
            length, body = _u(box, 8, 8, "big"), 16
        elif length == 0:
            length = end - pos
        if kind == b"jp2h":  # a superbox: its first child is 'ihdr'
            end, pos = pos + length, pos + body
            continue
        if kind == b"ihdr":
            size = r.at(pos + body, 8)
            return HeaderSize(_u(size, 4, 4, "big"), _u(size, 0, 4, "big"), "JPEG 2000")
        if length < body:
            return None
        pos += length
    return None


def read_size(f: BinaryIO, *, max_bytes: int = MAX_HEADER_BYTES,
              seconds: float = MAX_HEADER_SECONDS) -> HeaderSize | None:
    """The size ``f``'s header declares, or None when the format is not recognised or the
    header is damaged (the decoder then says why). ``f`` must be seekable; it is never read
    past the bounds (:class:`HeaderLimitError`)."""
    r = _Reader(f, max_bytes, seconds)
    head = r.at(0, 32)
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return _png(r, head)
    if head[:2] == b"\xff\xd8":
        return _jpeg(r)
    if head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
        return _tiff(r, head)
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return _webp(r, head)
    if head[:2] == b"BM" and len(head) >= 22:
        return _bmp(r, head)
    if head[:1] == b"P" and head[1:2] in b"1234567":
        return _pnm(r)
    if head[:4] == b"\xff\x4f\xff\x51" or head[4:8] == b"jP  ":
        return _jp2(r, head)
    return None


def header_size(data: bytes) -> HeaderSize | None:
    """:func:`read_size` of encoded bytes in memory (uploads, files already read)."""
    return read_size(io.BytesIO(data))


def pixel_limit_reason(w: int, h: int, limit: int) -> str:
    """The problem text for an image of ``w`` x ``h`` over ``limit`` pixels."""
    return f"too large ({w}x{h}, {mp(w * h)}; the limit is {mp(limit)})"


@dataclass(frozen=True)
class SizeCheck:
    """The outcome of :func:`check_size`: the declared size (None when the header could not
    tell it; the caller then asks DALI's own parser or lets the decoder say why) and why the
    image must not be decoded (None when it may)."""

    size: HeaderSize | None
    problem: str | None


def check_size(source: bytes | BinaryIO, limit: int) -> SizeCheck:
    """Reads the size from ``source``'s header (bytes, or a seekable binary file) and refuses
    an image over ``limit`` pixels, whose header is too costly to read, or that DALI would
    decode to garbage (:attr:`HeaderSize.garbage`). The one size check the preview and
    ``check-images`` share, run before any decode."""
    try:
        size = header_size(source) if isinstance(source, bytes) else read_size(source)
    except HeaderLimitError as err:
        return SizeCheck(None, f"its size cannot be checked before decoding ({err})")
    if size is not None and size.pixels > limit:
        return SizeCheck(size, pixel_limit_reason(size.width, size.height, limit))
    return SizeCheck(size, size.garbage if size is not None else None)
