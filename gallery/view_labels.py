"""Labels in the gallery: which annotations its images get, and their drawing on its tiles.

The gallery takes a :class:`~widgets.label_source.LabelSource` (in the app: the builder's own,
so labels loaded once show in both tabs), matches it to its images by file name on its worker
thread and feeds them to its engine, which moves them with the pixels of every row. The tiles
and the zoom view are drawn with the builder's drawing code (:mod:`widgets.label_overlay`,
:mod:`widgets.label_report`, :mod:`widgets.label_tiles`), never a copy of it. Without labels
none of this runs: the unlabelled gallery renders and encodes as before.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.label_render import LabelOutput, SampleLabels
from dali_gallery.pipelines.labels import DEFAULT_MIN_KEPT
from dali_gallery.widgets.label_overlay import draw_labels
from dali_gallery.widgets.label_report import input_tile_labels, tile_labels, track
from dali_gallery.widgets.label_source import LabelSource
from dali_gallery.widgets.label_tiles import TileLabelView
from dali_gallery.widgets.render import MIN_KEPT_RANGE

from .sweep import RowResult

Change = Literal["", "labels", "drawing"]
"""What a label setting changed: nothing, the labels (rows render again), or only whether
they are drawn (rows are drawn again from the renders they have)."""


@dataclass(frozen=True)
class LabelRequest:
    """The label settings a render job starts with (read on the main thread)."""

    source: LabelSource
    min_kept: float
    overlay: bool


@dataclass(frozen=True)
class LabelState:
    """What a card draws: each image's labels as fed (``before``), category names, the drop
    threshold and whether to draw them at all ("show labels")."""

    before: list[SampleLabels]
    names: dict[int, str]
    min_kept: float
    overlay: bool


class GalleryLabels:
    """The gallery's label settings (main thread); ``version`` counts the changes that make
    rows render again, ``drawn`` those that only draw them again. The worker's side:
    :meth:`for_job` feeds them to the engine once per images and labels."""

    def __init__(self) -> None:
        self.source: LabelSource | None = None
        self.overlay = True
        self.min_kept = DEFAULT_MIN_KEPT
        self.version = 0
        self.drawn = 0
        self._fed: tuple[int, ...] | None = None
        self._state: LabelState | None = None

    def update(self, source: LabelSource | None, show: bool, min_kept: float) -> Change:
        """Take new settings (ValueError/TypeError name what is wrong); returns what changed."""
        if source is not None and not isinstance(source, LabelSource):
            raise TypeError(f"labels={type(source).__name__} is not allowed; expected a "
                            "LabelSource (the builder's renderer.labels) or None")
        if isinstance(min_kept, bool) or not isinstance(min_kept, (int, float)) \
                or not MIN_KEPT_RANGE[0] <= min_kept <= MIN_KEPT_RANGE[1]:
            raise ValueError(f"min_kept {min_kept!r} is not allowed; expected a fraction of a "
                             f"box's area from {MIN_KEPT_RANGE[0]} to {MIN_KEPT_RANGE[1]}")
        change: Change = ""
        if source is not self.source or (source is not None and min_kept != self.min_kept):
            self.version += 1
            change = "labels"
        elif source is not None and bool(show) != self.overlay:
            self.drawn += 1
            change = "drawing"
        self.source, self.overlay, self.min_kept = source, bool(show), float(min_kept)
        return change

    def request(self) -> LabelRequest | None:
        """The settings a job renders with (None: no labels, the plain gallery)."""
        if self.source is None:
            return None
        return LabelRequest(self.source, self.min_kept, self.overlay)

    def for_job(self, engine: PreviewEngine, key: tuple[int, ...],
                request: LabelRequest | None) -> LabelState | None:
        """Worker thread: what a job's cards draw, after feeding the engine the labels of its
        images unless it has them for ``key`` (images version, size, labels version)."""
        if self._fed != key:
            self._state = apply_labels(engine, request)
            self._fed = key
        return drawing(self._state, request)

    def forget(self) -> None:
        """The engine's images changed (so it has no labels): feed them again."""
        self._fed = None


def apply_labels(engine: PreviewEngine, request: LabelRequest | None) -> LabelState | None:
    """Feed the engine the labels of its images (worker thread: the engine is the worker's);
    None when there are none or no image has an entry (the rows render as without labels)."""
    if request is None:
        engine.set_labels(None)
        return None
    fed = request.source.for_images(engine.names, [a.shape[:2] for a in engine.images])
    engine.set_labels(fed)
    engine.min_kept = request.min_kept
    if fed is None:
        return None
    return LabelState(fed, request.source.names, request.min_kept, request.overlay)


def drawing(state: LabelState | None, request: LabelRequest | None) -> LabelState | None:
    """``state`` with the job's "show labels" (a redraw job keeps the labels it fed)."""
    if state is None or request is None:
        return None
    return state if state.overlay == request.overlay else replace(state, overlay=request.overlay)


def drawn_column(state: LabelState, result: RowResult, originals: list[np.ndarray],
                 column: int) -> list[np.ndarray]:
    """The tiles of card column ``column`` (0: the originals, with their input labels) with
    the labels drawn as the builder draws them (boxes a step cut are dashed)."""
    if column == 0:
        return [draw_labels(a, input_tile_labels(s), state.names)
                for a, s in zip(originals, state.before, strict=True)]
    assert result.labels is not None
    out = []
    for tile, moved, before in zip(result.tiles[column - 1], result.labels[column - 1],
                                   state.before, strict=True):
        clipped = track(len(before.boxes), moved, state.min_kept).clipped
        out.append(draw_labels(tile, tile_labels(moved, clipped), state.names))
    return out


def zoom_labels(state: LabelState | None, result: RowResult, image: int,
                column: int) -> TileLabelView | None:
    """The labels the zoom view draws on one tile and its original (None: nothing drawn)."""
    if state is None or not state.overlay:
        return None
    before = state.before[image]
    if column == 0:
        after = LabelOutput(before, {})
    elif result.labels is not None:
        after = result.labels[column - 1][image]
    else:
        return None
    return TileLabelView(before, after, state.names, state.min_kept, True)
