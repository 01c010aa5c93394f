"""Annotations matched to the preview's images: one :class:`SampleLabels` per image, and names.

The engine takes labels as a list in the order of its images; annotations are keyed by file
name, and the preview shows a few files of a folder (or uploads) whose names are the engine's
(``PreviewEngine.names``, relative to the folder). So labels are matched by name on every image
change, and an image without an entry gets empty labels (it still renders, with nothing drawn).

Masks come from DALI itself (:func:`pipelines.annotations.dali_masks`, the reader the exported
pipeline uses) on the cleaned document, never on the user's file as written, only for the
images on screen, and are kept as uint8 at the annotation's size, shrunk (nearest neighbour)
to the decoded preview size when fed. A category id above 255 cannot be a uint8 mask value:
masks are then turned off with a problem saying so, and boxes and keypoints still work. In the
app one source serves the builder and the gallery, each matching it from its own thread: the
masks are read under a lock, so neither sees the other's half-read masks.
"""

from __future__ import annotations

import tempfile
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dali_gallery.pipelines.annotated_preview import size_problem
from dali_gallery.pipelines.annotations import (
    AnnotationError,
    AnnotationProblem,
    Annotations,
    ImageLabels,
    dali_masks,
    load_coco,
    load_yolo,
    parse_coco,
)
from dali_gallery.pipelines.image_files import readable
from dali_gallery.pipelines.label_render import MASK_ID_MAX, SampleLabels
from dali_gallery.pipelines.mask_fit import fit_masks

__all__ = ["YOLO", "AnnotationError", "LabelSource", "MASK_ID_MAX", "from_path", "from_upload",
           "from_yolo"]

YOLO = "yolo"
"""``annotations="yolo"``: the images folder is a YOLO dataset (one .txt of labels per image)."""


def _empty(masked: bool, shape: tuple[int, int]) -> SampleLabels:
    mask = np.zeros((*shape, 1), np.uint8) if masked else None
    return SampleLabels(np.zeros((0, 4), np.float32), np.zeros(0, np.int32),
                        np.zeros((0, 1, 3), np.float32), mask)


@dataclass
class LabelSource:
    """Loaded annotations, ready to be matched to the preview's images.

    ``origin``: what was loaded, for the summary. ``images_dir``: where the images lie (masks
    are rasterised by DALI from there); None for uploaded images: no masks then."""

    annotations: Annotations
    origin: str
    images_dir: Path | None = None
    problems: list[AnnotationProblem] = field(default_factory=list)
    masks_on: bool = True
    _masks: dict[str, np.ndarray] = field(default_factory=dict, repr=False)
    _tried: set[str] = field(default_factory=set, repr=False)
    _clean: Path | None = field(default=None, repr=False)
    _tmp: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def __post_init__(self) -> None:
        self.problems = list(self.annotations.problems) + list(self.problems)
        self._by_file = self.annotations.by_file()
        masked = [img for img in self.annotations.images if img.has_masks]
        if not masked:
            self.masks_on = False
            return
        ids = [int(c) for img in masked for c in img.classes]
        if self.images_dir is None:
            self._masks_off("the images were uploaded, so DALI cannot read their masks "
                            "(it reads them beside the image files); boxes and keypoints are "
                            "shown")
        elif max(ids, default=0) > MASK_ID_MAX:
            self._masks_off(f"category id {max(ids)} is above {MASK_ID_MAX}: a mask holds one "
                            f"byte per pixel (ids 1 to {MASK_ID_MAX}), so masks are off; boxes "
                            "and keypoints are shown")

    # ---- what the UI shows --------------------------------------------------------------------

    @property
    def names(self) -> dict[int, str]:
        """Category id -> name (the overlay's captions and the inspector's tables)."""
        return {cid: c.name for cid, c in self.annotations.categories.items()}

    def matched(self, files: Sequence[str]) -> list[str]:
        """Those of ``files`` that have an entry in the annotations."""
        return [f for f in files if f in self._by_file]

    def counts(self, files: Sequence[str]) -> dict[int, int]:
        """Boxes per category over ``files`` (the legend)."""
        counts: Counter[int] = Counter()
        for f in self.matched(files):
            counts.update(int(c) for c in self._by_file[f].classes)
        return dict(counts)

    def input_labels(self, file: str) -> ImageLabels | None:
        return self._by_file.get(file)

    # ---- what the engine is fed ---------------------------------------------------------------

    def for_images(self, files: Sequence[str],
                   shapes: Sequence[tuple[int, int]]) -> list[SampleLabels] | None:
        """One SampleLabels per image (``shapes``: each decoded image's height and width); None
        when no image has an annotation entry."""
        if not self.matched(files):
            return None
        with self._lock:
            return self._for_images(files, shapes)

    def check_sizes(self, files: Sequence[str], shapes: Sequence[tuple[int, int]],
                    max_side: int | None) -> None:
        """Add a problem for each image whose file does not decode to the size its entry
        declares (its labels would not match its pixels; it is still shown, as training
        reads it)."""
        for f, shape in zip(files, shapes, strict=True):
            entry = self._by_file.get(f)
            problem = None if entry is None else size_problem(entry, shape, max_side)
            if problem is not None and problem not in self.problems:
                self.problems.append(problem)

    def _for_images(self, files: Sequence[str],
                    shapes: Sequence[tuple[int, int]]) -> list[SampleLabels]:
        self._load_masks(files)
        masked = self.masks_on and any(f in self._masks for f in files)
        out = []
        for f, (h, w) in zip(files, shapes, strict=True):
            entry = self._by_file.get(f)
            if entry is None:
                out.append(_empty(masked, (h, w)))
                continue
            mask = None
            if masked:
                raw = self._masks.get(f)
                mask = np.zeros((h, w, 1), np.uint8) if raw is None else raw
            try:
                out.append(SampleLabels(entry.boxes, entry.classes, entry.keypoints, mask))
            except ValueError as e:  # too many boxes or keypoints for a preview
                self._problem(f, f"{e}; this image is shown without labels")
                out.append(_empty(masked, (h, w)))
        return fit_masks(shapes, out)  # DALI's nearest resize to the decoded size

    def close(self) -> None:
        """Remove the cleaned document written for DALI's mask reader."""
        with self._lock:
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None
            self._clean = None  # a late user (the gallery's worker) writes it again
            self._masks.clear()
            self._tried.clear()

    # ---- internals ----------------------------------------------------------------------------

    def _problem(self, file: str, reason: str) -> None:
        problem = AnnotationProblem(readable(file), reason)
        if problem not in self.problems:
            self.problems.append(problem)

    def _masks_off(self, reason: str) -> None:
        self.masks_on = False
        self._masks.clear()
        self._problem(self.origin, reason)

    def _load_masks(self, files: Sequence[str]) -> None:
        """DALI's masks of those ``files`` that have some and are not loaded yet."""
        if not self.masks_on or self.images_dir is None:
            return
        wanted = [f for f in files if f not in self._tried and f in self._by_file
                  and self._by_file[f].has_masks]
        if not wanted:
            return
        self._tried.update(wanted)  # a file DALI gives no mask for is not asked again
        try:
            if self._clean is None:  # DALI trusts its file: hand it only what passed the checks
                self._tmp = tempfile.TemporaryDirectory(prefix="dali-gallery-labels-")
                self._clean = self.annotations.write_clean(self._tmp.name)
            raw = dali_masks(self._clean, self.images_dir, wanted)
        except (AnnotationError, OSError) as e:  # an OSError's text would name a server path
            why = e.strerror if isinstance(e, OSError) else str(e)
            self._masks_off(f"masks could not be read ({why}); boxes and keypoints are shown")
            return
        for f, m in raw.items():
            top = int(m.max(initial=0))
            if top > MASK_ID_MAX or int(m.min(initial=0)) < 0:
                self._masks_off(f"a mask holds the id {top}, above {MASK_ID_MAX}; masks are off")
                return
            self._masks[f] = np.ascontiguousarray(m, dtype=np.uint8).reshape(*m.shape[:2], 1)


def from_path(path: str | Path, images_dir: str | Path) -> LabelSource:
    """A COCO instances file for the images of ``images_dir`` (a trusted caller's path).
    AnnotationError when the document as a whole cannot be used."""
    path = Path(path)
    return LabelSource(load_coco(path, images_dir), readable(path.name), Path(images_dir))


def from_yolo(images_dir: str | Path, names: Sequence[str] | None = None,
              confine: str | Path | None = None) -> LabelSource:
    """The YOLO labels of ``images_dir`` (one .txt per image), read inside ``confine``."""
    return LabelSource(load_yolo(images_dir, names, confine), "YOLO labels", Path(images_dir))


def from_upload(data: bytes, name: str, available: Sequence[str],
                images_dir: Path | None) -> LabelSource:
    """An uploaded COCO document: its bytes are data, never a path. ``available``: the image
    files it may name (the folder's listing, or the uploaded images); ``images_dir``: their
    folder (None for uploaded images: no masks)."""
    shown = readable(name)[:80] or "annotations"
    return LabelSource(parse_coco(bytes(data), available, origin=shown), shown, images_dir)
