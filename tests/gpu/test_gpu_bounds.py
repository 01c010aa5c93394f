"""Every hard bound of every operator is a value DALI's GPU kernels accept: the GPU twin of
tests/pipelines/test_catalog.py's CPU check. The CPU check alone let gaussian_blur's sigma
reach 50, which DALI's GPU kernel refuses (its window times the channels must stay under
512 taps)."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import PresetError, load
from tests.support import preset_dict

pytestmark = pytest.mark.gpu

BOUNDED = [(name, p.name) for name, spec in CATALOG.items() if "gpu" in spec.devices
           and not spec.custom for p in spec.params
           if p.kind in ("float", "int") and p.bounds is not None]


@pytest.fixture(scope="module")
def engine():
    eng = PreviewEngine("gpu", num_threads=2)
    rng = np.random.default_rng(5)
    eng.set_arrays([rng.integers(0, 256, (61, 83, 3), dtype=np.uint8),
                    rng.integers(0, 256, (96, 40, 3), dtype=np.uint8)])
    yield eng
    eng.close()


@pytest.mark.parametrize(("name", "param"), BOUNDED)
def test_every_bound_is_a_value_dalis_gpu_accepts(engine, name, param):
    p = CATALOG[name].param(param)
    for value in p.bounds:
        try:
            preset = load(preset_dict([{"op": name, "params": {param: p.coerce(value)}}]))
        except PresetError:
            continue  # refused by the loader, with the rule it broke
        render = engine.render(preset, draws=2)
        assert render.device == "gpu"
        assert all(img.dtype == np.uint8 and img.ndim == 3 for img in render.images)
