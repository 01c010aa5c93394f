"""pipelines.image_headers: sizes from headers wherever they sit, bounded, shared by both checks."""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.dataset_check import check_dataset
from dali_gallery.pipelines.image_decode import peek_shapes
from dali_gallery.pipelines.image_headers import (
    MAX_HEADER_BYTES,
    HeaderLimitError,
    check_size,
    header_size,
    read_size,
)
from dali_gallery.pipelines.images import EncodedImage, decode
from tests.corpus import _jpeg, _pattern


def _app_segment(marker: int, size: int) -> bytes:
    body = bytes(np.random.default_rng(marker).integers(0, 255, size - 2, dtype=np.uint8))
    return bytes([0xFF, marker]) + struct.pack(">H", size) + body


def jpeg_with_far_frame_header(width: int = 30000, height: int = 30000) -> bytes:
    """A real JPEG whose frame header comes after 320 KB of APP segments and claims
    ``width`` x ``height`` (the probe's 328 KB file: decoding it allocates > 2.7 GB)."""
    small = _jpeg(_pattern(16, 16))
    apps = b"".join(_app_segment(0xE2 + k % 12, 65535) for k in range(5))
    data = bytearray(small[:2] + apps + small[2:])
    pos = 2
    while data[pos + 1] not in (0xC0, 0xC1, 0xC2):
        pos += 2 + struct.unpack(">H", data[pos + 2:pos + 4])[0]
    data[pos + 5:pos + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def tiff_with_ifd_after_data(width: int = 20000, height: int = 20000) -> bytes:
    """A valid 8-bit grey TIFF of ``width`` x ``height`` (400 MP by default): one deflate strip
    of zeros, then the IFD at the end of the file, far past the first 256 KB."""
    packer = zlib.compressobj(6)
    row_block = bytes(width * 100)
    strip = b"".join(packer.compress(row_block) for _ in range(height // 100)) + packer.flush()
    ifd_at = 8 + len(strip)
    entries = [  # tag, type (3 SHORT, 4 LONG), count, value
        (256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 8),
        (262, 3, 1, 1), (273, 4, 1, 8), (277, 3, 1, 1), (278, 4, 1, height),
        (279, 4, 1, len(strip)),
    ]
    ifd = struct.pack("<H", len(entries))
    for tag, kind, count, value in entries:
        fmt = "<HHIHH" if kind == 3 else "<HHII"
        ifd += struct.pack(fmt, tag, kind, count, value, 0) if kind == 3 else \
            struct.pack(fmt, tag, kind, count, value)
    ifd += struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", ifd_at) + strip + ifd


@pytest.fixture(scope="module")
def far_jpeg() -> bytes:
    return jpeg_with_far_frame_header()


@pytest.fixture(scope="module")
def far_tiff() -> bytes:
    return tiff_with_ifd_after_data()


def test_the_crafted_files_are_what_the_probe_used(far_jpeg: bytes, far_tiff: bytes) -> None:
    """Guards the fixtures: headers past 256 KB, read by Pillow and by DALI's own parser."""
    assert 320_000 < len(far_jpeg) < 340_000 and far_jpeg.find(b"\xff\xc0") > 256 * 1024
    assert struct.unpack("<I", far_tiff[4:8])[0] > 256 * 1024
    limit, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
    try:
        for data, size in ((far_jpeg, (30000, 30000)), (far_tiff, (20000, 20000))):
            with Image.open(io.BytesIO(data)) as im:
                assert im.size == size
    finally:
        Image.MAX_IMAGE_PIXELS = limit
    assert [s[:2] for s in peek_shapes([far_jpeg, far_tiff])] == [(30000, 30000), (20000, 20000)]


def test_sizes_far_in_the_file(far_jpeg: bytes, far_tiff: bytes) -> None:
    assert header_size(far_jpeg).pixels == 900_000_000
    assert header_size(far_tiff).pixels == 400_000_000
    assert check_size(far_tiff, 160_000_000).problem == (
        "too large (20000x20000, 400 MP; the limit is 160 MP)")


class CountingFile(io.BytesIO):
    """A file that counts the bytes read from it."""

    read_bytes = 0

    def read(self, n: int | None = -1) -> bytes:  # type: ignore[override]
        out = super().read(n)
        self.read_bytes += len(out)
        return out


def test_seeks_over_segments_instead_of_reading_them(far_jpeg: bytes, far_tiff: bytes) -> None:
    for data in (far_jpeg, far_tiff):
        f = CountingFile(data)
        assert read_size(f) is not None
        assert f.read_bytes < 1024  # 328 KB / 400 KB files: a few headers read


def test_bounds_on_segments_bytes_and_time() -> None:
    tiny_segments = b"\xff\xd8" + b"\xff\xe1\x00\x02" * 70_000 + b"\xff\xc0\x00\x11\x08"
    with pytest.raises(HeaderLimitError, match="segments"):
        read_size(io.BytesIO(tiny_segments))
    assert "cannot be checked" in check_size(tiny_segments, 10**9).problem
    garbage = b"\xff\xd8" + b"\x00" * (2 * MAX_HEADER_BYTES)  # libjpeg-style scan for 0xFF
    with pytest.raises(HeaderLimitError, match="bytes"):
        read_size(io.BytesIO(garbage))
    with pytest.raises(HeaderLimitError, match="took over"):
        read_size(io.BytesIO(tiny_segments), seconds=0.0)


def _saved(fmt: str, size: tuple[int, int], mode: str = "RGB", **kw: object) -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, 90).save(buf, fmt, **kw)
    return buf.getvalue()


CASES = {
    "jpeg": lambda: _saved("JPEG", (123, 45)),
    "jpeg progressive + exif": lambda: _jpeg(_pattern(77, 31), progressive=True,
                                              exif=Image.Exif().tobytes()),
    "png": lambda: _saved("PNG", (301, 2)),
    "png palette": lambda: _saved("PNG", (9, 700), mode="P"),
    "webp lossy": lambda: _saved("WEBP", (333, 111)),
    "webp lossless": lambda: _saved("WEBP", (257, 1000), lossless=True),
    "webp alpha (VP8X)": lambda: _saved("WEBP", (64, 48), mode="RGBA"),
    "bmp": lambda: _saved("BMP", (50, 70)),
    "tiff little-endian": lambda: _saved("TIFF", (200, 99)),
    "tiff big-endian": lambda: _big_endian_tiff((31, 17)),
    "tiff deflate": lambda: _saved("TIFF", (40, 4000), compression="tiff_adobe_deflate"),
    "ppm": lambda: _saved("PPM", (12, 34)),
    "jpeg 2000": lambda: _saved("JPEG2000", (96, 64)),
    "j2k codestream": lambda: _saved("JPEG2000", (80, 24), no_jp2=True),
}


def _big_endian_tiff(size: tuple[int, int]) -> bytes:
    width, height = size
    data = bytes(width * height)
    entries = [(256, 3, width), (257, 3, height), (258, 3, 8), (259, 3, 1), (262, 3, 1),
               (273, 4, 8), (277, 3, 1), (278, 3, height), (279, 4, len(data))]
    ifd = struct.pack(">H", len(entries))
    for tag, kind, value in entries:
        ifd += (struct.pack(">HHIHH", tag, kind, 1, value, 0) if kind == 3
                else struct.pack(">HHII", tag, kind, 1, value))
    return b"MM\x00*" + struct.pack(">I", 8 + len(data)) + data + ifd + b"\x00" * 4


@pytest.mark.parametrize("case", list(CASES))
def test_sizes_agree_with_pillow_and_dali(case: str) -> None:
    data = CASES[case]()
    with Image.open(io.BytesIO(data)) as im:
        truth = im.size
    size = header_size(data)
    assert size is not None and (size.width, size.height) == truth
    if case not in ("ppm", "jpeg 2000", "j2k codestream"):  # formats the preview accepts
        shape = peek_shapes([data])[0]
        assert shape is not None and (shape[1], shape[0]) == truth


def test_unknown_or_damaged_headers_say_none() -> None:
    assert header_size(b"GIF89a" + bytes(20)) is None
    assert header_size(b"") is None
    assert header_size(b"\xff\xd8\xff\xd9") is None  # no frame header
    assert header_size(b"\x89PNG\r\n\x1a\n" + bytes(8)) is None


def test_preview_refuses_both_before_decoding(far_jpeg: bytes, far_tiff: bytes) -> None:
    _, ok, problems = decode([EncodedImage("far.jpg", far_jpeg),
                              EncodedImage("far.tif", far_tiff)])
    assert ok == []
    assert [p.reason for p in problems] == [
        "too large (30000x30000, 900 MP; the limit is 160 MP)",
        "too large (20000x20000, 400 MP; the limit is 160 MP)",
    ]


def test_check_images_refuses_both_before_decoding(
    far_jpeg: bytes, far_tiff: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe: check-images read 256 KB only, so both were decoded and called clean."""
    import dali_gallery.pipelines.dataset_check as dc

    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "far.jpg").write_bytes(far_jpeg)
    (tmp_path / "cls" / "far.tif").write_bytes(far_tiff)
    (tmp_path / "cls" / "ok.jpg").write_bytes(_jpeg(_pattern(20, 10)))
    given: list[list[str] | None] = []
    real_build = dc._build

    def spy(root, files, num_threads):
        given.append(None if files is None else list(files))
        return real_build(root, files, num_threads)

    monkeypatch.setattr(dc, "_build", spy)
    checked, problems = check_dataset(tmp_path)
    assert checked == 3
    assert {p.name: p.reason for p in problems} == {
        "cls/far.jpg": "too large (30000x30000, 900 MP; the limit is 160 MP), not decoded",
        "cls/far.tif": "too large (20000x20000, 400 MP; the limit is 160 MP), not decoded",
    }
    assert given == [["cls/ok.jpg"]]  # the reader never saw them
