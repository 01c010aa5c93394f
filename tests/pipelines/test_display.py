"""Display bytes of DALI's samples: the training tail's CHW floats shown as pictures, constant
tiles included, the encoders' size rules, nvImageCodec's CPU batch encoder against Pillow, and
its encoders kept for the process."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.display import (
    display_size,
    encode_batch,
    encode_image,
    encode_tiles,
    to_display,
)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_a_constant_float_tile_is_black_without_warnings(dtype):
    """A constant tile (a normalised flat image) has hi == lo: in float16 the old 1e-12 guard
    vanished, so it divided 0 by 0 and cast NaN to uint8."""
    tile = np.full((3, 8, 6), 0.25, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        shown = to_display(tile)
    assert shown.shape == (8, 6, 3) and shown.dtype == np.uint8
    assert not shown.any()


def test_float_tiles_are_stretched_to_the_full_range():
    ramp = np.linspace(-2.0, 3.0, 12, dtype=np.float16).reshape(1, 3, 4)
    shown = to_display(np.repeat(ramp, 3, axis=0))
    assert shown.min() == 0 and shown.max() == 255
    assert (np.diff(shown[..., 0].ravel().astype(int)) >= 0).all()  # order kept


def test_chw_and_hwc_sizes_and_grey_tiles():
    assert display_size(np.zeros((3, 20, 30), np.float32)) == (20, 30)
    assert display_size(np.zeros((20, 30, 3), np.uint8)) == (20, 30)
    grey = to_display(np.full((5, 7, 1), 9, np.uint8))
    assert grey.shape == (5, 7, 3) and (grey == 9).all()


def test_encoded_pictures_shrink_to_fit_and_never_grow():
    img = np.zeros((100, 200, 3), np.uint8)
    small = Image.open(io.BytesIO(encode_image(img, "png", fit=(50, 50))))
    assert small.size == (50, 25)
    same = Image.open(io.BytesIO(encode_image(img, "jpeg", fit=(400, 400))))
    assert same.size == (200, 100)
    with pytest.raises(ValueError, match="'gif' is not allowed"):
        encode_image(img, "gif")


# ---- nvImageCodec encoders: kept for the process, one thread at a time ---------------------


class _FakeCodec:
    """Stands in for ``nvidia.nvimgcodec`` (no GPU here): encoders that count themselves and
    can be held inside ``encode`` to make two threads encode at once."""

    def __init__(self) -> None:
        self.made = 0
        self.hold: threading.Event | None = None
        self.inside = threading.Event()
        self.fail = False
        self.devices: list[int] = []
        codec = self

        class Encoder:
            def __init__(self, device_id: int = -1, max_num_cpu_threads: int = 0) -> None:
                codec.made += 1
                self.id = codec.made
                codec.devices.append(device_id)

            def encode(self, images, fmt, params=None):
                codec.inside.set()
                if codec.hold is not None:
                    codec.hold.wait(10)
                if codec.fail:
                    raise RuntimeError("CUDA failure")
                return [f"{fmt}:{self.id}:{x}".encode() for x in images]

        self.Encoder = Encoder

    NVIMGCODEC_DEVICE_CPU_ONLY = -99999

    class QualityType:
        QUALITY = "quality"

    @staticmethod
    def EncodeParams(quality_type, quality_value):  # noqa: N802 (nvImageCodec's name)
        return {quality_type: quality_value}

    @staticmethod
    def as_image(x):
        return int(np.asarray(x).sum())


@pytest.fixture
def fake_codec(monkeypatch):
    from dali_gallery.pipelines import display

    codec = _FakeCodec()
    monkeypatch.setitem(display._CODEC, "module", codec)
    monkeypatch.setattr(display, "ENCODERS", display.Encoders(keep=2))
    return codec


def _in_thread(fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    return t, out


def test_encoders_made_once_serve_every_later_thread(fake_codec):
    pictures = [np.full((4, 4, 3), v, np.uint8) for v in (1, 2)]
    for _ in range(3):  # a new cards thread for each gallery view
        t, out = _in_thread(lambda: encode_batch(pictures, "jpeg", 85))
        t.join(10)
        assert out[0] == [b"jpeg:1:48", b"jpeg:1:96"]
    assert fake_codec.made == 1
    assert fake_codec.devices == [fake_codec.NVIMGCODEC_DEVICE_CPU_ONLY]  # its CPU codecs


def test_threads_encoding_at_once_each_get_their_own_encoder(fake_codec):
    from dali_gallery.pipelines import display

    fake_codec.hold = threading.Event()
    first, out1 = _in_thread(lambda: display.encode_batch([np.ones((2, 2, 3), np.uint8)], "jpeg",
                                                           85))
    assert fake_codec.inside.wait(10)
    second, out2 = _in_thread(lambda: display.encode_batch([np.ones((2, 2, 3), np.uint8)], "jpeg",
                                                            85))
    fake_codec.hold.set()
    first.join(10)
    second.join(10)
    assert fake_codec.made == 2 and {out1[0][0], out2[0][0]} == {b"jpeg:1:12", b"jpeg:2:12"}
    assert len(display.ENCODERS._free) == 2  # both kept, at most ``keep``


def test_an_encoder_whose_encode_failed_is_not_used_again(fake_codec, caplog):
    from dali_gallery.pipelines import display

    fake_codec.fail = True
    assert display.encode_batch([np.ones((2, 2, 3), np.uint8)], "jpeg", 85) is None  # Pillow's turn
    assert "could not encode" in caplog.text
    fake_codec.fail = False
    assert display.encode_batch([np.ones((2, 2, 3), np.uint8)], "jpeg", 85) == [b"jpeg:2:12"]
    assert display.ENCODERS.made == 2


# ---- nvImageCodec's CPU codecs, for real (installed with DALI) -----------------------------


def _pictures() -> list[np.ndarray]:
    """Bundled photographs cut to odd sizes, one a strided view, and a gradient: what a
    preview's tiles look like (the samples are not made for this test)."""
    from dali_gallery.gallery import samples_dir

    photos = [np.asarray(Image.open(samples_dir() / name).convert("RGB"))
              for name in ("coffee.jpg", "gravel.jpg")]
    ramp = np.linspace(0, 255, 131, dtype=np.float32)
    gradient = np.stack([np.tile(ramp, (77, 1)), np.tile(ramp[::-1], (77, 1)),
                         np.full((77, 131), 90.0)], axis=2).astype(np.uint8)
    return [np.ascontiguousarray(photos[0][:257, :193]), photos[1][::2, ::3][:171, :203],
            gradient]


def test_the_batch_encoder_gives_the_pictures_pillow_gives():
    """JPEG at the quality asked for (Pillow's quantization tables at that quality: its default
    quality type ignored the value and gave 75) and within JPEG's tolerance of Pillow's
    picture; PNG bit for bit; a strided view is encoded as the picture it shows."""
    pictures = _pictures()
    for quality in (70, 90):
        jpegs = encode_batch(pictures, "jpeg", quality)
        assert jpegs is not None and all(b[:2] == b"\xff\xd8" for b in jpegs)
        for picture, ours in zip(pictures, jpegs, strict=True):
            pillow = encode_image(picture, "jpeg", quality=quality)
            mine, theirs = (Image.open(io.BytesIO(x)) for x in (ours, pillow))
            assert mine.quantization == theirs.quantization
            a, b = (np.asarray(im.convert("RGB"), np.int16) for im in (mine, theirs))
            assert a.shape == b.shape == picture.shape
            assert np.abs(a - b).mean() < 1
            assert np.abs(a - picture).mean() <= np.abs(b - picture).mean() + 0.5  # as close
    pngs = encode_batch(pictures, "png", 90)
    assert pngs is not None
    for picture, png in zip(pictures, pngs, strict=True):
        assert np.array_equal(np.asarray(Image.open(io.BytesIO(png)).convert("RGB")), picture)
    with pytest.raises(ValueError, match="'gif' is not allowed"):
        encode_batch(pictures, "gif", 90)


def test_tiles_the_batch_encoder_cannot_take_go_to_pillow(monkeypatch):
    """The training tail's CHW floats are not HWC uint8: Pillow shows them, stretched."""
    from dali_gallery.pipelines import display

    called = []
    monkeypatch.setattr(display, "encode_batch", lambda *a: called.append(a))
    floats = [np.linspace(-1, 1, 3 * 8 * 6, dtype=np.float32).reshape(3, 8, 6)]
    out = encode_tiles(floats, "png", 90, batch=True)
    assert called == []
    assert Image.open(io.BytesIO(out[0])).size == (6, 8)
    pictures = _pictures()[:1]
    encode_tiles(pictures, "jpeg", 90, batch=True)
    assert len(called) == 1  # HWC uint8: one batch


_FRESH = """
import json, re, sys
{before}
from dali_gallery.pipelines.display import encode_batch
import numpy as np
assert encode_batch([np.zeros((8, 8, 3), np.uint8)], "jpeg", 85) is not None
maps = open("/proc/self/maps").read()
print(json.dumps(sorted(set(re.findall(r"lib(\\w+)_ext\\.so", maps)))))
"""


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads the mapped libraries")
@pytest.mark.parametrize("before", ["", "import nvidia.nvimgcodec"])
def test_the_encoder_loads_no_gpu_codec_unless_the_kernel_imported_them(before):
    """Imported by the preview, nvImageCodec's module loads its CPU extensions only (its GPU
    ones held the GIL 0.56 s on a GPU host); imported by the kernel's own code first, the
    preview uses that module as it is."""
    from dali_gallery.pipelines.codec_extensions import GPU_EXTENSIONS, default_folder

    folder = default_folder()
    if folder is None or not any(folder.glob("libnvjpeg_ext*")):
        pytest.skip("nvImageCodec's nvJPEG extension is not installed here")
    env = {k: v for k, v in os.environ.items() if k != "NVIMGCODEC_EXTENSIONS_PATH"}
    out = subprocess.run([sys.executable, "-c", _FRESH.format(before=before)], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    loaded = {f"lib{name}_ext" for name in json.loads(out.strip().splitlines()[-1])}
    assert "libjpeg_turbo_ext" in loaded
    gpu = loaded & set(GPU_EXTENSIONS)
    assert (gpu == set()) if not before else ("libnvjpeg_ext" in gpu)
