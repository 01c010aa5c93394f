"""Display bytes of DALI's pixels: the one place that turns samples into JPEG or PNG.

Display only: the pixels come from a DALI render and are never changed here, except that a
picture larger than its display box is shrunk (never enlarged) after rendering. GPU outputs are
encoded by nvImageCodec straight from device memory when it is installed; everything else by
Pillow (:func:`encode_image`).
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from PIL import Image

FORMATS = ("jpeg", "png")


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
    if a.dtype != np.uint8:
        lo, hi = float(a.min()), float(a.max())
        a = ((a - lo) / (hi - lo + 1e-12) * 255).astype(np.uint8)
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
        nvimgcodec = _nvimgcodec()
        imgs = [nvimgcodec.as_image(raw[j]) for j in range(len(raw))]
        params = nvimgcodec.EncodeParams(quality_value=quality) if fmt == "jpeg" else None
        out = _encoder().encode(imgs, fmt, params=params)
        if all(o is not None for o in out):
            return [bytes(o) for o in out]
    return [encode_image(a, fmt, quality=quality) for a in arrays]


_CODEC: dict[str, Any] = {}


def _nvimgcodec() -> Any:
    if "module" not in _CODEC:
        try:
            from nvidia import nvimgcodec
        except ImportError:
            nvimgcodec = None
        _CODEC["module"] = nvimgcodec
    return _CODEC["module"]


def _encoder() -> Any:
    if "encoder" not in _CODEC:
        _CODEC["encoder"] = _nvimgcodec().Encoder()
    return _CODEC["encoder"]
