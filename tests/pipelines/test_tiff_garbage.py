"""TIFF layouts DALI 2.4 decodes to garbage without an error are refused before decoding, by the
preview and by check-images alike (the exported pipeline would train on the garbage)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.dataset_check import check_dataset
from dali_gallery.pipelines.image_headers import check_size, header_size
from dali_gallery.pipelines.images import EncodedImage, decode

H, W = 23, 37


def _gray() -> np.ndarray:
    y, x = np.mgrid[0:H, 0:W]
    return ((x * 7 + y * 3) % 256).astype(np.uint8)


def _pillow_tiff(mode: str) -> bytes:
    """A Pillow TIFF of the gray pattern in ``mode`` (LA: 2 samples, gray + alpha 200)."""
    gray = Image.fromarray(_gray())
    img = Image.merge("LA", (gray, Image.new("L", gray.size, 200))) if mode == "LA" \
        else gray.convert(mode)
    buf = io.BytesIO()
    img.save(buf, "TIFF")
    return buf.getvalue()


def _planar_rgb_tiff(bits: int) -> bytes:
    """An uncompressed RGB TIFF with separate planes (PlanarConfiguration 2), one strip per
    plane, of ``bits`` per sample (the gray pattern in each plane, scaled to the depth)."""
    scale, fmt = (1, "<u1") if bits == 8 else (257, "<u2")
    plane = (_gray().astype(np.uint32) * scale).astype(fmt).tobytes()
    tags = [(256, 3, [W]), (257, 3, [H]), (258, 3, [bits] * 3), (259, 3, [1]),
            (262, 3, [2]), (273, 4, [0, 0, 0]), (277, 3, [3]), (278, 3, [H]),
            (279, 4, [len(plane)] * 3), (284, 3, [2])]
    blob_at = 8 + 2 + 12 * len(tags) + 4
    blobs = b""
    data_at = blob_at + 6 + 12 + 12  # BitsPerSample, StripOffsets, StripByteCounts
    ifd = struct.pack("<H", len(tags))
    for tag, kind, values in tags:
        if tag == 273:
            values = [data_at + k * len(plane) for k in range(3)]
        payload = b"".join(struct.pack("<H" if kind == 3 else "<I", v) for v in values)
        if len(payload) > 4:
            ifd += struct.pack("<HHII", tag, kind, len(values), blob_at + len(blobs))
            blobs += payload
        else:
            ifd += struct.pack("<HHI", tag, kind, len(values)) + payload.ljust(4, b"\0")
    return b"II*\x00" + struct.pack("<I", 8) + ifd + b"\0" * 4 + blobs + plane * 3


def _dali_decode(data: bytes) -> np.ndarray:
    """DALI's own CPU decode of ``data``, no check of ours in the way."""
    from nvidia.dali import fn, types
    from nvidia.dali.pipeline import Pipeline

    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=1)
    with pipe:
        enc = fn.external_source(name="enc", dtype=types.UINT8, ndim=1)
        pipe.set_outputs(fn.decoders.image(enc, device="cpu", output_type=types.RGB))
    pipe.build()
    (out,) = pipe.run(enc=[np.frombuffer(data, dtype=np.uint8)])
    return np.array(out[0])


GARBAGE = {"gray+alpha": (lambda: _pillow_tiff("LA"), "a grayscale TIFF with 2 samples"),
           "16-bit planar": (lambda: _planar_rgb_tiff(16), "a 16-bit TIFF with separate")}
FINE = {"gray": lambda: _pillow_tiff("L"), "rgba": lambda: _pillow_tiff("RGBA"),
        "8-bit planar": lambda: _planar_rgb_tiff(8)}


@pytest.mark.parametrize("case", list(GARBAGE))
def test_dali_decodes_these_layouts_to_garbage(case: str) -> None:
    """The premise (a DALI fact, not ours): when this fails, DALI got fixed; lift the refusal."""
    truth = np.repeat(_gray()[..., None], 3, axis=2)
    assert not np.array_equal(_dali_decode(GARBAGE[case][0]()), truth)


@pytest.mark.parametrize("case", list(FINE))
def test_the_layouts_dali_decodes_right_are_kept(case: str) -> None:
    data = FINE[case]()
    truth = np.repeat(_gray()[..., None], 3, axis=2)
    if case == "rgba":
        truth = np.array(Image.open(io.BytesIO(data)).convert("RGB"))
    np.testing.assert_array_equal(_dali_decode(data), truth)
    assert check_size(data, 10**8).problem is None
    arrays, _, problems = decode([EncodedImage(f"{case}.tif", data)])
    assert problems == [] and np.array_equal(arrays[0], truth)


@pytest.mark.parametrize("case", list(GARBAGE))
def test_the_preview_refuses_them_naming_the_file_and_why(case: str) -> None:
    """It showed the garbage (a gray+alpha TIFF read as RGB, different on every run)."""
    make, why = GARBAGE[case]
    data = make()
    size = header_size(data)
    assert size is not None and (size.width, size.height) == (W, H)
    arrays, ok, problems = decode([EncodedImage("scan.tif", data),
                                   EncodedImage("ok.tif", FINE["gray"]())])
    assert [i.name for i in ok] == ["ok.tif"] and len(arrays) == 1
    assert [p.name for p in problems] == ["scan.tif"]
    assert problems[0].reason.startswith(why) and "DALI 2.4" in problems[0].reason


def test_check_images_reports_them(tmp_path: Path) -> None:
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / "la.tif").write_bytes(GARBAGE["gray+alpha"][0]())
    (tmp_path / "cls" / "planar16.tiff").write_bytes(GARBAGE["16-bit planar"][0]())
    (tmp_path / "cls" / "ok.tif").write_bytes(FINE["8-bit planar"]())
    checked, problems = check_dataset(tmp_path)
    assert checked == 3
    assert {p.name: p.reason.split(";")[0] for p in problems} == {
        "cls/la.tif": "a grayscale TIFF with 2 samples per pixel (an alpha or extra channel) "
                      "decodes to garbage in DALI 2.4",
        "cls/planar16.tiff": "a 16-bit TIFF with separate colour planes (PlanarConfiguration "
                             "2) decodes to garbage in DALI 2.4",
    }
    assert all(p.reason.endswith(", not decoded") for p in problems)
