"""Contract over the whole catalog: a declared neutral value is an identity.

The gallery's first column, the "no effect at ..." hint and every range centred on a neutral value
trust it. So, for each parameter that declares one, the operator at that value (every other
parameter at its default) must give back the decoded image byte for byte, on real sample JPEGs
and on odd-sized images. An operator that has no identity (a Laplacian, shot noise) declares no
neutral, and its slider must not start on a value that wipes the image out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from dali_gallery.pipelines.catalog import CATALOG, OpSpec
from dali_gallery.pipelines.device import gpu_count
from dali_gallery.pipelines.engine import PreviewEngine
from tests.support import SAMPLES, one_step

NEUTRALS = [(name, p.name) for name, spec in CATALOG.items() for p in spec.params
            if p.neutral is not None]
SEVERAL = [name for name, spec in CATALOG.items()
           if sum(p.neutral is not None for p in spec.params) > 1]
NO_NEUTRAL = [name for name, spec in CATALOG.items() if spec.magnitude is not None
              and spec.param(spec.magnitude).neutral is None
              and spec.param(spec.magnitude).kind in ("float", "int")]
BINNED = [name for name, spec in CATALOG.items()
          if name.startswith("auto_aug.") and spec.magnitude == "magnitude_bin"]


def _images(engine: PreviewEngine) -> None:
    """The six sample JPEGs (two of them of odd height) plus odd-sized cuts of them."""
    assert engine.set_images(SAMPLES) == []
    decoded = engine.images
    assert any(a.shape[0] % 2 for a in decoded), "the samples should hold an odd-sized image"
    odd = [decoded[0][:101, :77], decoded[1][5:132, 3:200], decoded[4][200:201, 17:20]]
    engine.set_arrays(decoded + [np.ascontiguousarray(a) for a in odd],
                      engine.names + ["101x77", "127x197", "1x3"])


@pytest.fixture(scope="module")
def engine():
    eng = PreviewEngine("cpu", num_threads=2)
    _images(eng)
    yield eng
    eng.close()


def _neutral_params(spec: OpSpec, only: str | None = None) -> dict[str, Any]:
    return {p.name: p.neutral for p in spec.params
            if p.neutral is not None and (only is None or p.name == only)}


def assert_identity(engine: PreviewEngine, name: str, params: dict[str, Any]) -> None:
    render = engine.render(one_step(name, **params))
    for img, out, src in zip(engine.names, render.images, engine.images, strict=True):
        what = f"{name} at {params} on {img}"
        assert out.shape == src.shape, f"{what}: shape {out.shape} != {src.shape}"
        differ = np.count_nonzero(out != src)
        assert differ == 0, (f"{what}: {differ} values differ (largest by "
                             f"{np.abs(out.astype(int) - src).max()}), so it is no neutral")


@pytest.mark.parametrize(("name", "param"), NEUTRALS)
def test_declared_neutral_returns_the_decoded_image(engine, name, param):
    spec = CATALOG[name]
    if not spec.cpu:
        pytest.skip("GPU-only: checked by the gpu twin below")
    assert_identity(engine, name, _neutral_params(spec, param))


@pytest.mark.parametrize("name", SEVERAL)
def test_all_neutrals_together_return_the_decoded_image(engine, name):
    spec = CATALOG[name]
    if not spec.cpu:
        pytest.skip("GPU-only: checked by the gpu twin below")
    assert_identity(engine, name, _neutral_params(spec))


def test_operators_without_an_identity_declare_no_neutral():
    # each of these has no value that gives the input back (DALI 2.4, CPU): a declared neutral
    # would make the gallery's first column and the "no effect at" hint lie
    assert CATALOG["laplacian"].param("scale").neutral is None  # scale 0 is black
    assert CATALOG["noise.shot"].param("factor").neutral is None  # factor 0 is black on the CPU
    assert CATALOG["noise.shot"].param("factor").check(0) is not None
    assert CATALOG["grid_mask"].param("angle").neutral is None  # the grid masks at any angle
    assert CATALOG["water"].param("ampl_x").neutral is None  # ampl_y still ripples
    assert CATALOG["grid_mask"].param("ratio").neutral == 0.0  # DALI's masked share


@pytest.mark.parametrize("name", NO_NEUTRAL)
def test_slider_start_of_an_operator_without_neutral_keeps_the_image(engine, name):
    """Where there is no neutral, the gallery sweeps from the slider's low end: that column must
    still show the picture, not a blank."""
    spec = CATALOG[name]
    if not spec.cpu:
        pytest.skip("GPU-only: checked by the gpu twin below")
    p = spec.param(spec.magnitude)
    start = p.slider[0]
    if p.odd and int(start) % 2 == 0:
        start += 1
    render = engine.render(one_step(name, **{p.name: p.coerce(start)}), images=range(6))
    for img, out in zip(engine.names, render.images, strict=False):
        assert out.std() > 4, f"{name} at {p.name}={start} on {img}: the image is wiped out"


@pytest.mark.parametrize("name", BINNED)
def test_auto_aug_magnitude_grows_with_the_bin(engine, name):
    """Bin 0 is the weakest (the identity) and each higher bin moves further from the input."""
    fixed = {"random_sign": False} if "random_sign" in CATALOG[name].defaults() else {}
    distances = []
    for b in (0, 10, 20, 30):
        render = engine.render(one_step(name, magnitude_bin=b, **fixed), images=range(6))
        distances.append(float(np.mean([np.abs(o.astype(int) - s).mean() for o, s in
                                        zip(render.images, engine.images, strict=False)])))
    assert distances[0] == 0, f"{name}: bin 0 changes the image"
    assert distances == sorted(distances) and len(set(distances)) == 4, (
        f"{name}: distance from the input per bin 0/10/20/30 = {distances}")


# ---- the GPU twin: the same contract on the GPU operators (run with ``pytest -m gpu``) ----------

@pytest.fixture(scope="module")
def gpu_engine():
    eng = PreviewEngine("gpu", num_threads=4)
    _images(eng)
    yield eng
    eng.close()


@pytest.mark.parametrize(("name", "param"), NEUTRALS)
@pytest.mark.gpu
@pytest.mark.skipif(gpu_count() == 0, reason="needs a GPU that DALI can see")
def test_declared_neutral_returns_the_decoded_image_on_gpu(gpu_engine, name, param):
    spec = CATALOG[name]
    if "gpu" not in spec.devices:
        pytest.skip("CPU-only operator")
    assert_identity(gpu_engine, name, _neutral_params(spec, param))
