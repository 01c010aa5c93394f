"""The builder's side of the engine: loaded images, one render request, one render result.

All engine calls go through :class:`PreviewRenderer` under one lock, because a DALI pipeline
must not be used from two threads at once (renders run on the scheduler's worker thread, image
loads on the kernel's main thread). Tiles are encoded after the lock is released.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.engine import PreviewEngine, Render, StepError
from dali_gallery.pipelines.grid import fired_label
from dali_gallery.pipelines.images import ImageProblem, collect
from dali_gallery.pipelines.preset import Preset

from .encode import JPEG_QUALITY, encode, encode_all

DISPLAY_MAX = 512
"""Longest side of displayed tile bytes (larger renders are shrunk for display only)."""


@dataclass(frozen=True)
class RenderRequest:
    """Everything a render depends on (the preset object is never mutated: edits replace it)."""

    preset: Preset
    draws: int
    count: int
    images_version: int
    tail: bool = False
    """Render through the preset's training output (resize, crop, normalise) as well."""


@dataclass
class RenderResult:
    """A finished render and its display bytes: ``tiles[i][d]`` is draw d of image i."""

    request: RenderRequest
    render: Render
    tiles: list[list[bytes]]
    captions: list[list[str]]
    encode_ms: float
    names: list[str]
    originals: list[np.ndarray]
    images_version: int
    done_at: float = 0.0

    @property
    def shape(self) -> tuple[int, int]:
        return self.render.n_images, self.render.draws


@dataclass
class LoadedImages:
    """The encoded files behind the current images (kept to decode again at another size)."""

    items: list[tuple[str, bytes]] = field(default_factory=list)
    originals: list[bytes] = field(default_factory=list)


class PreviewRenderer:
    """Owns the preview engine and the images it renders."""

    def __init__(self, device: str = "auto", catalog: Catalog = CATALOG) -> None:
        self.engine = PreviewEngine(device, catalog=catalog)
        self.lock = threading.RLock()
        self.version = 0
        self.loaded = LoadedImages()
        self.max_side: int | None = None

    @property
    def count(self) -> int:
        return len(self.engine.names)

    @property
    def names(self) -> list[str]:
        return list(self.engine.names)

    def load(self, sources: Any, *, root: Any = None, max_side: int | None,
             max_files: int, max_bytes: int = 50 * 2**20) -> list[ImageProblem]:
        """Collect and decode images; bad files become problems. When no file is usable the
        previous images stay (a bad folder never blanks the preview)."""
        encoded, problems = collect(sources, root=root, max_files=max_files,
                                    max_bytes=max_bytes)
        items = [(e.name, e.data) for e in encoded]
        if not items:
            return list(problems)
        return list(problems) + self._decode(items, max_side)

    def reload(self, max_side: int | None) -> list[ImageProblem]:
        """Decode the same files again at another size."""
        if not self.loaded.items:
            self.max_side = max_side
            return []
        return self._decode(self.loaded.items, max_side)

    def render(self, request: RenderRequest) -> RenderResult:
        """Render the first ``count`` images x ``draws``; raises StepError on failure.

        Tiles no larger than the display size are encoded by the engine (on the GPU,
        nvImageCodec encodes straight from device memory); larger ones (the "original" size)
        are shrunk for display with Pillow."""
        with self.lock:
            n = min(request.count, self.count)
            if n == 0:
                raise StepError("no images to preview: load the samples, a folder or uploads")
            small = self.max_side is not None and self.max_side <= DISPLAY_MAX
            render = self.engine.render(request.preset, draws=request.draws,
                                        images=list(range(n)), tail=request.tail,
                                        encode="jpeg" if small else None, quality=JPEG_QUALITY)
            originals = self.engine.images[:n]
            names = self.engine.names[:n]
            version = self.version
        if render.encoded is not None:
            flat, encode_ms = render.encoded, render.encode_ms
            render.ms -= encode_ms  # the engine's total includes its encoding
        else:
            flat, encode_ms = encode_all(render.images, "jpeg", DISPLAY_MAX)
        tiles = [[flat[d * n + i] for d in range(render.draws)] for i in range(n)]
        captions = [[fired_label(render, request.preset, i, d) for d in range(render.draws)]
                    for i in range(n)]
        return RenderResult(request, render, tiles, captions, encode_ms, names, originals,
                            version)

    def close(self) -> None:
        with self.lock:
            self.engine.close()

    def _decode(self, items: list[tuple[str, bytes]],
                max_side: int | None) -> list[ImageProblem]:
        with self.lock:
            old = (self.engine.images, self.engine.names)
            problems = self.engine.set_images(items, max_side=max_side)
            if not self.engine.names:  # nothing decodable: keep what was shown
                self.engine.set_arrays(*old)
                return problems
            good = set(self.engine.names)
            self.loaded = LoadedImages(
                [(name, data) for name, data in items if name in good],
                [encode(a, "jpeg", DISPLAY_MAX) for a in self.engine.images])
            self.max_side = max_side
            self.version += 1
            return problems
