"""The preview of an image folder, lined up with the exported module's first batch.

Which files, in which order and with which labels, comes from one listing: the exported
module's own (:func:`pipelines.shards.first_batch` over
:func:`~pipelines.shards.training_files`, functions the module embeds). The preview never lists
the folder a second way that would have to agree with it. What the preview then shows
differently is returned, counted, for the caller to say: files of the batch it cannot load (one
DALI cannot decode, over the pixel budget, unreadable), and images of the folder the exported
pipeline never reads (beside class folders, or in folders nested in them), which the preview
does not show either. Every file the reader reads is decoded by DALI, whatever its type
(``.ppm`` too): the preview's own list of types (:data:`~.image_files.SUPPORTED_EXTENSIONS`)
does not filter the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .engine import MAX_BATCH
from .image_collect import ImageProblem, ReaderFiles
from .image_files import readable, scan_folder
from .preset import Preset
from .shards import (
    ShardBatch,
    class_folders,
    first_batch,
    flat_folder_files,
    shard_preset,
    shard_range,
    training_files,
)

DEFAULT_BATCH = 16
"""Images previewed when no batch size is given: the shard's files, at most this many."""
MAX_NAMED = 5
"""Files named in one note (the rest are counted)."""


@dataclass(frozen=True)
class FolderPreview:
    """What a folder preview loaded into the engine, against what the exported pipeline reads
    first (its first unshuffled batch of the shard)."""

    preset: Preset
    """The preset to render with: the shard's seed (:func:`pipelines.shards.shard_preset`)."""
    batch: ShardBatch
    """The exported pipeline's first batch: its files, relative to the folder, and labels."""
    labels: list[int]
    """The labels of the images loaded, in the engine's order (``batch.labels`` without the
    skipped files')."""
    skipped: list[ImageProblem]
    """Files of the batch the preview could not load, with the reason."""
    unread: list[str]
    """Images of the folder the exported pipeline never reads: files beside the class folders,
    and folders (ending in ``/``) nested inside class folders that hold images."""
    classes: list[str] = field(default_factory=list)
    """The class folders in the reader's numbering (label k is ``classes[k]``; [] when
    flat)."""
    empty: list[str] = field(default_factory=list)
    """Class folders that hold no file the reader reads: each still takes a label number."""

    @property
    def exact(self) -> bool:
        """Whether the preview holds the whole batch (draw 0 is then the batch, at original
        size)."""
        return not self.skipped

    def notes(self, folder: str) -> list[str]:
        """How the preview differs from the exported pipeline, one line each ([] when not)."""
        lines = []
        if self.skipped:
            n = len(self.batch.files)
            lines.append(f"the preview shows {n - len(self.skipped)} of the {n} images of the "
                         f"exported pipeline's first batch ({len(self.skipped)} skipped); its "
                         "first draw is not that batch")
        if self.unread:
            folders = sum(1 for u in self.unread if u.endswith("/"))
            what = " and ".join(text for count, text in (
                (len(self.unread) - folders, f"{len(self.unread) - folders} image(s) beside "
                                             "the class folders"),
                (folders, f"{folders} folder(s) of images inside class folders")) if count)
            lines.append(f"{what} of {folder} are not read by the exported pipeline "
                         "(readers.file reads the files in class folders only), so they are "
                         f"not previewed: {_named(self.unread)}")
        if self.empty:
            numbering = ", ".join(f"{readable(c)} {k}" for k, c in
                                  enumerate(self.classes[:MAX_NAMED + len(self.empty)]))
            lines.append(f"class folder(s) {_named(self.empty)} of {folder} hold no image the "
                         "exported pipeline reads, yet readers.file numbers every folder: the "
                         f"labels are {numbering}; move such folders out to number the classes "
                         "with images from 0")
        return lines


def folder_preview(engine: Any, preset: Preset, file_root: str | Path, *, shard_id: int = 0,
                   num_shards: int = 1, batch_size: int | None = None,
                   max_side: int | None = None) -> FolderPreview:
    """Load the first ``batch_size`` files (default: the shard's files, at most
    :data:`DEFAULT_BATCH`) that the exported pipeline reads for shard ``shard_id`` of
    ``num_shards``, unshuffled, into the preview ``engine``. Rendered with the returned preset,
    draw 0 is that batch (bit for bit at original size) when nothing was skipped; a file the
    preview cannot load is skipped and returned, never silently replaced by another."""
    root = Path(file_root)
    if not root.is_dir():
        raise ValueError(f"{readable(str(root))!r} is not a folder")
    files = training_files(root)
    unread = unread_images(root)
    classes = class_folders(root)  # none: a flat folder
    if not files:
        hint = f" ({len(unread)} image(s) lie where it does not read: {_named(unread)})" \
            if unread else ""
        if unread and classes:  # images at the top, read as a flat folder but for these
            hint += (f"; its subfolder(s) {_named(classes)} make readers.file read class "
                     "folders only: move them out to read the images as a flat folder")
        raise ValueError(f"{readable(str(root))!r} has no images where the exported pipeline "
                         "reads them: a flat folder of images, or class folders of images"
                         f"{hint}")
    if batch_size is None:
        batch_size = min(len(shard_range(len(files), shard_id, num_shards)), DEFAULT_BATCH)
    if not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch size {batch_size} is not allowed for a preview; expected 1 "
                         f"to {MAX_BATCH}")
    batch = first_batch(root, shard_id, num_shards, batch_size)
    skipped = list(engine.set_images(ReaderFiles(root, tuple(batch.files)), max_side=max_side))
    labels = list(batch.labels) if not skipped else _loaded_labels(batch, engine.names)
    read = {f.split("/", 1)[0] for f in files}
    return FolderPreview(shard_preset(preset, shard_id), batch, labels, skipped, unread,
                         classes, [c for c in classes if c not in read])


def unread_images(file_root: str | Path) -> list[str]:
    """Images of a folder of class folders that the exported pipeline never reads (none in a
    flat folder, which it reads whole): see :class:`FolderPreview.unread`."""
    if flat_folder_files(file_root) is not None:
        return []
    scan = scan_folder(file_root)
    return scan.top_level + [f"{name}/" for name in scan.nested]


def _loaded_labels(batch: ShardBatch, names: Sequence[str]) -> list[int]:
    """The labels of the loaded images, found by their shown names (the engine keeps the
    batch's order but not which files it skipped)."""
    label_of: dict[str, int] = {}
    for rel, label in zip(batch.files, batch.labels, strict=True):
        if label_of.setdefault(readable(rel), label) != label:
            raise ValueError(f"two files of the batch in different class folders are shown as "
                             f"{readable(rel)!r}; rename one to preview this batch")
    return [label_of[name] for name in names]


def _named(items: Sequence[str]) -> str:
    shown = ", ".join(readable(i) for i in items[:MAX_NAMED])
    return shown + (f" and {len(items) - MAX_NAMED} more" if len(items) > MAX_NAMED else "")
