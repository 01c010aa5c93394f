"""Custom Python operators on the GPU: a GPU-only (CuPy) operator is probed with CuPy at
registration and previewed, and a function that raises or returns what is not an image fails on
its own step there too, with its message. DALI 2.4 crashes the process (SIGSEGV) when a GPU
Python function raises inside its CuPy stream; the generated ``_checked`` wrapper hands the
error to DALI outside the stream instead."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.params import Param
from dali_gallery.pipelines.preset import load
from tests.support import preset_dict

pytestmark = pytest.mark.gpu
LEVEL = (Param("level", "float", 0.5, "A value", bounds=(0, 1), slider=(0, 1), step=0.01,
               runtime=True),)


def _cupy_invert(image, level):
    import cupy

    return cupy.subtract(255, image, dtype=cupy.int16).astype(cupy.uint8)


def _grey_when_strong(image, level):
    return image[:, :, 0].copy() if float(level) > 0.8 else image


def _raises_when_strong(image, level):
    if float(level) > 0.8:
        raise ValueError(f"level {float(level):.1f} is too strong")
    return image


@pytest.fixture
def catalog() -> Catalog:
    return Catalog(list(CATALOG.values()))


def test_a_gpu_only_operator_is_probed_with_cupy_and_previewed(catalog):
    custom_op("custom.test_cupy_invert", "Inverts with CuPy.", params=LEVEL, devices=("gpu",),
              catalog=catalog)(_cupy_invert)
    code = catalog["custom.test_cupy_invert"].custom_code
    assert code is not None and code.cost is not None  # measured with CuPy arrays
    eng = PreviewEngine("gpu", num_threads=2, catalog=catalog)
    images = [np.arange(30 * 20 * 3, dtype=np.uint8).reshape(30, 20, 3), np.full((9, 7, 3), 3,
                                                                                 np.uint8)]
    eng.set_arrays(images)
    render = eng.render(load(preset_dict([{"op": "custom.test_cupy_invert", "params": {}}]),
                             catalog))
    for got, image in zip(render.images, images, strict=True):
        np.testing.assert_array_equal(got, 255 - image)
    eng.close()


def test_a_bad_result_on_the_gpu_names_its_step(catalog):
    custom_op("custom.test_sometimes", "Grey when strong.", params=LEVEL,
              catalog=catalog)(_grey_when_strong)
    eng = PreviewEngine("gpu", num_threads=2, catalog=catalog)
    eng.set_arrays([np.zeros((16, 24, 3), np.uint8)] * 2)
    preset = load(preset_dict([{"op": "custom.test_sometimes", "params": {"level": 0.9}},
                               {"op": "flip", "params": {}}]), catalog)
    with pytest.raises(StepError) as err:
        eng.render(preset)
    assert (err.value.step, err.value.op) == (0, "custom.test_sometimes")
    assert "custom.test_sometimes: _grey_when_strong returned uint8 (16, 24)" in str(err.value)
    eng.close()


def test_an_exception_in_a_gpu_function_is_a_step_error_not_a_crash(catalog):
    """Plain DALI 2.4 segfaults here: the kernel died with the preview."""
    custom_op("custom.test_raises", "Raises when strong.", params=LEVEL,
              catalog=catalog)(_raises_when_strong)
    eng = PreviewEngine("gpu", num_threads=2, catalog=catalog)
    eng.set_arrays([np.full((16, 24, 3), 7, np.uint8)] * 2)
    preset = load(preset_dict([{"op": "custom.test_raises", "params": {"level": 0.9}}]),
                  catalog)
    with pytest.raises(StepError) as err:
        eng.render(preset)
    assert (err.value.step, err.value.op) == (0, "custom.test_raises")
    assert "level 0.9 is too strong" in str(err.value)
    preset.steps[0].params["level"] = 0.2
    render = eng.render(preset)
    np.testing.assert_array_equal(render.images[0], eng.images[0])
    eng.close()


def test_warming_cupy_runs_each_function_once_and_names_a_failure(caplog):
    """The gallery warms CuPy for its custom rows in a background thread (its import and the
    kernels' compilation leave the first render that runs them): each function is called once
    per process on a CuPy image, and one that fails is logged with its operator."""
    from dali_gallery.pipelines.custom_probe import warm_gpu

    seen = []

    def fine(image, level):
        seen.append((type(image).__module__.split(".")[0], float(level)))
        return image

    def broken(image, level):
        raise RuntimeError("no kernel for this")

    with caplog.at_level(logging.WARNING):
        warm_gpu([("custom.test_fine", fine, LEVEL), ("custom.test_broken", broken, LEVEL)])
        warm_gpu([("custom.test_fine", fine, LEVEL)])
    assert seen == [("cupy", 0.5)]
    assert "custom.test_broken" in caplog.text and "no kernel for this" in caplog.text


def test_a_gpu_engine_warms_its_custom_rows():
    eng = PreviewEngine("gpu", num_threads=2)
    try:
        assert eng.warm_custom(["rotate", "custom.vignette"]) == ["custom.vignette"]
    finally:
        eng.close()


def test_cupy_is_warmed_ahead_on_a_gpu_host(monkeypatch):
    """``prestart``'s CuPy warm-up imports CuPy and cupyx (no CUDA call: DALI makes the
    context)."""
    import sys

    from dali_gallery.pipelines import cupy_warm

    monkeypatch.setattr(cupy_warm, "_STATE", dict(cupy_warm._STATE_START))
    assert cupy_warm.start("gpu") is True
    found = cupy_warm.report(120)
    assert found is not None and found["s"] >= 0 and "cupyx" in sys.modules, found
