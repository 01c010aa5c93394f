"""Display bytes of DALI's pixels: the one place that turns samples into JPEG or PNG.

Display only: the pixels come from a DALI render and are never changed here, except that a
picture larger than its display box is shrunk (never enlarged) after rendering. GPU outputs are
encoded by nvImageCodec straight from device memory when it is installed; everything else by
Pillow (:func:`encode_image`).
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
from PIL import Image

from .codec_extensions import all_codecs

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


def encode_tiles(raw: Any, arrays: list[np.ndarray], fmt: str, quality: int) -> list[bytes]:
    """Display bytes of each sample of one output: nvImageCodec on a GPU batch of HWC uint8
    images (no host round trip), else Pillow on the host copies ``arrays``."""
    if fmt not in FORMATS:
        raise ValueError(f"encode {fmt!r} is not allowed; expected 'jpeg' or 'png'")
    from nvidia.dali.backend import TensorListGPU

    hwc_uint8 = bool(arrays) and arrays[0].ndim == 3 and arrays[0].shape[-1] == 3 \
        and arrays[0].dtype == np.uint8
    if isinstance(raw, TensorListGPU) and hwc_uint8 and _nvimgcodec() is not None:
        out = _nv_encode([raw[j] for j in range(len(raw))], fmt, quality)
        if out is not None:
            return out
    return [encode_image(a, fmt, quality=quality) for a in arrays]


def encode_jpegs_gpu(arrays: Sequence[np.ndarray], quality: int) -> list[bytes] | None:
    """JPEG bytes of host HWC uint8 pictures, encoded as one batch by nvImageCodec on the GPU:
    a gallery's strips took 0.17 s against 0.45-0.5 s with Pillow on an H200 host, and they
    leave the CPU (and the GIL) to the renders beside them. None where nvImageCodec is not
    installed, or fails (logged): the caller encodes with Pillow, the same picture."""
    if _nvimgcodec() is None or not arrays:
        return None
    try:
        out = _nv_encode([np.ascontiguousarray(a) for a in arrays], "jpeg", quality)
    except RuntimeError as e:  # nvImageCodec's CUDA or codec failures
        _log.warning("nvImageCodec could not encode %d pictures (%s); using Pillow",
                     len(arrays), e)
        return None
    if out is None:
        _log.warning("nvImageCodec left some of %d pictures unencoded; using Pillow",
                     len(arrays))
    return out


def _nv_encode(sources: Sequence[Any], fmt: str, quality: int) -> list[bytes] | None:
    """nvImageCodec's bytes of ``sources`` (DALI GPU samples or host arrays) as one batch;
    None when it left any of them unencoded."""
    nvimgcodec = _nvimgcodec()
    params = nvimgcodec.EncodeParams(quality_value=quality) if fmt == "jpeg" else None
    images = [nvimgcodec.as_image(x) for x in sources]
    with ENCODERS.use() as encoder:
        out = encoder.encode(images, fmt, params=params)
    return None if any(o is None for o in out) else [bytes(o) for o in out]


_CODEC: dict[str, Any] = {}


def _nvimgcodec() -> Any:
    if "module" not in _CODEC:
        try:
            with all_codecs():  # importing makes its instance (0.56 s on an H100, GIL held)
                from nvidia import nvimgcodec
        except ImportError:
            nvimgcodec = None
        _CODEC["module"] = nvimgcodec
    return _CODEC["module"]


class Encoders:
    """The process's nvImageCodec encoders, each used by one thread at a time (the builder's
    render thread and a gallery's cards thread encode at the same time) and made only when none
    is free. They used to be one per thread, and a gallery view's cards thread is new with
    every view: each gallery made an encoder again. Making one costs 2-5 ms, but the first
    encode of the process's first encoder took 0.31 s against 0.015 s later (H100; a later
    encoder's first encode was not timed), and the warm gallery took 0.87-1.10 s with an
    encoder per view against 0.58-0.77 s with these.
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
            with all_codecs():  # never the CPU-only extensions of a decoder built beside it
                encoder = _nvimgcodec().Encoder()
            with self._lock:
                self.made += 1
        yield encoder  # an exception leaves it here, dropped
        with self._lock:
            if len(self._free) < self.keep:
                self._free.append(encoder)


ENCODERS = Encoders()
