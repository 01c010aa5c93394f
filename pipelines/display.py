"""Display bytes of DALI's pixels: the one place that turns samples into JPEG or PNG.

Display only: the pixels come from a DALI render and are never changed here, except that a
picture larger than its display box is shrunk (never enlarged) after rendering. A GPU preview's
pictures (host copies: the preview reads them anyway) are encoded as one batch by nvImageCodec's
CPU codecs (:func:`encode_batch`), everything else by Pillow (:func:`encode_image`).

nvImageCodec is imported with its CPU extensions only (:func:`.codec_extensions.cpu_codecs`):
importing it with every extension made its module's instance probe nvJPEG's hardware decoder
and encoder, two nvJPEG handles of 0.28 s each with the GIL held (0.56 s in which no thread of
the kernel ran, on an H200 host), and the first GPU encode took 0.32 s more. Its CPU JPEG
encoder (libjpeg-turbo) is imported in 5 ms, encodes 16 pictures of 256x1024 in 3-6 ms
(nvJPEG on the GPU: 7 ms after its first batch) and releases the GIL.
The module is the process's: code of the same kernel that imports ``nvidia.nvimgcodec`` after
the preview encoded its first picture gets that instance, without the GPU codecs; import it
before the preview to have them (then the preview uses it as it is).
"""

from __future__ import annotations

import io
import logging
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from PIL import Image

from .codec_extensions import cpu_codecs

FORMATS = ("jpeg", "png")
_log = logging.getLogger(__name__)


def _is_chw(a: np.ndarray) -> bool:
    return a.ndim == 3 and a.shape[0] in (1, 3) and a.shape[2] not in (1, 3)


def display_size(img: np.ndarray) -> tuple[int, int]:
    """(height, width) of a sample as :func:`to_display` shows it: the training tail's CHW
    layout puts the channels first, so ``shape[:2]`` would read (3, H)."""
    return (img.shape[1], img.shape[2]) if _is_chw(img) else (img.shape[0], img.shape[1])


def to_display(img: np.ndarray) -> np.ndarray:
    """An HWC uint8 view of a sample (the training tail may give CHW floats)."""
    a = img
    if _is_chw(a):
        a = np.transpose(a, (1, 2, 0))
    if a.dtype != np.uint8:  # stretched to 0..255 in float32 (float16 loses the 1e-12)
        f = a.astype(np.float32)
        lo, hi = float(f.min()), float(f.max())
        a = ((f - lo) * (255.0 / (hi - lo)) if hi > lo else np.zeros_like(f)).astype(np.uint8)
    if a.shape[2] == 1:
        a = np.repeat(a, 3, axis=2)
    return a


def encode_image(array: np.ndarray, fmt: str = "jpeg", *, quality: int = 85,
                 fit: tuple[int, int] | None = None) -> bytes:
    """JPEG (at ``quality``) or PNG bytes of one sample, shrunk to fit in ``fit`` (width,
    height) when it is larger. PNG favours speed over size (these bytes go to a page now)."""
    if fmt not in FORMATS:
        raise ValueError(f"image format {fmt!r} is not allowed; expected 'jpeg' or 'png'")
    img = Image.fromarray(to_display(array))
    if fit is not None and (img.width > fit[0] or img.height > fit[1]):
        img.thumbnail(fit, Image.Resampling.BILINEAR)
    buf = io.BytesIO()
    if fmt == "jpeg":
        img.save(buf, "JPEG", quality=quality)
    else:
        img.save(buf, "PNG", compress_level=1)
    return buf.getvalue()


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"encode {fmt!r} is not allowed; expected 'jpeg' or 'png'")


def encode_tiles(arrays: list[np.ndarray], fmt: str, quality: int, *,
                 batch: bool = False) -> list[bytes]:
    """Display bytes of each sample of one output (host arrays): with ``batch`` (a GPU
    preview) one nvImageCodec batch for HWC uint8 pictures, else (or where nvImageCodec cannot)
    Pillow, one picture at a time."""
    _check_format(fmt)
    hwc_uint8 = bool(arrays) and all(
        a.ndim == 3 and a.shape[-1] == 3 and a.dtype == np.uint8 for a in arrays)
    if batch and hwc_uint8:
        out = encode_batch(arrays, fmt, quality)
        if out is not None:
            return out
    return [encode_image(a, fmt, quality=quality) for a in arrays]


def encode_batch(arrays: Sequence[np.ndarray], fmt: str, quality: int) -> list[bytes] | None:
    """JPEG or PNG bytes of host HWC uint8 pictures, encoded as one batch by nvImageCodec's CPU
    codecs, on its own threads with the GIL released: a GPU gallery's strips took 0.26-0.30 s
    in all against 0.45-0.5 s with Pillow (H200 host), beside the renders. None where
    nvImageCodec is not installed or fails (logged): the caller encodes with Pillow, the same
    picture."""
    _check_format(fmt)
    nvimgcodec = _nvimgcodec()
    if nvimgcodec is None or not arrays:
        return None
    params = nvimgcodec.EncodeParams(quality_type=nvimgcodec.QualityType.QUALITY,
                                     quality_value=quality) if fmt == "jpeg" else None
    try:
        images = [nvimgcodec.as_image(np.ascontiguousarray(a)) for a in arrays]
        with ENCODERS.use() as encoder:
            out = encoder.encode(images, fmt, params=params)
    except RuntimeError as e:  # nvImageCodec's codec failures
        _log.warning("nvImageCodec could not encode %d pictures (%s); using Pillow",
                     len(arrays), e)
        return None
    if any(o is None for o in out):
        _log.warning("nvImageCodec left some of %d pictures unencoded; using Pillow",
                     len(arrays))
        return None
    return [bytes(o) for o in out]


_CODEC: dict[str, Any] = {}
ENCODE_THREADS = max(1, min(8, (os.cpu_count() or 2) - 1))
"""CPU threads of each nvImageCodec encoder (its default is one a core, each encoder; it
refuses, with a warning, as many as the cores)."""


def _nvimgcodec() -> Any:
    """``nvidia.nvimgcodec``, imported with its CPU extensions unless the kernel imported it
    already (see the module docstring); None when it is not installed."""
    if "module" not in _CODEC:
        try:
            if "nvidia.nvimgcodec" in sys.modules:
                from nvidia import nvimgcodec
            else:
                with cpu_codecs():
                    from nvidia import nvimgcodec
        except ImportError:
            nvimgcodec = None
        _CODEC["module"] = nvimgcodec
    return _CODEC["module"]


class Encoders:
    """The process's nvImageCodec encoders (CPU), each used by one thread at a time (the
    builder's render thread and a gallery's cards thread encode at the same time) and made
    only when none is free: a gallery view's cards thread is new with every view, and with an
    encoder per thread each gallery made one again (on the GPU codecs, the warm gallery took
    0.87-1.10 s with an encoder per view against 0.58-0.77 s with these).
    At most :attr:`keep` free ones are kept; one whose encode raised is not reused."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self.made = 0
        self._free: list[Any] = []
        self._lock = threading.Lock()

    @contextmanager
    def use(self) -> Iterator[Any]:
        with self._lock:
            encoder = self._free.pop() if self._free else None
        if encoder is None:
            codec = _nvimgcodec()
            encoder = codec.Encoder(device_id=codec.NVIMGCODEC_DEVICE_CPU_ONLY,
                                    max_num_cpu_threads=ENCODE_THREADS)
            with self._lock:
                self.made += 1
        yield encoder  # an exception leaves it here, dropped
        with self._lock:
            if len(self._free) < self.keep:
                self._free.append(encoder)


ENCODERS = Encoders()
