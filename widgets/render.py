"""The builder's side of the engine: loaded images, one render request, one render result.

All engine calls go through :class:`PreviewRenderer` under one lock, because a DALI pipeline
must not be used from two threads at once (renders run on the scheduler's worker thread, image
loads on the kernel's main thread). Tiles are encoded after the lock is released. Loaded
annotations (:mod:`.label_source`) are matched to the images again after every load, and with
"show labels" on the tiles are drawn with their moved labels (:mod:`.label_tiles`).
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
from dali_gallery.pipelines.label_render import SampleLabels
from dali_gallery.pipelines.labels import DEFAULT_MIN_KEPT
from dali_gallery.pipelines.preset import Preset

from .encode import JPEG_QUALITY, encode, encode_all
from .label_source import LabelSource
from .label_tiles import TileLabelView, overlay_originals, overlay_tiles

DISPLAY_MAX = 512
"""Longest side of displayed tile bytes (larger renders are shrunk for display only)."""
MIN_KEPT_RANGE = (0.01, 1.0)
"""The drop threshold's bounds: 0 would keep boxes wholly outside the image."""


@dataclass(frozen=True)
class RenderRequest:
    """Everything a render depends on (the preset object is never mutated: edits replace it)."""

    preset: Preset
    draws: int
    count: int
    images_version: int
    tail: bool = False
    """Render through the preset's training output (resize, crop, normalise) as well."""
    overlay: bool = False
    """Draw the labels (when annotations are loaded) over the tiles."""


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
    original_bytes: list[bytes] = field(default_factory=list)
    """The originals as shown beside the tiles (with their labels when drawn)."""
    originals_key: tuple[int, int, bool] = (0, 0, False)
    """(images version, labels version, labels drawn): the originals change with it."""
    labels_in: list[SampleLabels] | None = None
    """Each image's labels as fed to the render; None without annotations."""
    label_names: dict[int, str] = field(default_factory=dict)
    min_kept: float = DEFAULT_MIN_KEPT

    @property
    def shape(self) -> tuple[int, int]:
        return self.render.n_images, self.render.draws

    def label_view(self, image: int, draw: int) -> TileLabelView | None:
        """One tile's labels for the inspector (None without annotations). Through the
        training output too: its resize, centre crop and mirror move the labels (the crop's
        drops are the render's last kept fractions, ``TAIL_KEPT``)."""
        moved = self.render.labels
        if self.labels_in is None or moved is None:
            return None
        return TileLabelView(self.labels_in[image], moved[draw * self.render.n_images + image],
                             self.label_names, self.min_kept, self.request.overlay)


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
        self.labels: LabelSource | None = None
        """The loaded annotations (None: none)."""
        self.overlay = True
        """"show labels": draw the labels over the tiles (when annotations are loaded)."""
        self.labels_version = 0
        self._labelled: list[bytes] = []

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

        Tiles no larger than the display size are encoded by the engine (on the GPU, one
        nvImageCodec batch on its CPU threads); larger ones (the "original" size) are shrunk
        for display with Pillow."""
        with self.lock:
            n = min(request.count, self.count)
            if n == 0:
                raise StepError("no images to preview: load the samples, a folder or uploads")
            labels_in = self.engine.labels
            # the training output's resize, crop and mirror move the labels too: drawn there
            overlay = request.overlay and labels_in is not None
            small = self.max_side is not None and self.max_side <= DISPLAY_MAX and not overlay
            render = self.engine.render(request.preset, draws=request.draws,
                                        images=list(range(n)), tail=request.tail,
                                        encode="jpeg" if small else None, quality=JPEG_QUALITY)
            originals = self.engine.images[:n]
            names = self.engine.names[:n]
            version = self.version
            shown = (self._labelled if overlay else self.loaded.originals)[:n]
            key = (version, self.labels_version, overlay)
            label_names = self.labels.names if self.labels is not None else {}
            min_kept = self.engine.min_kept
        if labels_in is not None:
            labels_in = labels_in[:n]
        if overlay and render.labels is not None and labels_in is not None:
            flat, encode_ms = overlay_tiles(render, labels_in, label_names, min_kept,
                                            DISPLAY_MAX)
        elif render.encoded is not None:
            flat, encode_ms = render.encoded, render.encode_ms
            render.ms -= encode_ms  # the engine's total includes its encoding
        else:
            flat, encode_ms = encode_all(render.images, "jpeg", DISPLAY_MAX)
        tiles = [[flat[d * n + i] for d in range(render.draws)] for i in range(n)]
        captions = [[fired_label(render, request.preset, i, d) for d in range(render.draws)]
                    for i in range(n)]
        return RenderResult(request, render, tiles, captions, encode_ms, names, originals,
                            version, original_bytes=shown, originals_key=key,
                            labels_in=labels_in, label_names=label_names, min_kept=min_kept)

    def set_labels(self, source: LabelSource | None) -> None:
        """Use these annotations (None: none) for the current and later images."""
        with self.lock:
            old, self.labels = self.labels, source
            self._apply_labels()
        if old is not None and old is not source:
            old.close()

    def set_min_kept(self, value: float) -> None:
        """Boxes keeping less than ``value`` of their area after a moving step are dropped."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not MIN_KEPT_RANGE[0] <= value <= MIN_KEPT_RANGE[1]:
            raise ValueError(f"box_min_kept {value!r} is not allowed; expected a fraction of "
                             f"the box's area from {MIN_KEPT_RANGE[0]} to {MIN_KEPT_RANGE[1]}")
        with self.lock:
            self.engine.min_kept = float(value)

    def _apply_labels(self) -> None:
        """Match the annotations to the engine's images (under the lock; the engine forgets
        its labels whenever its images change)."""
        labels = None
        if self.labels is not None:
            shapes = [a.shape[:2] for a in self.engine.images]
            labels = self.labels.for_images(self.engine.names, shapes)
            self.labels.check_sizes(self.engine.names, shapes, self.max_side)
        self.engine.set_labels(labels)
        self._labelled = [] if labels is None or self.labels is None else overlay_originals(
            self.engine.images, labels, self.labels.names, DISPLAY_MAX)
        self.labels_version += 1

    def close(self) -> None:
        with self.lock:
            self.engine.close()
            if self.labels is not None:
                self.labels.close()

    def _decode(self, items: list[tuple[str, bytes]],
                max_side: int | None) -> list[ImageProblem]:
        with self.lock:
            old = (self.engine.images, self.engine.names)
            problems = self.engine.set_images(items, max_side=max_side)
            if not self.engine.names:  # nothing decodable: keep what was shown
                self.engine.set_arrays(*old)
                self._apply_labels()
                return problems
            good = set(self.engine.names)
            self.loaded = LoadedImages(
                [(name, data) for name, data in items if name in good],
                [encode(a, "jpeg", DISPLAY_MAX) for a in self.engine.images])
            self.max_side = max_side
            self.version += 1
            self._apply_labels()
            return problems
