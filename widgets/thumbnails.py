"""Tiny live thumbnails of each operator's effect, rendered by DALI on the user's first image.

Each operator is shown at a "showcase" strength derived from its catalog entry: halfway from
the neutral value to the end of the slider for the magnitude parameter (e.g. rotate 45 deg),
else its default. A separate small engine keeps the preview engine's pipeline cache and
``builds`` counter untouched. Results are cached per (operator, image, device) for the process.
"""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import numpy as np
from PIL import Image

from dali_gallery.pipelines.catalog import CATALOG, Catalog, OpSpec
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import Preset, new_step

from .encode import encode

THUMB_INPUT_PX = 256
"""Thumbnails render on the first image at preview size, so size-dependent operators (crops,
pastes, masks on a grid) look as they will in the preview; the result is shrunk for display."""
THUMB_PX = 96
_CACHE: dict[tuple[str, str, str], bytes] = {}
_CACHE_LOCK = threading.Lock()


def showcase_value(spec: OpSpec) -> Any:
    """The magnitude value a thumbnail shows (None when the operator has no magnitude)."""
    if spec.magnitude is None:
        return None
    p = spec.param(spec.magnitude)
    value = p.default
    if p.neutral is not None and p.slider is not None and p.kind in ("float", "int"):
        v = p.neutral + 0.5 * (p.slider[1] - p.neutral)
        if v != p.neutral:
            value = v
    if p.kind == "int":
        value = int(round(value))
        if p.odd and value % 2 == 0:
            value += 1
    return p.coerce(value) if p.check(p.coerce(value)) is None else p.default


def thumbnail_input(image: np.ndarray, px: int = THUMB_INPUT_PX) -> np.ndarray:
    """The first image at most ``px`` on its longer side (input preparation only; DALI
    renders the effect)."""
    pic = Image.fromarray(image)
    pic.thumbnail((px, px), Image.Resampling.BILINEAR)
    return np.ascontiguousarray(np.asarray(pic.convert("RGB")))


class Thumbnails:
    """Renders and caches operator thumbnails; call from one thread at a time."""

    def __init__(self, device: str, catalog: Catalog = CATALOG) -> None:
        self.device = device
        self.catalog = catalog
        self._engine: PreviewEngine | None = None
        self._digest = ""

    def set_image(self, image: np.ndarray | None) -> None:
        """Use this image (the first of the user's set) for every thumbnail."""
        if image is None:
            self._digest = ""
            return
        small = thumbnail_input(image)
        digest = hashlib.sha1(small.tobytes() + str(small.shape).encode()).hexdigest()[:16]
        if digest == self._digest:
            return
        self._digest = digest
        if self._engine is None:
            self._engine = PreviewEngine(self.device, num_threads=1, catalog=self.catalog)
        self._engine.set_arrays([small], ["thumbnail"])

    def cached(self, op: str) -> bytes | None:
        with _CACHE_LOCK:
            return _CACHE.get((op, self._digest, self.device))

    def render(self, op: str) -> bytes | None:
        """JPEG bytes of ``op``'s effect, or None without an image; raises StepError when
        DALI cannot render it."""
        if not self._digest or self._engine is None:
            return None
        hit = self.cached(op)
        if hit is not None:
            return hit
        spec = self.catalog[op]
        step = new_step(op, self.catalog)
        value = showcase_value(spec)
        if spec.magnitude is not None:
            render = self._engine.render_sweep(step, spec.magnitude, [value], seed=7)
        else:
            render = self._engine.render(Preset([step], seed=7))
        data = encode(render.tile(0, 0), "jpeg", max_side=THUMB_PX)
        with _CACHE_LOCK:
            _CACHE[(op, self._digest, self.device)] = data
        return data

    def close(self) -> None:
        if self._engine is not None:
            self._engine.close()
            self._engine = None
