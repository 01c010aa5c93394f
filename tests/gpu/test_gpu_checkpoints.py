"""On the GPU too, DALI checkpoints exactly the operators the catalog declares ``checkpoints``
(the preview restores their RNG state; the others are rebuilt before each render)."""

from __future__ import annotations

import pytest

from dali_gallery.pipelines.catalog import CATALOG
from tests.support import check_checkpoints_declaration

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("op", [name for name, spec in CATALOG.items() if "gpu" in spec.devices])
def test_checkpoints_flag_matches_dali_on_the_gpu(op, tmp_path):
    check_checkpoints_declaration(op, "gpu", tmp_path)
