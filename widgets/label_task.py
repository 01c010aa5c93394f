"""The labels panel's "classification | detection" pick: detection shows an annotated set.

Picking detection loads the annotations of the images folder when the panel offers a file there
whose name looks like them (``instances.json``...), or else its YOLO labels (a ``.txt`` per
image). Otherwise it switches the images to the
bundled samples that ship with a hand-drawn COCO file (:data:`SAMPLE_ANNOTATIONS`), through
the images panel's own samples loader (so a served app's checks apply as for its "bundled
samples" button, and the app's gallery follows), showing the annotated ones, and loads that
file. Classification removes the labels (the images stay). The pick follows the labels: loading
or removing them in any other way moves it too.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from dali_gallery.pipelines.annotations import AnnotationError, AnnotationProblem
from dali_gallery.pipelines.images import ImageProblem

from . import style
from .image_source import SAMPLE_ANNOTATIONS, SAMPLES_DIR

if TYPE_CHECKING:
    from .labels_panel import LabelsPanel

CLASSIFICATION, DETECTION = "classification", "detection"
TASKS = (CLASSIFICATION, DETECTION)
SamplesLoader = Callable[[Sequence[str]], list[ImageProblem]]
"""Loads the named files of the bundled samples as the preview's images (the images panel's
``load_samples``); returns the files it could not use."""


@functools.cache
def annotated_samples() -> tuple[str, ...]:
    """The sample files :data:`SAMPLE_ANNOTATIONS` has entries for, in its order."""
    doc = json.loads(SAMPLE_ANNOTATIONS.read_text(encoding="utf-8"))
    return tuple(str(image["file_name"]) for image in doc["images"])


class TaskPick:
    """The toggle and what picking does; ``panel`` is the labels panel it belongs to."""

    def __init__(self, panel: LabelsPanel, samples: SamplesLoader | None) -> None:
        self.panel = panel
        self._samples = samples
        self._quiet = False
        self.widget = style.classed(w.ToggleButtons(
            options=[("classification", CLASSIFICATION), ("detection", DETECTION)],
            value=CLASSIFICATION, style={"button_width": "110px"},
            tooltips=["images only: no labels",
                      "boxes, masks and keypoints: the annotations of the images folder, or "
                      "the bundled annotated samples"]), style.LABELS_TASK)
        self.widget.observe(self._picked, "value")

    @property
    def value(self) -> str:
        return str(self.widget.value)

    def pick(self, task: str) -> list[AnnotationProblem]:
        """Switch to ``task``; returns the annotation problems (also shown in the panel)."""
        if task not in TASKS:
            raise ValueError(f"task {task!r} is not allowed; expected one of {TASKS}")
        problems: list[AnnotationProblem] = []
        if task == CLASSIFICATION:
            if self.panel.source is not None:
                self.panel.clear()
        else:
            problems = self._detection()
        self.sync()
        return problems

    def sync(self) -> None:
        """Show detection while labels are loaded, classification otherwise."""
        value = DETECTION if self.panel.source is not None else CLASSIFICATION
        if self.widget.value != value:
            self._quiet = True
            try:
                self.widget.value = value
            finally:
                self._quiet = False

    def _detection(self) -> list[AnnotationProblem]:
        panel = self.panel
        found = panel.likely_found()
        if found is not None and not _same(panel.images_folder(), SAMPLES_DIR):
            return panel.load_found(found)
        if self._samples is None:
            return self._refuse("the images folder has no annotations (a COCO .json named "
                                "like instances.json, or YOLO .txt labels), and this builder "
                                "has no bundled samples to show instead: upload a .json or "
                                "load a folder with annotations")
        image_problems = self._samples(annotated_samples())
        if not _same(panel.images_folder(), SAMPLES_DIR):
            why = f": {image_problems[0].message}" if image_problems else ""
            return self._refuse(f"the annotated samples could not be shown{why}")
        try:
            return panel.load(SAMPLE_ANNOTATIONS)
        except AnnotationError as e:  # shown by the panel already
            return [AnnotationProblem(SAMPLE_ANNOTATIONS.name, str(e))]

    def _refuse(self, message: str) -> list[AnnotationProblem]:
        self.panel.failed(message)
        return [AnnotationProblem("detection", message)]

    def _picked(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self.pick(str(change["new"]))


def _same(a: Path | None, b: Path) -> bool:
    if a is None:
        return False
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
