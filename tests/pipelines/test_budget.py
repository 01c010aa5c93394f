"""pipelines.budget and pipelines.canvas: every render planned and checked before DALI runs."""

from __future__ import annotations

import argparse
import gc
import io
import itertools
import math

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines import budget as budget_mod
from dali_gallery.pipelines.budget import IMAGE_PIXELS, LEDGER, Budget
from dali_gallery.pipelines.canvas import SAME, Rotated, Span
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.images import EncodedImage, decode
from dali_gallery.pipelines.preset import Choice, Preset, Uniform, new_step, parse_document
from dali_gallery.pipelines.render_budget import BudgetError, check_plan, plan_render
from tests.support import SAMPLES, preset_dict

ODD_SIZES = [(37, 53), (100, 21), (64, 64)]


@pytest.fixture(scope="module")
def engine():
    e = PreviewEngine("cpu", num_threads=2)
    yield e
    e.close()


@pytest.fixture
def samples_engine():
    e = PreviewEngine("cpu", num_threads=2)
    assert e.set_images(SAMPLES) == []
    yield e
    e.close()


def _step_values(op: str) -> list[dict]:
    """Every parameter at its slider maximum; bool parameters that set the canvas both ways."""
    spec = CATALOG[op]
    fixed = {p.name: p.coerce(p.slider[1]) for p in spec.params
             if p.slider is not None and p.kind in ("int", "float")}
    flags = [p.name for p in spec.params if p.kind == "bool" and p.name in spec.canvas.params]
    return [dict(fixed, **dict(zip(flags, combo, strict=True)))
            for combo in itertools.product([True, False], repeat=len(flags))]


# ---- the catalog contract ----------------------------------------------------------------------


@pytest.mark.parametrize("op", list(CATALOG))
def test_slider_maxima_stay_within_the_budgets(op: str) -> None:
    """The sliders alone never lead past the budget: each op at its slider maxima on a
    1024x1024 image fits the per-image budget, and at the builder's largest view (6 images x 8
    draws at the 512 px preview size) fits the render budget."""
    from dali_gallery.widgets.preview import MAX_DRAWS

    for values in _step_values(op):
        preset = Preset([new_step(op, **values)])
        plan = plan_render(preset, [(1024, 1024)], 1)
        assert all(h * w <= IMAGE_PIXELS for h, w in plan.outputs), (op, values, plan.outputs)
        check_plan(plan, Budget())
        check_plan(plan_render(preset, [(512, 384)] * 6, MAX_DRAWS), Budget())


def test_canvas_declarations_name_real_parameters() -> None:
    for op, spec in CATALOG.items():
        names = {p.name for p in spec.params}
        assert set(spec.canvas.params) <= names, op


def _shapes(render) -> list[tuple[int, int]]:
    return [img.shape[:2] for img in render.images]


@pytest.mark.parametrize("op, param, values", [
    ("paste", "ratio", [1.0, 1.01, 1.5, 2.333, 3.0, 7.99]),
    ("resize", "resize_shorter", [8.0, 100.4, 100.5, 224.0, 511.7]),
    ("crop", "crop_h", [8.4, 192.5, 300.0]),
    ("crop", "crop_w", [9.6, 33.0]),
])
def test_canvas_bounds_real_dali_sizes(engine: PreviewEngine, op: str, param: str,
                                       values: list[float]) -> None:
    """Against the truth: the planned size is an upper bound of what DALI makes, by at most
    one pixel per side (DALI rounds, the plan rounds up)."""
    engine.set_arrays([np.zeros((*hw, 3), np.uint8) for hw in ODD_SIZES])
    render = engine.render_sweep(new_step(op), param, values)
    for k, v in enumerate(values):
        plan = plan_render(Preset([new_step(op, **{param: v})]), ODD_SIZES, 1)
        for i, (ph, pw) in enumerate(plan.outputs):
            h, w = render.tile(i, k).shape[:2]
            assert 0 <= ph - h <= 1 and 0 <= pw - w <= 1, (op, param, v, ODD_SIZES[i])


def test_rotate_bounding_box_bounds_real_dali_sizes(engine: PreviewEngine) -> None:
    angles = [0.0, 1.0, 15.0, 33.3, 45.0, 60.0, 89.5, 90.0, 135.0, -33.3, -170.0]
    engine.set_arrays([np.zeros((*hw, 3), np.uint8) for hw in ODD_SIZES])
    render = engine.render_sweep(new_step("rotate", keep_size=False), "angle", angles)
    for k, a in enumerate(angles):
        plan = plan_render(Preset([new_step("rotate", keep_size=False, angle=a)]), ODD_SIZES, 1)
        for i, (ph, pw) in enumerate(plan.outputs):
            h, w = render.tile(i, k).shape[:2]
            assert 0 <= ph - h <= 3 and 0 <= pw - w <= 3, (a, ODD_SIZES[i], (h, w), (ph, pw))
    kept = engine.render(Preset([new_step("rotate", angle=45.0)]))
    assert _shapes(kept) == ODD_SIZES


@pytest.mark.slow
@pytest.mark.parametrize("op", [n for n, s in CATALOG.items() if s.cpu and not s.custom])
def test_every_cpu_operator_keeps_within_its_declared_canvas(engine: PreviewEngine,
                                                             op: str) -> None:
    """An operator declared SAME really keeps the size; the others stay within the plan."""
    engine.set_arrays([np.zeros((*hw, 3), np.uint8) for hw in ODD_SIZES[:2]])
    preset = Preset([new_step(op)])
    render = engine.render(preset)
    plan = plan_render(preset, ODD_SIZES[:2], 1)
    for (h, w), (ph, pw) in zip(_shapes(render), plan.outputs, strict=True):
        if CATALOG[op].canvas == SAME:
            assert (h, w) == (ph, pw), op
        else:
            assert h <= ph and w <= pw, op


def test_random_values_count_with_their_largest_size() -> None:
    hw = [(1000, 1000)]
    uniform = plan_render(Preset([new_step("paste", ratio=Uniform(1.0, 8.0))]), hw, 1)
    assert uniform.outputs == [(8000, 8000)]
    choice = plan_render(Preset([new_step("paste", ratio=Choice((1.0, 2.5, 1.5)))]), hw, 1)
    assert choice.outputs == [(2500, 2500)]
    # A rotation range: the largest bounding box over the range, by brute force.
    for lo, hi in [(-15.0, 15.0), (10.0, 30.0), (-100.0, -60.0), (0.0, 360.0)]:
        step = new_step("rotate", keep_size=False, angle=Uniform(lo, hi))
        (ph, pw), = plan_render(Preset([step]), [(300, 800)], 1).outputs
        span = Rotated("angle", "keep_size")
        exact = [span.size((300, 800), {"angle": Span((a,)), "keep_size": Span((0.0,))})
                 for a in np.linspace(lo, hi, 4001)]
        assert ph == max(h for h, _ in exact) and pw == max(w for _, w in exact)


def test_a_step_planned_to_make_an_empty_image_is_refused_by_name() -> None:
    """An image without rows or columns crashes later operators (a blur segfaults): a plan
    that makes one (here a sweep feeding a crop height of 0) is refused before DALI runs."""
    from dali_gallery.pipelines.codegen import feed_name

    preset = Preset([new_step("hsv"), new_step("crop", crop_h=8.0, crop_w=16.0)])
    plan = plan_render(preset, [(100, 100)], 1,
                       overrides={feed_name(1, "crop_h"): np.array([0.0, 0.0])})
    with pytest.raises(BudgetError) as err:
        check_plan(plan, Budget())
    assert (err.value.step, err.value.op, err.value.param) == (1, "crop", "crop_h")
    assert "crop_h 0, crop_w 16 makes image 0 16x0 px from 100x100" in str(err.value)
    assert "at least 1 px each way: change crop_h or crop_w" in str(err.value)


# ---- the probes ---------------------------------------------------------------------------------


def test_four_pastes_at_the_slider_maximum_are_refused_before_dali(
        samples_engine: PreviewEngine) -> None:
    """The probe: four valid paste steps at ratio 3 took the kernel past 6 GB."""
    top = CATALOG["paste"].param("ratio").slider[1]
    preset = Preset([new_step("paste", ratio=top) for _ in range(4)])
    with pytest.raises(BudgetError) as caught:
        samples_engine.render(preset, draws=3)
    err = caught.value
    assert isinstance(err, StepError) and err.op == "paste" and err.param == "ratio"
    assert err.step == 2 and err.limit == budget_mod.RENDER_PIXELS and err.pixels > err.limit
    text = str(err)
    assert text.startswith("step 2 (paste): ratio 3 gives images of up to 10368x10368 px")
    assert "at most 256 MP per step of a render is allowed" in text and "lower ratio" in text
    assert samples_engine.builds == 0  # refused before any pipeline was built
    # The chain is untouched and renders once the value is lowered.
    preset.steps[2].params["ratio"] = 1.2
    preset.steps[3].params["ratio"] = 1.0
    assert samples_engine.render(preset).images[0].shape[2] == 3


def test_a_preset_upload_over_the_budget_is_refused_in_one_click(
        samples_engine: PreviewEngine) -> None:
    """The probe: one uploaded preset (bounds, not sliders: ratio 8) did it in one click."""
    doc = preset_dict([{"op": "paste", "params": {"ratio": 8}} for _ in range(3)])
    preset = parse_document(__import__("json").dumps(doc))
    with pytest.raises(BudgetError) as caught:
        samples_engine.render(preset)
    assert caught.value.step == 1 and caught.value.limit == IMAGE_PIXELS
    assert "ratio 8 makes an image of up to 24576x24576 px" in str(caught.value)
    assert samples_engine.builds == 0


def test_a_sweep_counts_the_values_it_feeds(engine: PreviewEngine) -> None:
    """render_sweep feeds its values per sample instead of the step's own: they count."""
    engine.set_arrays([np.zeros((2000, 2000, 3), np.uint8)])
    builds = engine.builds
    with pytest.raises(BudgetError, match="ratio up to 8 .* makes an image of up to 16000x16000"):
        engine.render_sweep(new_step("paste", ratio=1.0), "ratio", [1.0, 8.0])
    assert engine.builds == builds


def test_the_training_tail_counts(engine: PreviewEngine) -> None:
    engine.set_arrays([np.zeros((20, 4000, 3), np.uint8)])
    preset = parse_document(__import__("json").dumps(
        preset_dict([], output={"resize_shorter": 4096})))
    with pytest.raises(BudgetError, match=r"training tail \(output.resize_shorter\)"):
        engine.render(preset, tail=True)
    engine.render(preset)  # without the tail it is a plain copy


# ---- the kernel's budget ------------------------------------------------------------------------


def _flat_png(width: int, height: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (10, 120, 200)).save(buf, "PNG")
    return buf.getvalue()


def test_small_uploads_at_full_size_stop_at_the_kernel_budget() -> None:
    """The probe: six small PNG uploads at the original size passed 8 GB. Here at a tenth of
    the scale: six 3 MP PNGs of 9 KB each against a kernel budget 10 MP above what is held."""
    data = _flat_png(2000, 1500)
    assert len(data) < 20_000
    uploads = [EncodedImage(f"u{i}.png", data) for i in range(6)]
    gc.collect()  # what earlier tests left behind is freed now, not during the test
    small = Budget(kernel_pixels=LEDGER.held() + 10_000_000)
    arrays, ok, problems = decode(uploads, budget=small)
    assert [e.name for e in ok] == ["u0.png", "u1.png", "u2.png"]
    assert [p.name for p in problems] == ["u3.png", "u4.png", "u5.png"]
    assert problems[0].reason.startswith("not loaded: it needs 3.0 MP (2000x1500) at its full "
                                         "size while this kernel already holds")
    assert "choose a smaller preview size" in problems[0].reason
    # At a preview size they are small: all six fit.
    _, ok_small, none = decode(uploads, max_side=256, budget=small)
    assert len(ok_small) == 6 and none == []
    # Held images are counted until nobody holds them.
    held = LEDGER.held()
    del arrays
    gc.collect()
    assert LEDGER.held() == held - 3 * 3_000_000


def test_a_render_stops_at_the_kernel_budget(engine: PreviewEngine) -> None:
    engine.set_arrays([np.zeros((500, 500, 3), np.uint8)] * 2)
    held = LEDGER.held(excluding=engine)
    tight = Budget(kernel_pixels=held + 3_000_000)
    previous = budget_mod.current()
    budget_mod.configure(tight)
    try:
        engine.render(Preset([new_step("brightness")]), draws=2)  # 4 x 0.25 MP x 2 = 2 MP
        with pytest.raises(BudgetError, match="at most .* per kernel is allowed") as caught:
            engine.render(Preset([new_step("paste", ratio=2.0)]), draws=2)
        assert caught.value.step == 0 and caught.value.param == "ratio"
    finally:
        budget_mod.configure(previous)


# ---- configuration ------------------------------------------------------------------------------


def test_budgets_from_command_line_arguments() -> None:
    parser = argparse.ArgumentParser()
    budget_mod.add_arguments(parser)
    assert budget_mod.from_args(parser.parse_args([])) == Budget()
    custom = budget_mod.from_args(parser.parse_args(["--max-render-mp", "64",
                                                     "--max-image-mp", "0.5"]))
    assert custom == Budget(image_pixels=500_000, render_pixels=64_000_000)
    for bad in (["--max-kernel-mp", "0"], ["--max-image-mp", "nan"]):
        with pytest.raises(ValueError, match="is not allowed"):
            budget_mod.from_args(parser.parse_args(bad))
    with pytest.raises(ValueError):
        Budget(render_pixels=0)


def test_configure_sets_the_budget_of_later_checks() -> None:
    previous = budget_mod.current()
    try:
        assert budget_mod.configure(Budget(image_pixels=100)).image_pixels == 100
        plan = plan_render(Preset([new_step("brightness")]), [(10, 11)], 1)
        with pytest.raises(BudgetError, match="image 0 is 11x10 px"):
            check_plan(plan, budget_mod.current())
    finally:
        budget_mod.configure(previous)
    assert budget_mod.configure().image_pixels == IMAGE_PIXELS and math.isfinite(IMAGE_PIXELS)


def test_a_plan_checked_once_is_checked_again_under_another_budget_and_every_ledger() -> None:
    """A remembered plan skips its image and step limits only under the budget it met; what
    the kernel holds is checked every time."""
    plan = plan_render(Preset([new_step("paste", ratio=2.0)]), [(200, 300)] * 2, 2)
    roomy = Budget()
    check_plan(plan, roomy)
    assert plan.passed == (roomy, plan.footprint)
    with pytest.raises(BudgetError, match="at most") as caught:
        check_plan(plan, Budget(image_pixels=100_000))  # 400x600 after the paste
    assert caught.value.op == "paste"
    check_plan(plan, roomy)
    with pytest.raises(BudgetError, match="the kernel already holds"):
        check_plan(plan, roomy, held=roomy.kernel_pixels - plan.footprint + 1)
    small = Budget(render_pixels=plan.footprint // 4)
    with pytest.raises(BudgetError):
        check_plan(plan, small)
    assert plan.passed == (roomy, plan.footprint)  # a failed check is not remembered
