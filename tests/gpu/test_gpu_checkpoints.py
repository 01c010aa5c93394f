"""On the GPU too, DALI checkpoints exactly the operators the catalog declares ``checkpoints``
(the preview restores their RNG state; the others are rebuilt before each render)."""

from __future__ import annotations

import pytest

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.codegen import preview_module
from dali_gallery.pipelines.preset import Preset, new_step
from dali_gallery.pipelines.preview_pipeline import ChainModules, build_pipeline

pytestmark = pytest.mark.gpu
GPU_OPS = [name for name, spec in CATALOG.items() if "gpu" in spec.devices]


@pytest.mark.parametrize("op", GPU_OPS)
def test_checkpoints_flag_matches_dali_on_the_gpu(op, tmp_path):
    preset = Preset([new_step(op)], seed=3)
    code, chain = preview_module(preset)
    modules = ChainModules(tmp_path)
    module, _ = modules.load(code)
    pipe = build_pipeline(module, preset.seed, 1, "gpu", 1, False, True, chain.conditionals)
    try:
        if CATALOG[op].checkpoints:
            pipe.build()
            assert pipe.checkpoint()
        else:
            with pytest.raises(RuntimeError, match="[Cc]heckpoint"):
                pipe.build()
    finally:
        del pipe
        modules.clear()
