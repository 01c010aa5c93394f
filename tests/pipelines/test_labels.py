"""Labels follow the pixels: every catalog entry's label rule checked against the image itself.

The test images are made here (a white rectangle on black) with their exact box, mask and corner
keypoints, so the truth is the rendered image: after each step the white pixels' tight box, the
mask's tight box and the moved box agree within a pixel. Hypothesis draws random chains.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.label_render import SampleLabels
from dali_gallery.pipelines.labels import BoxCrop, Flip, Keep, Refuse, Scale, Warp
from dali_gallery.pipelines.preset import Group, Preset, PresetError, Step, Uniform, load

H, W = 96, 160
RECT = (40, 24, 100, 64)  # left, top, right, bottom in pixels
CATEGORY = 7


def scene(rect=RECT, h=H, w=W) -> tuple[np.ndarray, SampleLabels]:
    left, top, right, bottom = rect
    img = np.zeros((h, w, 3), np.uint8)
    img[top:bottom, left:right] = 255
    mask = np.zeros((h, w, 1), np.uint8)
    mask[top:bottom, left:right] = CATEGORY
    rel = np.array([[left / w, top / h, right / w, bottom / h]], np.float32)
    corners = np.array([[[left / w, top / h, 2], [right / w, top / h, 2],
                         [left / w, bottom / h, 2], [right / w, bottom / h, 2]]], np.float32)
    return img, SampleLabels(rel, np.array([CATEGORY]), corners, mask)


def tight(a: np.ndarray) -> tuple[int, int, int, int] | None:
    ys, xs = np.nonzero(a)
    if not len(xs):
        return None
    return int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1


@pytest.fixture(scope="module")
def engine():
    e = PreviewEngine("cpu", num_threads=2)
    img, labels = scene()
    e.set_arrays([img])
    e.set_labels([labels])
    yield e
    e.close()


def step(op: str, **params) -> Step:
    return Step(op, {**CATALOG[op].defaults(), **params})


render_min_kept = 0.25


def check_follows(render, sample: int = 0, tol: float = 1.5) -> None:
    """The white pixels, the mask and the moved box and keypoints agree."""
    out = render.labels[sample].labels
    img = render.images[sample].max(axis=2)
    h, w = img.shape
    tol *= max(1.0, h / H, w / W)  # upscaled, a source pixel is several pixels wide
    white = tight(img > 127)
    masked = tight(out.mask[:, :, 0] == CATEGORY)
    assert (white is None) == (masked is None)
    if white is None or len(out.boxes) == 0:  # gone, or too little left: dropped
        assert all(v.min() < render_min_kept for v in render.labels[sample].kept.values()
                   if len(v)) or white is None
        return
    assert len(out.boxes) == 1, out.boxes
    box = out.boxes[0] * [w, h, w, h]
    assert np.allclose(box, white, atol=tol), (box, white)
    assert np.allclose(box, masked, atol=tol), (box, masked)
    assert out.classes.tolist() == [CATEGORY]
    for x, y in out.keypoints[0, :, :2] * [w, h]:  # corners inside the image touch the object
        if 1 <= x < w - 1 and 1 <= y < h - 1:
            ys, xs = np.nonzero(img > 127)
            assert np.min(np.hypot(xs + 0.5 - x, ys + 0.5 - y)) < tol + 0.5, (x, y)


def test_every_entry_declares_what_it_does_to_labels():
    for name, spec in CATALOG.items():
        assert spec.labels is not None, name
        assert spec.labels.describe(), name
        if spec.category == "geometry":
            assert isinstance(spec.labels, Warp | BoxCrop | Flip | Scale), name  # labels follow
        if spec.policy:
            assert isinstance(spec.labels, Refuse), name


KEEP = [n for n, s in CATALOG.items() if isinstance(s.labels, Keep) and s.cpu]
MOVING = Warp | BoxCrop | Flip | Scale
MOVE = [n for n, s in CATALOG.items() if isinstance(s.labels, MOVING) and s.cpu]
REFUSE = [n for n, s in CATALOG.items() if isinstance(s.labels, Refuse) and s.cpu]


@pytest.mark.parametrize("op", KEEP)
def test_pixel_operators_leave_labels_exactly_where_they_were(engine, op):
    r = engine.render(Preset([step(op)], seed=5))
    _, before = scene()
    after = r.labels[0].labels
    assert np.array_equal(after.boxes, before.boxes)
    assert np.array_equal(after.classes, before.classes)
    assert np.array_equal(after.keypoints, before.keypoints)
    assert np.array_equal(after.mask, before.mask)
    assert r.labels[0].kept == {}


def _values(op: str) -> list[dict]:
    """Defaults, and each runtime number at both ends of its slider."""
    spec = CATALOG[op]
    out = [{}]
    for p in spec.params:
        if p.kind in ("float", "int") and p.slider is not None and p.name != "fill_value":
            lo, hi = p.slider
            out += [{p.name: p.coerce(lo)}, {p.name: p.coerce(hi)}]
    return out


@pytest.mark.parametrize("op", MOVE)
def test_moving_operators_move_boxes_masks_and_keypoints_with_the_pixels(engine, op):
    rendered = 0
    for params in _values(op):
        preset = Preset([step(op, **params)], seed=11)
        try:
            load(preset)
        except PresetError:  # a slider end past a cross-parameter rule (a min above its max)
            continue
        r = engine.render(preset, draws=3)
        rendered += 1
        for s in range(3):
            check_follows(r, s)
    assert rendered >= 1  # the defaults at least


@pytest.mark.parametrize("op", REFUSE)
def test_operators_that_cannot_move_labels_are_refused_by_name(engine, op):
    with pytest.raises(StepError) as info:
        engine.render(Preset([step("flip"), step(op)], seed=1))
    assert info.value.step == 1
    assert op in str(info.value) and CATALOG[op].labels.reason in str(info.value)


def test_a_crop_that_leaves_a_tenth_of_a_box_drops_it_and_says_so(engine):
    # a 40 px window whose right edge is 6 px into the 60 px wide rectangle
    crop = step("crop", crop_w=40.0, crop_h=96.0, crop_pos_x=6 / (W - 40), crop_pos_y=0.0)
    r = engine.render(Preset([crop], seed=1))
    kept = r.labels[0].kept[(0, None)]
    assert kept.tolist() == pytest.approx([0.1], abs=0.01)
    assert len(r.labels[0].labels.boxes) == 0
    assert r.labels[0].dropped(engine.min_kept) == {(0, None): 1}
    engine.min_kept = 0.05
    try:
        r = engine.render(Preset([crop], seed=1))
        out = r.labels[0]
        assert out.clipped(0.05) == {(0, None): 1}
        # the rectangle's left 6 px, at the window's right edge
        assert out.labels.boxes[0].tolist() == pytest.approx([34 / 40, 24 / 96, 1.0, 64 / 96],
                                                             abs=1e-5)
        check_follows(r)
    finally:
        engine.min_kept = 0.25


def test_labels_follow_steps_that_fire_at_random_and_group_children(engine):
    chain = [step("flip", horizontal=True, vertical=False),
             Group([step("rotate", angle=Uniform(-40, 40), keep_size=False),
                    step("paste", ratio=1.6)]),
             step("crop", crop_w=150.0, crop_h=90.0)]
    chain[0].probability = 0.5
    r = engine.render(Preset(chain, seed=4), draws=8)
    fired = [rec.fired.get(0, True) for rec in r.records]
    assert any(fired) and not all(fired)
    # the rotation is last but one, so only boxes cut by the crop may differ from the pixels
    for s in range(8):
        check_follows(r, s, tol=2.0)


def test_images_without_boxes_render(engine):
    img, _ = scene()
    empty = SampleLabels(np.zeros((0, 4)), np.zeros(0), mask=np.zeros((H, W, 1), np.uint8))
    e = PreviewEngine("cpu", num_threads=1)
    try:
        e.set_arrays([img, img])
        _, labels = scene()
        e.set_labels([empty, labels])
        r = e.render(Preset([step("rotate", angle=20.0), step("crop")], seed=2))
        assert r.labels[0].labels.boxes.shape == (0, 4)
        assert r.labels[0].labels.keypoints.shape[0] == 0
        assert len(r.labels[1].labels.boxes) == 1
    finally:
        e.close()


AXIS = ["flip", "crop", "paste", "resize", "random_resized_crop"]
TURN = ["rotate", "warp_affine", "experimental.warp_perspective"]


@st.composite
def chains(draw):
    """Random chains of axis-aligned steps, optionally ending with one that turns the box (a
    box of a turned box is no longer the object's tight box, so only one, and last). Some
    steps fire at random, and a colour step with a coin may come anywhere: chains with
    conditions, shared label steps, and labels moved after the run or in the graph."""
    steps = []
    for op in draw(st.lists(st.sampled_from(AXIS), min_size=1, max_size=4)):
        params = {}
        for p in CATALOG[op].params:
            if p.kind == "float" and p.runtime and p.slider is not None:
                lo, hi = p.slider
                if op == "resize":  # no shrinking: a mask loses the object's edge to the
                    lo = max(lo, H)  # coarser grid, and each later upscale magnifies that
                params[p.name] = draw(st.floats(lo, hi).map(lambda v, p=p: p.coerce(v)))
        if op == "flip":
            params = {"horizontal": draw(st.booleans()), "vertical": draw(st.booleans())}
        steps.append(step(op, **params))
    if draw(st.booleans()):
        op = draw(st.sampled_from(TURN))
        spec = CATALOG[op]
        magnitude = spec.param(spec.magnitude)
        steps.append(step(op, **{spec.magnitude: magnitude.coerce(
            draw(st.floats(*magnitude.slider)))}))
    for s in steps:
        s.probability = draw(st.sampled_from([1.0, 1.0, 0.5]))
    if draw(st.booleans()):
        colour = step("brightness_contrast")
        colour.probability = 0.5
        steps.insert(draw(st.integers(0, len(steps))), colour)
    return steps


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                    HealthCheck.function_scoped_fixture])
@given(chain=chains(), seed=st.integers(0, 1000))
def test_random_label_aware_chains_keep_boxes_on_their_masks(engine, chain, seed):
    engine.min_kept = 0.0  # keep every box: compare each with its mask, however little is left
    try:
        r = engine.render(Preset(chain, seed=seed), draws=2)
    finally:
        engine.min_kept = 0.25
    for s in range(2):
        out = r.labels[s].labels
        h, w = out.mask.shape[:2]
        masked = tight(out.mask[:, :, 0] == CATEGORY)
        if masked is None or len(out.boxes) == 0:
            continue
        box = out.boxes[0] * [w, h, w, h]
        tol = 1.0 + 1.5 * max(h, w) / 96  # upscaled, a source pixel is several pixels wide
        # the box always holds the object
        assert box[0] <= masked[0] + tol and box[1] <= masked[1] + tol, (chain, box, masked)
        assert box[2] >= masked[2] - tol and box[3] >= masked[3] - tol, (chain, box, masked)
        # and is its tight box, unless a turned object was cut by the image's border (the
        # part left inside has a smaller box than the clipped box of the whole)
        turn = next((i for i, x in enumerate(chain) if x.op in TURN), None)
        last = None if turn is None else r.labels[s].kept.get((turn, None))
        cut_turned = last is not None and last.min() < 1.0
        if not cut_turned:
            assert np.allclose(box, masked, atol=tol), (chain, box, masked)


def test_a_batch_without_any_box_goes_through_every_kind_of_step():
    img, _ = scene()
    e = PreviewEngine("cpu", num_threads=1)
    try:
        e.set_arrays([img, img])
        none = SampleLabels(np.zeros((0, 4)), np.zeros(0), mask=np.zeros((H, W, 1), np.uint8))
        e.set_labels([none, none])
        chain = [step("flip"), step("rotate", angle=30.0), step("crop"),
                 step("experimental.warp_perspective", tilt_x=0.3)]
        chain[1].probability = 0.5
        r = e.render(Preset(chain, seed=3), draws=2)
        for out in r.labels:
            assert out.labels.boxes.shape == (0, 4)
            assert all(len(v) == 0 for v in out.kept.values())
        # boxes without keypoints, all cut away by a crop, then moved again
        _, labels = scene()
        e.set_labels([SampleLabels(labels.boxes, labels.classes, mask=labels.mask)] * 2)
        away = step("crop", crop_w=20.0, crop_h=20.0, crop_pos_x=0.0, crop_pos_y=0.0)
        r = e.render(Preset([away, step("rotate", angle=10.0), step("flip")], seed=3))
        assert [len(o.labels.boxes) for o in r.labels] == [0, 0]
        assert r.labels[0].kept[(0, None)].tolist() == [0.0]
    finally:
        e.close()


def test_the_training_tail_s_centre_crop_reports_the_boxes_it_drops():
    """The inspector names the step that dropped a box; the training output's centre crop
    drops boxes too, and says so after the chain's steps."""
    from dali_gallery.pipelines.label_code import TAIL_KEPT
    from dali_gallery.pipelines.preset import Output

    img, labels = scene(rect=(4, 4, 40, 30))  # outside a 40x40 centre crop of 160x96
    e = PreviewEngine("cpu", num_threads=2)
    e.set_arrays([img])
    e.set_labels([labels])
    tail = Output(crop=(40, 40), dtype="uint8", layout="HWC")
    try:
        r = e.render(Preset([step("rotate", angle=0.0)], output=tail), tail=True)
    finally:
        e.close()
    out = r.labels[0]
    assert list(out.kept) == [(0, None), TAIL_KEPT]
    assert out.kept[(0, None)].tolist() == [1.0] and out.kept[TAIL_KEPT].tolist() == [0.0]
    assert len(out.labels.boxes) == 0 and out.dropped(e.min_kept) == {(0, None): 0, TAIL_KEPT: 1}


def test_the_training_tail_moves_labels_with_its_resize_centre_crop_and_mirror(engine):
    from dali_gallery.pipelines.preset import Output

    tail = Output(resize_shorter=160, crop=(100, 150), mirror_probability=0.5, mean=None,
                  std=None, dtype="uint8", layout="HWC")
    r = engine.render(Preset([step("rotate", angle=12.0)], seed=8, output=tail), draws=6,
                      tail=True)
    assert {img.shape for img in r.images} == {(100, 150, 3)}
    flipped = set()
    for s in range(6):
        check_follows(r, s)
        box = r.labels[s].labels.boxes[0]
        flipped.add(bool(box[0] + box[2] > 1.0))  # its centre right of the middle
    assert flipped == {True, False}  # the mirror coin went both ways, the boxes with it


def _plain_dali(mask: np.ndarray, call) -> np.ndarray:
    """``call(masks)`` in a plain DALI pipeline (no dali-gallery code) over one mask."""
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def plain():
        return call(fn.external_source(name="m", layout="HWC"))

    pipe = plain()
    pipe.build()
    pipe.feed_input("m", [mask])
    return np.array(pipe.run()[0][0])


def test_masks_through_an_entrys_own_call_are_dalis_call_with_nearest_neighbour(engine):
    from nvidia.dali import fn, types

    _, labels = scene()
    cases = {  # each entry whose masks take its own call, and that call as DALI's docs write it
        "rotate": ({"angle": 30.0, "keep_size": False}, lambda m: fn.rotate(
            m, angle=30.0, keep_size=False, fill_value=0, interp_type=types.INTERP_NN)),
        "crop": ({"crop_w": 120.0, "crop_h": 80.0, "crop_pos_x": 0.25, "crop_pos_y": 0.75},
                 lambda m: fn.crop(m, crop_w=120.0, crop_h=80.0, crop_pos_x=0.25,
                                   crop_pos_y=0.75, out_of_bounds_policy="pad")),
        "resize": ({"resize_shorter": 150.0}, lambda m: fn.resize(
            m, resize_shorter=150.0, antialias=False, interp_type=types.INTERP_NN)),
    }
    own = {n for n, s in CATALOG.items() if s.labels is not None
           and s.labels.nearest_masks is not None}
    assert own == set(cases)
    for op, (params, call) in cases.items():
        r = engine.render(Preset([step(op, **params)], seed=3))
        assert np.array_equal(r.labels[0].labels.mask, _plain_dali(labels.mask, call)), op
        check_follows(r)


def test_warps_stated_about_centres_or_windows_move_masks_with_one_operator():
    # the pixel matrix a mask's warp needs from those frames is ten small operators
    for name, spec in CATALOG.items():
        rule = spec.labels
        if isinstance(rule, Warp) and rule.frame != "pixels":
            assert rule.nearest is not None or "{masks}" in rule.call, name


def test_masks_cannot_take_the_own_call_of_an_entry_that_draws_or_runs_python():
    from dataclasses import replace

    rrc = CATALOG["random_resized_crop"]  # seeded: the masks would draw another window
    with pytest.raises(ValueError, match="own call"):
        replace(rrc, labels=Scale(nearest=(("antialias", "False"),)))
    with pytest.raises(ValueError, match="does not have"):
        replace(CATALOG["rotate"], labels=Warp("fn.transforms.rotation(angle=-{angle})",
                                               frame="centres", nearest=(("sigma", "0"),)))
    assert Scale().nearest is None  # a rule without it warps masks through the scale matrix
