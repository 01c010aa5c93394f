"""Builds the corpus of bad and unusual images at test time, so no binary file is committed.

Every entry says whether the image should decode (``good``) and, if so, to which size after EXIF
orientation, so the tests can check both the happy path and each failure mode from the DALI notes
(measured facts about DALI 2.4 decoders; see pipelines/images.py).
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from PIL import Image

GOOD_DIR = "good"
BAD_DIR = "bad"
"""Class subfolders of the dataset root (``readers.file`` reads only files inside subfolders)."""

LARGE_SIZE = (12000, 9000)
"""(width, height) of the very large JPEG: 108 MP, 324 MB once decoded to RGB."""


@dataclass(frozen=True)
class CorpusEntry:
    """One corpus file: where it is, whether it should decode, and to what (H, W)."""

    key: str
    path: Path
    good: bool
    shape: tuple[int, int] | None = None
    note: str = ""
    expect: str = ""
    """For a bad entry: a phrase its problem reason must contain."""


def _pattern(width: int, height: int) -> Image.Image:
    """An RGB image with a red top-left quarter, so orientation and scale can be checked."""
    arr = np.full((height, width, 3), (40, 160, 40), np.uint8)
    arr[: height // 2, : width // 2] = (220, 20, 20)
    arr[height // 2 :, width // 2 :] = (20, 20, 220)
    return Image.fromarray(arr)


def _noise(width: int, height: int, seed: int = 3) -> Image.Image:
    """Random pixels: the entropy-coded data dominates the JPEG, so a cut lands inside it."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))


def _jpeg(image: Image.Image, **kwargs: object) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "JPEG", quality=90, **kwargs)
    return buf.getvalue()


def _save(image: Image.Image, fmt: str, **kwargs: object) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **kwargs)
    return buf.getvalue()


def _scan_start(jpeg: bytes) -> int:
    """Offset of the first entropy-coded byte (just after the SOS segment header)."""
    sos = jpeg.index(b"\xff\xda")
    (length,) = struct.unpack(">H", jpeg[sos + 2 : sos + 4])
    return sos + 2 + length


def corrupt_scan(jpeg: bytes, *, count: int = 200, seed: int = 7) -> bytes:
    """Random bytes inside the entropy-coded data: libjpeg decodes it to garbage, no error.

    No 0xFF byte is written, so no marker appears by chance and the damage is the same each run.
    """
    start = _scan_start(jpeg)
    rng = np.random.default_rng(seed)
    noise = rng.integers(0, 255, size=count, dtype=np.uint8).tobytes()  # 0..254, never 0xFF
    at = start + (len(jpeg) - start) // 3
    return jpeg[:at] + noise + jpeg[at + count :]


def bad_header(jpeg: bytes) -> bytes:
    """Keeps SOI but overwrites the next marker segments: the JPEG parser rejects it."""
    return jpeg[:2] + b"\xff\x00" * 40 + jpeg[82:]


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bomb(width: int = 30000, height: int = 30000) -> bytes:
    """A tiny PNG whose header claims width x height pixels: a decompression-bomb stand-in."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grayscale
    rows = zlib.compress(b"\x00" * (width + 1) * 4)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", rows)
        + _png_chunk(b"IEND", b"")
    )


def exif_rotated(width: int = 64, height: int = 96, orientation: int = 6) -> bytes:
    """A JPEG stored as width x height with an EXIF orientation tag (6: rotate 90 clockwise)."""
    exif = Image.Exif()
    exif[0x0112] = orientation
    return _jpeg(_pattern(width, height), exif=exif.tobytes())


def large_jpeg(width: int = LARGE_SIZE[0], height: int = LARGE_SIZE[1]) -> bytes:
    """A very large but quick-to-make JPEG: flat colour blocks compress to about 1.7 MB."""
    image = Image.new("RGB", (width, height), (40, 160, 40))
    image.paste((220, 20, 20), (0, 0, width // 2, height // 2))
    image.paste((20, 20, 220), (width // 2, height // 2, width, height))
    return _jpeg(image, subsampling=2)


def build_corpus(folder: Path, *, large: bool = True) -> dict[str, CorpusEntry]:
    """Writes the corpus under ``folder`` and returns the entries by key.

    Layout: ``folder/dataset/good`` and ``folder/dataset/bad`` (class subfolders, so the dataset
    checker can read them with ``readers.file``), ``folder/large/huge.jpg``, ``folder/bomb/``,
    ``folder/empty_folder/`` and ``folder/missing.jpg`` (never created).
    """
    folder = Path(folder)
    good = folder / "dataset" / GOOD_DIR
    bad = folder / "dataset" / BAD_DIR
    for d in (good, bad, folder / "empty_folder", folder / "bomb"):
        d.mkdir(parents=True, exist_ok=True)
    entries: list[CorpusEntry] = []

    def put(
        key: str,
        path: Path,
        data: bytes,
        shape: tuple[int, int] | None,
        note: str,
        expect: str = "",
    ) -> None:
        path.write_bytes(data)
        entries.append(CorpusEntry(key, path, shape is not None, shape, note, expect))

    base = _jpeg(_pattern(96, 64))
    put("good_jpeg", good / "a_photo.jpg", base, (64, 96), "plain RGB JPEG")
    put("good_png", good / "b_drawing.png", _save(_pattern(80, 48), "PNG"), (48, 80), "RGB PNG")
    put("good_webp", good / "c_web.webp", _save(_pattern(40, 30), "WEBP", lossless=True),
        (30, 40), "lossless WebP")
    put("good_bmp", good / "d_bitmap.BMP", _save(_pattern(33, 21), "BMP"), (21, 33),
        "BMP with upper-case extension")
    put("good_tiff", good / "e_scan.tif", _save(_pattern(50, 40), "TIFF"), (40, 50), "TIFF")
    gray = Image.fromarray(np.tile(np.arange(0, 256, 4, dtype=np.uint8), (48, 1)))
    put("gray_jpeg", good / "gray.jpg", _jpeg(gray), (48, 64), "grayscale JPEG (1 channel)")
    put("cmyk_jpeg", good / "cmyk.jpg", _jpeg(_pattern(64, 40).convert("CMYK")), (40, 64),
        "CMYK JPEG")
    rgba = _pattern(40, 40).convert("RGBA")
    rgba.putalpha(Image.linear_gradient("L").resize((40, 40)))
    put("rgba_png", good / "rgba.png", _save(rgba, "PNG"), (40, 40), "RGBA PNG")
    g16 = np.tile(np.linspace(0, 65535, 50).astype(np.uint16), (30, 1))
    put("png16", good / "deep16.png", _save(Image.fromarray(g16), "PNG"), (30, 50),
        "16-bit grayscale PNG")
    put("palette_png", good / "palette.png", _save(_pattern(36, 24).convert("P"), "PNG"),
        (24, 36), "palette PNG")
    put("exif6", good / "exif_rot6.jpg", exif_rotated(64, 96, 6), (64, 96),
        "stored 64x96 (WxH), EXIF orientation 6 -> shown 96x64")
    put("one_px", good / "one_px.png", _save(Image.new("RGB", (1, 1), (9, 99, 199)), "PNG"),
        (1, 1), "1x1 image")
    put("non_ascii", good / "café_żółw.jpg", _jpeg(_pattern(30, 20)), (20, 30),
        "non-ASCII file name")

    noisy = _jpeg(_noise(128, 96))
    put("truncated", bad / "truncated.jpg", noisy[: len(noisy) // 2], None,
        "JPEG cut at 50 % (inside the entropy-coded data)", "premature end of JPEG data")
    put("corrupt_scan", bad / "corrupt_scan.jpg", corrupt_scan(_jpeg(_pattern(256, 256))), None,
        "random bytes in the entropy-coded data", "corrupt JPEG data, decodes to garbage")
    put("bad_header", bad / "bad_header.jpg", bad_header(base), None, "damaged JPEG header",
        "cannot be decoded")
    put("text_as_jpg", bad / "notes.jpg", b"this is not an image\n" * 10, None,
        "a text file named .jpg", "cannot be decoded")
    put("zero_bytes", bad / "empty.jpg", b"", None, "0-byte file", "empty")
    loop = bad / "loop.jpg"
    os.symlink(loop.name, loop)
    entries.append(CorpusEntry("symlink_loop", loop, False, None, "symlink pointing to itself",
                               "symbolic link loop"))

    entries.append(CorpusEntry("missing", folder / "missing.jpg", False, None, "does not exist",
                               "not found"))
    entries.append(CorpusEntry("empty_folder", folder / "empty_folder", False, None,
                               "folder with no images", "no images found"))
    put("bomb", folder / "bomb" / "bomb.png", png_bomb(), None,
        "header claims 30000x30000 (900 MP)", "too large")
    if large:
        (folder / "large").mkdir(exist_ok=True)
        put("large", folder / "large" / "huge.jpg", large_jpeg(), LARGE_SIZE[::-1],
            "12000x9000 JPEG (108 MP)")
    return {e.key: e for e in entries}


def dataset_root(corpus: dict[str, CorpusEntry]) -> Path:
    """The ``dataset`` folder (class subfolders ``good`` and ``bad``) of a built corpus."""
    return corpus["good_jpeg"].path.parent.parent
