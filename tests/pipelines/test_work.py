"""pipelines.work and the work budget: what a step reads per pixel it writes, checked before
DALI runs so that a wide blur on large images cannot hold a kernel for minutes."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from dali_gallery.pipelines import budget as budget_mod
from dali_gallery.pipelines.budget import GPU_WORK_FACTOR, RENDER_WORK, Budget
from dali_gallery.pipelines.canvas import Span
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.distribution import batch_size
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import Choice, Group, Preset, Uniform, new_step
from dali_gallery.pipelines.render_budget import WorkError, check_plan, plan_render
from dali_gallery.pipelines.work import ONE_PASS, PASS_TAPS, Taps, gaussian_taps

PHOTO = (3000, 4000)  # a 12 MP camera image


@pytest.fixture
def engine():
    e = PreviewEngine("cpu", num_threads=2)
    yield e
    e.close()


# ---- the catalog contract ----------------------------------------------------------------------


def _grid(p) -> list[float]:
    lo, hi = p.bounds
    values = np.linspace(lo, hi, 41)
    if p.kind == "int":
        values = sorted({int(round(v)) | (1 if p.odd else 0) for v in values})
        values = [v for v in values if lo <= v <= hi]
    return [float(v) for v in values]


@pytest.mark.parametrize("op", list(CATALOG))
def test_every_work_declaration_names_numeric_parameters_and_never_falls(op: str) -> None:
    """The plan counts a drawn value with its largest: that bounds the work only if the taps
    never fall as a parameter grows (checked over each parameter's hard bounds)."""
    spec = CATALOG[op]
    work = spec.work
    names = {p.name for p in spec.params}
    assert set(work.params) <= names, op
    base = {p.name: Span((float(spec.param(p.name).bounds[1]),)) for p in
            (spec.param(n) for n in work.params)}
    assert work.taps(base) >= 1.0
    for name in work.params:
        p = spec.param(name)
        assert p.kind in ("int", "float") and p.bounds is not None, (op, name)
        taps = [work.taps({**base, name: Span((v,))}) for v in _grid(p)]
        assert taps == sorted(taps) and taps[0] >= 1.0, (op, name, taps)
    if work is ONE_PASS:
        assert work.taps({}) == PASS_TAPS


def test_the_wide_filters_declare_their_window() -> None:
    """The operators whose window grows with a parameter are the ones declared so."""
    declared = {op for op, spec in CATALOG.items() if isinstance(spec.work, Taps)}
    assert declared == {"gaussian_blur", "laplacian", "experimental.median_blur",
                        "experimental.dilate", "experimental.erode", "rand_augment",
                        "auto_augment"}
    # rand_augment applies n operations one after another: n passes
    assert CATALOG["rand_augment"].work.taps({"n": Span((6.0,))}) == 6 * PASS_TAPS
    # auto_augment: a pass per stage of the longest sub-policy, read from DALI's policies
    from nvidia.dali.auto_aug import auto_augment

    stages = max(len(sub) for name in CATALOG["auto_augment"].param("policy_name").choices
                 for sub in getattr(auto_augment, f"get_{name}_policy")().sub_policies)
    assert stages == 2
    assert CATALOG["auto_augment"].work.taps({}) == stages * PASS_TAPS
    # measured: filter's 7x7 motion blur costs what one pass of a colour step does
    assert CATALOG["filter"].work is ONE_PASS


@pytest.mark.parametrize("sigma", [0.3, 1.0, 1.5, 2.2, 4.0])
def test_the_gaussian_window_is_dalis(engine: PreviewEngine, sigma: float) -> None:
    """Against the truth: blurring one bright pixel (float output, so no tail rounds to 0)
    lights exactly DALI's window along each axis, the taps per pass the declaration counts."""
    from nvidia.dali import fn, pipeline_def, types

    image = np.zeros((61, 61, 1), np.float32)
    image[30, 30, 0] = 1.0

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: [image], batch=True, layout="HWC")
        return fn.gaussian_blur(x, sigma=sigma, dtype=types.FLOAT)

    p = pipe()
    p.build()
    (out,) = p.run()
    blurred = np.asarray(out[0])[..., 0]
    row, column = blurred[30] > 0, blurred[:, 30] > 0
    assert row.sum() == column.sum() == gaussian_taps(sigma) / 2, (sigma, row.sum())


# ---- the budget ---------------------------------------------------------------------------------


def test_a_wide_blur_on_camera_images_is_refused_with_the_value_that_fits() -> None:
    """The probe: sigma 28 (its hard bound) over 2 camera images x 2 draws (within the pixel
    budgets) would cost 17 G taps, about 12 s on two cores. Refused by name, with the largest
    sigma that fits, which then passes."""
    preset = Preset([new_step("hsv"), new_step("gaussian_blur", sigma=28.0)])
    plan = plan_render(preset, [PHOTO] * 2, 2)
    with pytest.raises(WorkError) as caught:
        check_plan(plan, Budget())
    err = caught.value
    assert (err.step, err.op, err.param) == (1, "gaussian_blur", "sigma")
    assert err.limit == RENDER_WORK and err.taps > 2 * err.limit
    text = str(err)
    assert text.startswith("step 1 (gaussian_blur): sigma 28 reads 338 pixels for each it "
                           "writes; over 2 image(s) of up to 4000x3000 px x 2 draw(s), this "
                           "render would cost 17 G taps, and at most 8 G per render is "
                           "allowed on the CPU")
    assert f"lower sigma to at most {err.fits:g}, or preview fewer images" in text
    # the hsv step costs 0.77 G: 150 taps a pixel are left, a window of 75 (3 x 12.33 rounds
    # up to 37), not 77 (3 x 12.34 rounds up to 38)
    assert err.fits == 12.33
    fitting = plan_render(Preset([new_step("hsv"), new_step("gaussian_blur", sigma=err.fits)]),
                          [PHOTO] * 2, 2)
    check_plan(fitting, Budget())
    over = plan_render(Preset([new_step("hsv"), new_step("gaussian_blur",
                                                          sigma=err.fits + 0.01)]), [PHOTO] * 2, 2)
    assert over.work > RENDER_WORK  # the value suggested is the largest on the slider's steps
    one_draw = plan_render(preset, [PHOTO] * 2, 1)  # 8.5 G: over the CPU's, not the GPU's
    with pytest.raises(WorkError, match="allowed on the CPU"):
        check_plan(one_draw, Budget())
    check_plan(one_draw, Budget(), device="gpu")


def test_drawn_values_groups_and_whole_odd_windows() -> None:
    """A range or a list counts with its largest value; each child of a group counts (any
    may fire); a window that must be whole and odd is suggested whole and odd."""
    for value in (Uniform(0.5, 40.0), Choice((0.5, 40.0, 2.0))):
        plan = plan_render(Preset([new_step("gaussian_blur", sigma=value)]), [PHOTO] * 2, 8)
        assert plan.work == 2 * 8 * PHOTO[0] * PHOTO[1] * gaussian_taps(40.0)
    plan = plan_render(Preset([new_step("laplacian", window_size=23)]), [PHOTO], 2)
    with pytest.raises(WorkError) as caught:  # 4 x 23 taps over 24 MP: 2.2 G
        check_plan(plan, Budget(render_work=1_000_000_000))
    assert caught.value.fits == 9  # 4 x 9 = 36 taps fit in 41.7, 4 x 11 would not
    group = Group([new_step("gaussian_blur", sigma=20.0), new_step("laplacian", window_size=3)])
    plan = plan_render(Preset([group]), [PHOTO], 1)
    assert plan.work == PHOTO[0] * PHOTO[1] * (gaussian_taps(20.0) + PASS_TAPS)  # not 12


def test_a_chain_of_cheap_steps_counts_every_step() -> None:
    """No parameter helps: the message says to preview less, and names no parameter."""
    preset = Preset([new_step("brightness") for _ in range(12)])
    plan = plan_render(preset, [(2000, 2000)], 4)
    with pytest.raises(WorkError) as caught:
        check_plan(plan, Budget(render_work=int(plan.work) - 1))
    assert caught.value.param is None and caught.value.fits is None
    assert str(caught.value).endswith("preview fewer images, fewer draws or a smaller size")
    check_plan(plan, Budget(render_work=int(plan.work)))


def test_the_engine_refuses_before_building_and_keeps_the_chain(engine: PreviewEngine) -> None:
    engine.set_arrays([np.zeros((600, 800, 3), np.uint8)] * 2)
    previous = budget_mod.current()
    budget_mod.configure(Budget(render_work=100_000_000))
    try:
        preset = Preset([new_step("gaussian_blur", sigma=20.0)])
        with pytest.raises(WorkError, match="cost 0.465 G taps, and at most 0.1 G per render "
                           "is allowed on the CPU: lower sigma to at most 4, or") as caught:
            engine.render(preset, draws=2)
        assert engine.builds == 0  # nothing was built or run
        preset.steps[0].params["sigma"] = caught.value.fits
        assert engine.render(preset, draws=2).images[0].shape == (600, 800, 3)
        # a sweep counts the values it feeds
        with pytest.raises(WorkError, match="sigma up to 20"):
            engine.render_sweep(new_step("gaussian_blur"), "sigma", [1.0, 20.0])
    finally:
        budget_mod.configure(previous)


def test_the_distribution_takes_batches_the_work_budget_allows() -> None:
    preset = Preset([new_step("gaussian_blur", sigma=6.0)])
    one = plan_render(preset, [(512, 512)], 1).work
    tight = Budget(render_work=int(one * 5.5))
    assert batch_size(preset, (512, 512), 400, budget=tight) == 5
    with pytest.raises(WorkError):
        batch_size(preset, (512, 512), 400, budget=Budget(render_work=int(one) - 1))


def test_the_work_budget_from_the_command_line() -> None:
    parser = argparse.ArgumentParser()
    budget_mod.add_arguments(parser)
    assert budget_mod.from_args(parser.parse_args([])) == Budget()
    assert budget_mod.from_args(parser.parse_args(["--max-render-gtaps", "2.5"])) == \
        Budget(render_work=2_500_000_000)
    with pytest.raises(ValueError, match="--max-render-gtaps 0.0 is not allowed; expected a "
                                         "positive number of billions of taps"):
        budget_mod.from_args(parser.parse_args(["--max-render-gtaps", "0"]))
    with pytest.raises(ValueError, match="whole number of taps"):
        Budget(render_work=0)
    assert Budget().work_limit("gpu") == RENDER_WORK * GPU_WORK_FACTOR


@pytest.mark.gpu
def test_a_gpu_engine_is_held_to_the_gpu_budget() -> None:
    """The same render a CPU engine refuses (over the CPU's budget) runs on the GPU, whose
    budget is GPU_WORK_FACTOR times as large; over that, the GPU refuses it too."""
    image = np.zeros((600, 800, 3), np.uint8)
    preset = Preset([new_step("gaussian_blur", sigma=20.0)])
    work = plan_render(preset, [image.shape[:2]], 1).work
    previous = budget_mod.current()
    cpu, gpu = PreviewEngine("cpu", num_threads=2), PreviewEngine("gpu")
    budget_mod.configure(Budget(render_work=int(work) // 2))
    try:
        for e in (cpu, gpu):
            e.set_arrays([image])
        with pytest.raises(WorkError, match="allowed on the CPU"):
            cpu.render(preset)
        assert gpu.render(preset).images[0].shape == image.shape
        budget_mod.configure(Budget(render_work=int(work) // (2 * GPU_WORK_FACTOR)))
        with pytest.raises(WorkError, match="allowed on the GPU"):
            gpu.render(preset)
    finally:
        budget_mod.configure(previous)
        cpu.close()
        gpu.close()
