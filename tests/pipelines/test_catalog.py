"""Contract test over every catalog entry: declarations agree with DALI's own schema, and
every operator renders, alone, through the real preview engine."""

from __future__ import annotations

import math

import numpy as np
import pytest
from nvidia.dali import backend

from dali_gallery.pipelines.catalog import CATALOG, CATEGORIES
from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.preset import PresetError, load
from tests.support import CPU_OPS, GPU_ONLY_OPS, one_step, preset_dict, random_value

ALL = list(CATALOG)


def test_catalog_covers_dali_image_operators():
    required = {
        "rotate", "warp_affine", "flip", "resize", "crop", "random_resized_crop", "erase",
        "grid_mask", "water", "sphere", "jitter", "brightness", "contrast",
        "brightness_contrast", "hue", "saturation", "hsv", "color_twist", "equalize", "clahe",
        "gaussian_blur", "laplacian", "filter", "noise.gaussian", "noise.salt_and_pepper",
        "noise.shot", "jpeg_compression_distortion", "experimental.warp_perspective",
        "experimental.median_blur", "auto_aug.shear_x", "auto_aug.translate_y",
        "auto_aug.posterize", "auto_aug.solarize", "auto_aug.invert", "auto_aug.auto_contrast",
        "auto_aug.sharpness", "rand_augment", "trivial_augment", "auto_augment",
    }
    assert required <= set(CATALOG)
    assert len(CATALOG) >= 40
    assert {op.category for op in CATALOG.values()} == set(CATEGORIES)


@pytest.mark.parametrize("name", ALL)
def test_declaration_is_complete_and_consistent(name):
    spec = CATALOG[name]
    assert spec.doc and "\n" not in spec.doc and len(spec.doc) <= 100
    assert spec.devices <= {"cpu", "gpu"} and spec.devices
    if "cpu" not in spec.devices:
        assert spec.gpu_reason, "a GPU-only operator must say why"
    for p in spec.params:
        assert p.doc, p.name
        assert p.check(p.default) is None, f"{p.name} default {p.default!r}"
        if p.kind in ("float", "int"):
            lo, hi = p.bounds
            assert lo < hi
            s_lo, s_hi = p.slider
            assert lo <= s_lo < s_hi <= hi, f"{p.name}: slider outside bounds"
            assert p.step and p.step > 0
            for v in (p.neutral, *(p.random_default or ())):
                if v is not None:
                    assert lo <= v <= hi, f"{p.name}: {v} outside bounds"
            assert not math.isinf(lo) and not math.isinf(hi)
        if p.kind == "enum":
            assert p.default in p.choices
            assert not p.codes or set(p.codes) == set(p.choices)
        if p.odd:
            assert p.default % 2 == 1 and p.step == 2
    if spec.magnitude:
        assert spec.param(spec.magnitude).kind in ("float", "int")


@pytest.mark.parametrize("name", [n for n in ALL if CATALOG[n].schema])
def test_declaration_matches_dali_schema(name):
    """Devices and the run-time flag of each parameter come from DALI 2.4's schema."""
    spec = CATALOG[name]
    schema = backend.GetSchema(spec.schema)
    backends = set(schema.GetSupportedBackends())
    assert ("cpu" in backends) == ("cpu" in spec.devices), backends
    assert ("gpu" in backends) == ("gpu" in spec.devices), backends
    assert spec.seeded == schema.HasRandomSeedArg() or not spec.seeded
    for p in spec.params:
        if p.dali_arg is None:
            continue
        assert schema.HasArgument(p.dali_arg), f"{p.dali_arg} is not an argument of {name}"
        if p.kind == "enum":  # enums are structural here (DALI would need INTERP_TYPE casts)
            assert not p.runtime
            continue
        assert p.runtime == schema.IsTensorArgument(p.dali_arg), (
            f"{name}.{p.name}: runtime={p.runtime} but DALI says "
            f"tensor argument={schema.IsTensorArgument(p.dali_arg)}"
        )


@pytest.fixture(scope="module")
def engine():
    eng = PreviewEngine("cpu", num_threads=2)
    eng.set_arrays([_test_image(96, 128, 0), _test_image(80, 80, 1)])
    yield eng
    eng.close()


def _test_image(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    img = np.stack([x * 255 // w, y * 255 // h, (x + y) % 256], axis=-1).astype(np.uint8)
    img[h // 3: h // 2, w // 3: w // 2] = rng.integers(0, 255, 3)
    return img


@pytest.mark.parametrize("name", CPU_OPS)
def test_every_cpu_operator_renders_with_defaults_and_random_draws(engine, name):
    spec = CATALOG[name]
    render = engine.render(one_step(name), draws=2)
    assert len(render.images) == 4
    for img in render.images:
        assert img.dtype == np.uint8 and img.ndim == 3 and img.shape[2] == 3
    rnd = random_value(spec)
    render = engine.render(one_step(name, probability=0.5, **rnd), draws=4)
    fired = [r.fired[0] for r in render.records]
    assert set(fired) <= {True, False}
    for p, _ in rnd.items():
        drawn = [r.values[0][p] for r in render.records]
        lo, hi = rnd[p]["uniform"]
        assert all(lo <= v <= hi for v in drawn)
        assert len(set(drawn)) > 1, "a uniform parameter must differ between draws"


@pytest.mark.parametrize("name", [n for n in CPU_OPS if any(p.runtime and p.kind in
                                  ("float", "int") for p in CATALOG[n].params)])
def test_runtime_parameter_change_needs_no_rebuild(engine, name):
    spec = CATALOG[name]
    p = next(p for p in spec.params if p.runtime and p.kind in ("float", "int"))
    a, b = p.slider
    v1 = p.default
    v2 = b if p.default != b else a
    if p.odd:
        v2 = v2 if int(v2) % 2 else v2 - 1
    engine.render(one_step(name, **{p.name: v1}))
    builds = engine.builds
    render = engine.render(one_step(name, **{p.name: v2}))
    assert engine.builds == builds, f"{name}.{p.name} change rebuilt the pipeline"
    assert not render.built


@pytest.mark.parametrize("name", GPU_ONLY_OPS)
def test_gpu_only_operator_is_reported_unavailable_on_cpu(engine, name):
    with pytest.raises(StepError) as err:
        engine.render(one_step(name))
    assert err.value.step == 0 and err.value.op == name
    assert "GPU" in str(err.value)


# ---- bounds are what DALI accepts ----------------------------------------------------------------

BOUNDED = [(name, p.name) for name in CPU_OPS for p in CATALOG[name].params
           if p.kind in ("float", "int") and p.bounds is not None]


@pytest.mark.parametrize(("name", "param"), BOUNDED)
def test_every_bound_is_a_value_dali_accepts(engine, name, param):
    """A value the declaration allows either renders or is refused when the preset is loaded,
    never inside DALI at render time (reported: laplacian window_size 1 passed validation)."""
    p = CATALOG[name].param(param)
    for value in p.bounds:
        if p.odd:
            assert int(value) % 2 == 1, f"{name}.{param}: bound {value} is not odd"
        try:
            preset = load(preset_dict([{"op": name, "params": {param: p.coerce(value)}}]))
        except PresetError:
            continue  # refused by the loader, with the rule it broke (e.g. area_min <= area_max)
        render = engine.render(preset)
        assert all(img.dtype == np.uint8 and img.ndim == 3 for img in render.images)


@pytest.mark.parametrize(("value", "why"), [(1, "allowed range is [3, 23]"),
                                            (25, "allowed range is [3, 23]"), (4, "must be odd")])
def test_laplacian_window_dali_rejects_is_refused_by_the_preset_loader(value, why):
    # DALI: "Window size must be odd and between 3 and 23"; 1 used to reach DALI and fail there
    with pytest.raises(PresetError) as err:
        load(preset_dict([{"op": "laplacian", "params": {"window_size": value}}]))
    text = str(err.value)
    assert "laplacian" in text and "window_size" in text and str(value) in text and why in text
