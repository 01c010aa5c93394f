"""Shared fixtures: the bad/unusual image corpus, built once per test session in a tmp folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from tests.corpus import CorpusEntry, build_corpus, large_jpeg


@pytest.fixture(scope="session")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CorpusEntry]:
    """Every corpus entry by key (without the 12000x9000 image: see ``large_image``)."""
    return build_corpus(tmp_path_factory.mktemp("corpus"), large=False)


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    """A real photo (the bundled cat), decoded by DALI: not made for the purpose."""
    from dali_gallery.pipelines.images import collect as collect_files
    from dali_gallery.pipelines.images import decode
    from tests.support import SAMPLES

    encoded, problems = collect_files([SAMPLES / "cat.jpg"])
    arrays, _, bad = decode(encoded, num_threads=2)
    assert not problems and not bad
    return arrays[0]


@pytest.fixture(scope="session")
def large_image(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 12000x9000 JPEG (red top-left, blue bottom-right quarter), made on first use."""
    path = tmp_path_factory.mktemp("large") / "huge.jpg"
    path.write_bytes(large_jpeg())
    return path


_CACHE = [""]


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session's pipeline cache goes with it (a full run leaves ~70 MB in ~1,000 files;
    runs used to pile them up in the temporary folder). A kernel a test left running may
    still write there as it stops: what cannot be removed now stays, as any temporary file."""
    if _CACHE[0]:
        shutil.rmtree(_CACHE[0], ignore_errors=True)


def pytest_configure(config: pytest.Config) -> None:
    """Built pipelines are cached in a folder of this test session, never the user's own (the
    servers and kernels the tests start inherit it)."""
    _CACHE[0] = tempfile.mkdtemp(prefix="dali-gallery-test-cache-")
    os.environ["DALI_GALLERY_CACHE"] = _CACHE[0]
    # Builder() autosaves to the user's own folder by default: not from tests (the autosave
    # tests turn the default back on in a folder of their own)
    os.environ["DALI_GALLERY_AUTOSAVE"] = "off"


@pytest.fixture(autouse=True)
def _no_kept_pipelines() -> None:
    """Every test starts with no pipeline kept built by another test's engines
    (pipelines.kept_pipelines): engines count what they build and load."""
    from dali_gallery.pipelines.kept_pipelines import KEPT

    KEPT.clear()
