"""GPU tests run on the lent H100/H200 (``pytest -m gpu``); elsewhere they are skipped."""

from __future__ import annotations

import pytest

from dali_gallery.pipelines.device import gpu_count


def pytest_collection_modifyitems(config, items):
    if gpu_count() > 0:
        return
    skip = pytest.mark.skip(reason="needs a GPU that DALI can see")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
