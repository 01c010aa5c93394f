"""Shards: which files DALI's readers.file gives each shard (checked against the real reader)
and which seed each shard draws with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from nvidia.dali import fn, pipeline_def

from dali_gallery.pipelines.shards import (
    first_batch,
    first_indices,
    flat_folder_files,
    shard_files,
    shard_range,
    shard_seed,
)


def _reader_samples(root: Path, files: list[str] | None, shard_id: int, num_shards: int,
                    batch: int) -> tuple[list[str], list[int]]:
    """The first unshuffled batch of DALI's own readers.file, set as the exported pipeline
    sets it (``pad_last_batch``): each file holds its own name, so the bytes say which file
    was read, and the labels are DALI's."""

    @pipeline_def(batch_size=batch, num_threads=1, device_id=None, seed=1)
    def reader():
        data, labels = fn.readers.file(file_root=str(root), files=files, shard_id=shard_id,
                                       num_shards=num_shards, random_shuffle=False,
                                       pad_last_batch=True)
        return data, labels

    pipe = reader()
    pipe.build()
    data, labels = pipe.run()
    names = [np.array(data[i]).tobytes().decode() for i in range(batch)]
    out = names, np.array(labels.as_array()).reshape(-1).tolist()
    del pipe
    return out


def _named_files(folder: Path, names: list[str]) -> None:
    for name in names:
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(name.encode())


@pytest.mark.parametrize("n_files", [1, 2, 5, 7, 13, 16])
def test_shard_files_and_first_files_match_the_real_reader(tmp_path, n_files):
    files = [f"f{i:02d}.jpg" for i in range(n_files)]
    _named_files(tmp_path, files)
    for num_shards in range(1, min(n_files, 5) + 1):
        for shard_id in range(num_shards):
            count = n_files + 3  # past the shard's end and around the list
            names, labels = _reader_samples(tmp_path, files, shard_id, num_shards, count)
            own = shard_files(files, shard_id, num_shards)
            assert names[: len(own)] == own, (n_files, num_shards, shard_id)
            assert labels == first_indices(n_files, shard_id, num_shards, count)
            assert [files[i] for i in labels] == names
    # every file belongs to exactly one shard, in order
    for num_shards in range(1, min(n_files, 5) + 1):
        joined = [f for s in range(num_shards) for f in shard_files(files, s, num_shards)]
        assert joined == files


def test_first_batch_of_class_folders_matches_the_real_reader(tmp_path):
    """Files and labels of a class-folder dataset, with an empty class folder (DALI still
    counts it) and names that sort differently as bytes and as case-folded text."""
    names = ["B/x.jpg", "B/a.JPG", "a/2.jpg", "a/10.jpg", "c/z.png", "c/y.jpeg", "c/Y.jpg"]
    _named_files(tmp_path, names)
    (tmp_path / "b_empty").mkdir()
    for num_shards in (1, 2, 3):
        for shard_id in range(num_shards):
            expected_names, expected_labels = _reader_samples(tmp_path, None, shard_id,
                                                              num_shards, 9)
            batch = first_batch(tmp_path, shard_id, num_shards, 9)
            assert batch.files == expected_names
            assert batch.labels == expected_labels


def test_first_batch_of_a_flat_folder_matches_the_exported_listing(tmp_path):
    names = ["b.jpg", "a.png", "C.jpeg", "notes.txt", "d.webp"]
    _named_files(tmp_path, names)
    files = flat_folder_files(tmp_path)
    assert files == ["C.jpeg", "a.png", "b.jpg", "d.webp"]
    for shard_id in (0, 1):
        expected = _reader_samples(tmp_path, files, shard_id, 2, 3)
        batch = first_batch(tmp_path, shard_id, 2, 3)
        assert (batch.files, batch.labels) == expected


def test_more_shards_than_files_is_refused_like_dali(tmp_path):
    with pytest.raises(ValueError, match="3 file.*4 shards"):
        shard_range(3, 0, 4)
    with pytest.raises(ValueError, match="shard_id 2 is not allowed with num_shards 2"):
        shard_files(["a", "b", "c"], 2, 2)
    with pytest.raises(ValueError, match="num_shards 0"):
        shard_range(3, 0, 0)


def test_shard_zero_keeps_the_seed_and_shards_draw_distinct_seeds():
    for seed in (0, 1, 42, 2**31 - 1):
        assert shard_seed(seed, 0) == seed
        seeds = [shard_seed(seed, s) for s in range(256)]
        assert len(set(seeds)) == 256
        assert all(0 <= x < 2**31 for x in seeds)
    assert shard_seed(42, 1) != shard_seed(43, 0)  # not simply seed + rank


@pytest.mark.parametrize(("seed", "shard", "match"), [
    (-1, 0, "seed -1"), (2**31, 0, "seed 2147483648"), (5, -1, "shard_id -1")])
def test_shard_seed_refuses_values_outside_dali_range(seed, shard, match):
    with pytest.raises(ValueError, match=match):
        shard_seed(seed, shard)
