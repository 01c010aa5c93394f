"""The on-disk pipeline cache: a new engine loads what an earlier one traced, with identical
output; damaged entries are rebuilt; custom operators are never cached; unsafe folders are not
used; and pipelines are built with DALI conditionals only when the chain needs them."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import numpy as np
import pytest

from dali_gallery.pipelines.codegen import chain_source
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.pipeline_cache import CACHE_ENV, PipelineCache, default_folder
from dali_gallery.pipelines.preset import load
from tests.support import cpu_engine, preset_dict, sample_arrays

CHAIN = [
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "auto_aug.shear_x", "params": {"magnitude_bin": 20}},
    {"op": "noise.gaussian", "params": {"stddev": 12.0}},
]


@pytest.fixture(scope="module")
def arrays():
    return sample_arrays(3)


engine = cpu_engine


def same(a, b) -> None:
    assert len(a.images) == len(b.images)
    for x, y in zip(a.images, b.images, strict=True):
        np.testing.assert_array_equal(x, y)
    assert [r.to_dict() for r in a.records] == [r.to_dict() for r in b.records]


def test_a_new_engine_loads_the_traced_pipeline_with_identical_output(arrays, tmp_path):
    cache = PipelineCache(tmp_path)
    preset = load(preset_dict(CHAIN, seed=9))
    first = engine(arrays, cache)
    traced = first.render(preset, draws=3)
    again = first.render(preset, draws=3)  # same engine: checkpoint restored, same draw
    assert (first.builds, first.cache_hits) == (1, 0)
    assert len(cache.entries()) == 1
    second = engine(arrays, cache)
    loaded = second.render(preset, draws=3)
    assert (second.builds, second.cache_hits) == (1, 1)
    same(traced, again)
    same(traced, loaded)
    # a run-time value change on the loaded pipeline needs no new build
    changed = load(preset_dict([*CHAIN[:2], {"op": "noise.gaussian",
                                             "params": {"stddev": 40.0}}], seed=9))
    other = second.render(changed, draws=3)
    assert second.builds == 1
    assert not np.array_equal(other.images[0], loaded.images[0])
    first.close()
    second.close()


def test_the_key_covers_what_shapes_the_graph(tmp_path):
    cache = PipelineCache(tmp_path)
    base = cache.key("code", 1, 8, "cpu", False, True)
    assert base == cache.key("code", 1, 8, "cpu", False, True)
    for parts in [("code2", 1, 8, "cpu", False, True), ("code", 2, 8, "cpu", False, True),
                  ("code", 1, 9, "cpu", False, True), ("code", 1, 8, "gpu", False, True),
                  ("code", 1, 8, "cpu", True, True), ("code", 1, 8, "cpu", False, False)]:
        assert cache.key(*parts) != base


def test_a_damaged_entry_is_rebuilt_and_replaced(arrays, tmp_path, caplog):
    cache = PipelineCache(tmp_path)
    preset = load(preset_dict(CHAIN, seed=4))
    reference = engine(arrays, cache).render(preset, draws=2)
    (entry,) = cache.entries()
    entry.write_bytes(entry.read_bytes()[:5] + b"\x01" + b"garbage" * 20)
    with caplog.at_level(logging.WARNING, logger="dali_gallery.pipelines.engine"):
        eng = engine(arrays, cache)
        again = eng.render(preset, draws=2)
    assert eng.cache_hits == 0
    assert "could not be loaded" in caplog.text
    same(reference, again)
    assert cache.load(entry.stem) is not None  # replaced by a good entry
    entry.write_bytes(b"not a cache entry")
    assert cache.load(entry.stem) is None and not entry.exists()


def test_custom_operators_are_never_cached(arrays, tmp_path):
    cache = PipelineCache(tmp_path)
    eng = engine(arrays, cache)
    eng.render(load(preset_dict([{"op": "custom.vignette", "params": {"strength": 0.8}}])))
    assert cache.entries() == []
    eng.close()


def test_trim_removes_least_recently_used_entries(tmp_path):
    cache = PipelineCache(tmp_path, max_bytes=3100)  # three entries fit, not four
    for k, age in (("a", 300), ("b", 200), ("c", 100)):
        cache.store(k, bytes(1000), True)
        path = tmp_path / f"{k}.dali"
        st = path.stat()
        os.utime(path, (st.st_atime - age, st.st_mtime - age))
    cache.load("a")  # used now: the oldest is "b"
    cache.store("d", bytes(1000), False)
    assert sorted(p.stem for p in cache.entries()) == ["a", "c", "d"]
    assert cache.load("d") == (bytes(1000), False)
    assert not list(tmp_path.glob(".tmp-*"))


def test_folders_others_can_write_to_are_not_used(tmp_path, caplog):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with caplog.at_level(logging.WARNING, logger="dali_gallery.pipelines.pipeline_cache"):
        cache = PipelineCache(shared)
    assert not cache.enabled and "not private" in caplog.text
    cache.store("k", b"blob", True)  # a disabled cache keeps nothing and never fails
    assert cache.load("k") is None and list(shared.iterdir()) == []
    private = PipelineCache(tmp_path / "new" / "cache")
    assert private.enabled
    assert (tmp_path / "new" / "cache").stat().st_mode & 0o077 == 0


def test_the_environment_picks_or_disables_the_folder(monkeypatch, tmp_path):
    monkeypatch.setenv(CACHE_ENV, "off")
    assert default_folder() is None and not PipelineCache.default().enabled
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "c"))
    assert default_folder() == tmp_path / "c"
    monkeypatch.delenv(CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_folder() == tmp_path / "xdg" / "dali-gallery" / "pipelines"


@pytest.mark.parametrize(("steps", "needed"), [
    ([{"op": "rotate"}], False),
    ([{"op": "auto_aug.shear_x"}, {"op": "flip"}], False),
    ([{"op": "rotate", "probability": 0.5}], True),
    ([{"op": "rand_augment"}], True),
    ([{"op": "rotate", "probability": 0.5, "enabled": False}, {"op": "flip"}], False),
])
def test_conditionals_only_when_the_chain_needs_them(steps, needed):
    preset = load(preset_dict(steps))
    assert chain_source(preset, "preview").conditionals is needed
    assert chain_source(preset, "export").conditionals is needed
    assert f"@pipeline_def(enable_conditionals={needed})" in export_code(preset)


def test_default_folder_is_under_the_user_cache(monkeypatch):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_folder() == Path.home() / ".cache" / "dali-gallery" / "pipelines"
