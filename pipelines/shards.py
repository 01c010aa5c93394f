"""What each shard of a multi-GPU training job reads and draws.

The documented recipe runs one process per GPU, each with its own ``shard_id``: DALI's
``readers.file`` gives it its own slice of the files. With one seed for every process, each
shard would also draw exactly the same augmentation parameters in the same order, so a global
batch of N GPUs would hold only 1/N of the variety asked for. :func:`shard_seed` gives each
shard its own seed; shard 0 keeps the preset's, so a single-GPU run is unchanged.

:func:`shard_seed`, :func:`check_shard` and :func:`flat_folder_files` are defined once, here:
the exported module embeds their source (:data:`EMBEDDED`) and the preview calls them, so
training and preview cannot compute a shard's seed or a folder's files differently.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .image_files import IMAGE_EXTENSIONS, byte_key, scan_folder
from .preset import Preset


def shard_seed(seed, shard_id):
    """The seed of shard ``shard_id``'s pipeline: shard 0 keeps ``seed``; shard k adds
    k times an odd stride modulo 2**31, so every shard of a job draws its own
    augmentations (distinct for any number of shards) within DALI's seed range."""
    if not 0 <= seed < 2**31:
        raise ValueError(f"seed {seed} is not allowed; expected [0, 2147483647]")
    if shard_id < 0:
        raise ValueError(f"shard_id {shard_id} is not allowed; expected 0 or more")
    return (seed + shard_id * 1_640_531_527) % 2**31


def check_shard(shard_id, num_shards):
    """ValueError unless 0 <= shard_id < num_shards (what readers.file accepts)."""
    if num_shards < 1:
        raise ValueError(f"num_shards {num_shards} is not allowed; expected 1 or more")
    if not 0 <= shard_id < num_shards:
        raise ValueError(
            f"shard_id {shard_id} is not allowed with num_shards {num_shards}; "
            f"expected 0 to {num_shards - 1}"
        )


def flat_folder_files(file_root):
    """Sorted image files of a folder without class subfolders (readers.file needs
    either subfolders or a file list); None when there are subfolders."""
    entries = sorted(os.scandir(file_root), key=lambda entry: entry.name)
    if any(entry.is_dir() for entry in entries):
        return None
    return [e.name for e in entries if e.name.lower().endswith(IMAGE_EXTENSIONS)]


EMBEDDED = (shard_seed, check_shard, flat_folder_files)
"""Functions the exported module carries verbatim (their source, no type hints)."""


def shard_preset(preset: Preset, shard_id: int) -> Preset:
    """The preset whose preview draws what shard ``shard_id`` draws: its seed is
    :func:`shard_seed` of the preset's (shard 0: the same preset)."""
    return replace(preset, seed=shard_seed(preset.seed, shard_id))


def shard_range(n_files: int, shard_id: int, num_shards: int) -> range:
    """Indices of the files shard ``shard_id`` of ``num_shards`` owns: DALI splits N samples
    as ``[N*s//n, N*(s+1)//n)`` and refuses more shards than samples."""
    check_shard(shard_id, num_shards)
    if n_files < num_shards:
        raise ValueError(f"{n_files} file(s) cannot be split into {num_shards} shards; "
                         "readers.file needs at least one file per shard")
    return range(n_files * shard_id // num_shards, n_files * (shard_id + 1) // num_shards)


def shard_files(files: Sequence[str], shard_id: int, num_shards: int) -> list[str]:
    """The files DALI's ``readers.file`` gives shard ``shard_id`` of ``num_shards`` in an
    epoch, in order (without shuffling)."""
    r = shard_range(len(files), shard_id, num_shards)
    return list(files[r.start:r.stop])


def first_indices(n_files: int, shard_id: int, num_shards: int, count: int) -> list[int]:
    """Indices of the first ``count`` samples the exported pipeline's unshuffled reader
    gives the shard: the shard's files in order and, in a batch larger than the shard, its
    last file again (the reader's ``pad_last_batch=True``, which gives the training
    iterator exact epochs; the iterator drops the padding)."""
    r = shard_range(n_files, shard_id, num_shards)
    return [min(r.start + k, r.stop - 1) for k in range(count)]


def training_files(file_root: str | Path) -> list[str]:
    """The files the exported pipeline reads from ``file_root``, unshuffled, relative to it:
    a flat folder's :func:`flat_folder_files`, else readers.file's own listing of the class
    subfolders (:func:`pipelines.image_files.scan_folder`)."""
    flat = flat_folder_files(file_root)
    return flat if flat is not None else scan_folder(file_root).files


@dataclass(frozen=True)
class ShardBatch:
    """The first batch a shard reads: files relative to the folder, and their labels."""

    files: list[str]
    labels: list[int]


def first_batch(file_root: str | Path, shard_id: int, num_shards: int,
                batch_size: int) -> ShardBatch:
    """What the exported pipeline's first batch holds for a shard, unshuffled: its files
    (:func:`first_indices` of :func:`training_files`) and the labels readers.file gives them
    (the file's index in a flat folder, else its class folder's index among every top-level
    folder sorted by raw bytes, empty ones included, as in DALI)."""
    files = training_files(file_root)
    picked = first_indices(len(files), shard_id, num_shards, batch_size)
    if flat_folder_files(file_root) is not None:
        labels = picked
    else:
        position = {name: i for i, name in enumerate(class_folders(file_root))}
        labels = [position[files[i].split("/", 1)[0]] for i in picked]
    return ShardBatch([files[i] for i in picked], labels)


def class_folders(file_root: str | Path) -> list[str]:
    """Every top-level folder, in the order readers.file numbers them as classes (raw bytes),
    empty and hidden ones included (a Jupyter ``.ipynb_checkpoints`` takes a number too)."""
    with os.scandir(file_root) as it:
        return sorted((e.name for e in it if _is_dir(e)), key=byte_key)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir()  # follows symlinks, as readers.file does
    except OSError:
        return False
