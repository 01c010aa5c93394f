"""Display bytes of DALI's samples: the training tail's CHW floats shown as pictures, constant
tiles included, the encoders' size rules, and nvImageCodec encoders kept for the process."""

from __future__ import annotations

import io
import threading
import warnings

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.display import display_size, encode_image, to_display


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
        codec = self

        class Encoder:
            def __init__(self) -> None:
                codec.made += 1
                self.id = codec.made

            def encode(self, images, fmt, params=None):
                codec.inside.set()
                if codec.hold is not None:
                    codec.hold.wait(10)
                if codec.fail:
                    raise RuntimeError("CUDA failure")
                return [f"{fmt}:{self.id}:{x}".encode() for x in images]

        self.Encoder = Encoder

    @staticmethod
    def EncodeParams(quality_value):  # noqa: N802 (nvImageCodec's name)
        return {"quality": quality_value}

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
    from dali_gallery.pipelines.display import encode_jpegs_gpu

    pictures = [np.full((4, 4, 3), v, np.uint8) for v in (1, 2)]
    for _ in range(3):  # a new cards thread for each gallery view
        t, out = _in_thread(lambda: encode_jpegs_gpu(pictures, 85))
        t.join(10)
        assert out[0] == [b"jpeg:1:48", b"jpeg:1:96"]
    assert fake_codec.made == 1


def test_threads_encoding_at_once_each_get_their_own_encoder(fake_codec):
    from dali_gallery.pipelines import display

    fake_codec.hold = threading.Event()
    first, out1 = _in_thread(lambda: display.encode_jpegs_gpu([np.ones((2, 2, 3), np.uint8)],
                                                               85))
    assert fake_codec.inside.wait(10)
    second, out2 = _in_thread(lambda: display.encode_jpegs_gpu([np.ones((2, 2, 3), np.uint8)],
                                                                85))
    fake_codec.hold.set()
    first.join(10)
    second.join(10)
    assert fake_codec.made == 2 and {out1[0][0], out2[0][0]} == {b"jpeg:1:12", b"jpeg:2:12"}
    assert len(display.ENCODERS._free) == 2  # both kept, at most ``keep``


def test_an_encoder_whose_encode_failed_is_not_used_again(fake_codec, caplog):
    from dali_gallery.pipelines import display

    fake_codec.fail = True
    assert display.encode_jpegs_gpu([np.ones((2, 2, 3), np.uint8)], 85) is None  # Pillow's turn
    assert "could not encode" in caplog.text
    fake_codec.fail = False
    assert display.encode_jpegs_gpu([np.ones((2, 2, 3), np.uint8)], 85) == [b"jpeg:2:12"]
    assert display.ENCODERS.made == 2
