"""The gallery view renders every operator through real DALI pipelines, progressively.

One module-wide view renders the whole catalog once on two square images at 128 px; the other
tests use category or search filters to keep their renders short.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from dali_gallery.gallery.bench import bench_images
from dali_gallery.gallery.row import tile_px
from dali_gallery.gallery.sweep import choice_params, choice_values, plan_row, sweep_values
from dali_gallery.gallery.view import GalleryView, slug
from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.images import collect
from tests.gallery.custom_rows import custom_gallery, explodes_catalog
from tests.support import CPU_OPS, GPU_ONLY_OPS, SAMPLES

pytestmark = pytest.mark.timeout(300)

JPEG_MAGIC = b"\xff\xd8"


@pytest.fixture(scope="module")
def squares() -> list[np.ndarray]:
    return bench_images(128, 2)


@pytest.fixture(scope="module")
def full(squares):
    view = GalleryView(device="cpu", size=128, max_images=2)
    changes: list[int] = []
    view.rows_box.observe(lambda c: changes.append(len(c["new"])), names="children")
    view.set_arrays(squares, ["a", "b"])
    assert view.wait_idle(240), view.status.value
    view.children_history = changes
    yield view
    view.close()


def test_every_cpu_operator_gets_a_row_of_rendered_tiles(full, squares):
    assert set(full.results) == set(CATALOG)
    for op in CPU_OPS:
        result = full.results[op]
        assert result.ok, f"{op}: {result.error}"
        plan = result.plan
        assert len(result.tiles) == len(plan.columns)
        for column in result.tiles:
            assert len(column) == len(squares)
            for tile in column:
                assert tile.dtype == np.uint8 and tile.ndim == 3 and tile.shape[2] == 3
        if plan.mode == "sweep" and op != "flip":
            first, last = result.tiles[0][0], result.tiles[-1][0]
            assert first.shape != last.shape or not np.array_equal(first, last), (
                f"{op}: {plan.columns[0].label} and {plan.columns[-1].label} look the same")
        # what the page shows: the original column plus one JPEG per magnitude
        row = full.row(op)
        assert len(row.images) == 1 + len(plan.columns)
        assert all(bytes(img.value[:2]) == JPEG_MAGIC for img in row.images)
        assert list(row.add._options_labels) == [c.button for c in plan.columns]
        assert f"dg-gallery-row-{slug(op)}" in row.widget._dom_classes


def test_tiles_are_the_operator_at_each_labelled_value(full, squares):
    # column k of image i is image i at values[k]: rotate's 90 deg column is each image turned
    result = full.results["rotate"]
    assert [c.label for c in result.plan.columns] == ["angle=0 deg", "angle=30 deg",
                                                      "angle=60 deg", "angle=90 deg"]
    for i, original in enumerate(squares):
        assert np.abs(result.tiles[0][i].astype(int) - original).mean() < 1
        turned = np.rot90(original)  # DALI's positive angle is counter-clockwise
        assert np.abs(result.tiles[3][i].astype(int) - turned).mean() < 3
    neutral = full.results["brightness"].tiles[0]
    assert all(np.array_equal(t, o) for t, o in zip(neutral, squares, strict=True))


def test_rows_stream_in_with_a_progress_bar(full):
    history = full.children_history
    assert history[0] == 0 or history[0] == 1
    assert history[-1] == len(CATALOG)
    assert len(history) >= len(CATALOG), "rows should appear one by one"
    assert full.stats["first_row_s"] < full.stats["total_s"]
    assert full.progress.value == full.progress.max == len(CATALOG)
    assert f"{len(CATALOG)} operators" in full.status.value


def test_gpu_only_operators_are_explained_on_cpu(full):
    assert GPU_ONLY_OPS
    for op in GPU_ONLY_OPS:
        result = full.results[op]
        assert not result.tiles and result.error is None
        assert "GPU only" in result.unavailable and CATALOG[op].gpu_reason in result.unavailable
        assert result.unavailable.startswith(CATALOG[op].unavailable_on("cpu"))
        row = full.row(op)
        notes = [w for w in row.widget.children if "dg-gallery-gpu-only" in w._dom_classes]
        assert notes and "GPU only" in notes[0].value
        assert len(row.add.options) == len(result.plan.columns)  # can still be added


def test_filter_and_search_reuse_rendered_rows(full):
    renders = full.engine.renders
    full.category.value = "noise"
    assert full.wait_idle(30)
    assert full.shown() == [op for op in CATALOG if CATALOG[op].category == "noise"]
    assert len(full.rows_box.children) == len(full.shown())
    full.category.value = ""
    full.search.value = "BLUR"
    assert full.wait_idle(30)
    blur = [op for op, spec in CATALOG.items() if "blur" in op or "blur" in spec.doc.lower()]
    assert full.shown() == blur and {"gaussian_blur", "experimental.median_blur"} <= set(blur)
    full.search.value = "no such operator"
    assert full.wait_idle(30)
    assert full.shown() == [] and full.rows_box.children == ()
    full.search.value = ""
    assert full.wait_idle(30)
    assert len(full.shown()) == len(CATALOG)
    assert full.engine.renders == renders, "filtering must not render again"


def test_add_button_hands_the_magnitude_to_handlers(full):
    added = []
    full.on_add(lambda op, params: added.append((op, params)))
    try:
        row = full.row("rotate")
        row.click(2)
        assert added == [("rotate", {"angle": 60.0})]
        assert row.add.index is None, "the add buttons are buttons, not a selection"
        row.click(2)
        assert added[-1] == ("rotate", {"angle": 60.0}) and len(added) == 2
        full.row("flip").click(0)
        assert added[-1] == ("flip", {"horizontal": False, "vertical": False})
        full.row("experimental.median_blur").click(3)
        assert added[-1] == ("experimental.median_blur", {"window_size": 15})
        assert "added experimental.median_blur" in full.status.value
    finally:
        full._handlers.clear()


def test_a_refused_add_is_reported_naming_the_operator(full):
    def refuse(op, params):
        raise ValueError("at most 64 steps")

    full.on_add(refuse)
    try:
        full.row("hue").click(1)
        assert "could not add hue (hue=60 deg): at most 64 steps" in full.status.value
        assert "dg-error" in full.status.value
    finally:
        full._handlers.clear()


def test_switching_images_cancels_the_outdated_render(squares, monkeypatch):
    from dali_gallery.gallery import fused_rows
    from dali_gallery.pipelines.engine import PreviewEngine

    calls: list[tuple[tuple[str, ...], tuple[int, ...]]] = []  # each DALI render: its ops
    real_row, real_fused = fused_rows.render_row, PreviewEngine.render_fused

    def row(engine, plan, **kw):
        calls.append(((plan.op,), engine.images[1].shape))
        return real_row(engine, plan, **kw)

    def fused(engine, presets, **kw):  # a chunk of rows in one pipeline
        ops = tuple(dict.fromkeys(p.steps[0].op for p in presets))
        calls.append((ops, engine.images[1].shape))
        return real_fused(engine, presets, **kw)

    monkeypatch.setattr(fused_rows, "render_row", row)
    monkeypatch.setattr(PreviewEngine, "render_fused", fused)
    view = GalleryView(device="cpu", size=128, max_images=2)
    view.category.value = "auto-augment"  # slow rows: the switch lands mid-render
    first_row = threading.Event()
    view.rows_box.observe(lambda c: first_row.set() if c["new"] else None, names="children")
    view.set_images(SAMPLES)  # astronaut (square) and cat (85 x 128 at this size)
    assert first_row.wait(60)
    view.set_arrays(squares, ["a", "b"])
    assert view.wait_idle(120), view.status.value
    n = len(view.visible)
    assert set(view.results) == set(view.visible) and view.engine.names == ["a", "b"]
    for result in view.results.values():
        assert result.ok
        assert all(column[1].shape == (128, 128, 3) for column in result.tiles), result.op
    old = [ops for ops, shape in calls if shape[:2] == (85, 128)]
    new = [op for ops, shape in calls if shape[:2] == (128, 128) for op in ops]
    assert sorted(new) == sorted(view.visible) and len(view.visible) == n  # each once
    assert 1 <= len(old) <= 3, f"the outdated render went on: {old}"
    assert view.scheduler.stats.worker == "dali-gallery-gallery"  # the widgets' scheduler
    assert view.scheduler.stats.superseded + view.scheduler.stats.stale >= 1
    view.close()


def test_size_change_renders_again_at_the_new_size():
    view = GalleryView(SAMPLES, device="cpu", size=128, max_images=1)
    view.search.value = "saturation"
    assert view.wait_idle(60)
    assert max(view.results["saturation"].tiles[0][0].shape[:2]) == 128
    assert view.row("saturation").images[1].layout.width == f"{tile_px(128)}px"
    view.row("saturation").click_tile(0, 1)
    assert view.zoom.shown is not None
    view.size.value = 192
    assert view.wait_idle(60)
    assert max(view.results["saturation"].tiles[0][0].shape[:2]) == 192
    # what the user sees follows the size (it used to stay 104 CSS px at every size)
    assert view.row("saturation").images[1].layout.width == f"{tile_px(192)}px"
    assert tile_px(192) > tile_px(128)
    assert view.zoom.shown is None and bytes(view.zoom.large.value) == b"", \
        "the zoom view still showed a tile of the images decoded at the old size"
    with pytest.raises(ValueError, match="size 100"):
        GalleryView(size=100)
    view.close()


def test_bad_files_are_reported_and_good_ones_still_shown(tmp_path):
    (tmp_path / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    (tmp_path / "ok.jpg").write_bytes((SAMPLES / "cat.jpg").read_bytes())
    view = GalleryView(device="cpu", size=128, max_images=2)
    view.search.value = "hue"
    view.set_images(tmp_path)
    assert view.wait_idle(60)
    assert view.results["hue"].ok
    assert "broken.jpg" in view.status.value
    assert view.engine.names == ["ok.jpg"]
    view.set_images([("notes.txt", b"hello")])
    assert view.wait_idle(60)
    assert "notes.txt" in view.status.value and "dg-error" in view.status.value
    view.close()


def test_the_file_limit_notice_is_left_out_by_its_flag_not_its_wording(tmp_path):
    (tmp_path / "a_broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    for k, src in enumerate(sorted(SAMPLES.glob("*.jpg")) * 2):
        (tmp_path / f"b{k:02d}.jpg").write_bytes(src.read_bytes())
    view = GalleryView(device="cpu", size=128, max_images=2)  # reads at most 8 files
    view.search.value = "hue"
    problems = view.set_images(tmp_path)
    assert view.wait_idle(60)
    _, raw = collect(tmp_path, max_files=8)
    assert [p.over_limit for p in raw] == [True]  # what the view was given and left out
    assert problems == []
    assert [p.name for p in view.problems] == ["a_broken.jpg"]  # found when decoding
    assert "only 8 images" not in view.status.value
    assert view.results["hue"].ok and len(view.engine.names) == 2
    view.close()


def test_no_images_says_so():
    view = GalleryView(device="cpu")
    assert "no images to show" in view.status.value
    assert view.wait_idle(1)
    view.close()


def test_a_failing_operator_names_itself_and_the_rest_render(squares):
    view = custom_gallery(explodes_catalog(), squares[:1])
    bad = view.results["custom.explodes"]
    assert bad.error and "custom.explodes" in bad.error and "strength" in bad.error
    assert "exploded" in bad.error
    assert view.results["custom.vignette"].ok
    assert "failed: custom.explodes" in view.status.value
    view.close()


@pytest.mark.parametrize("op", ["rotate", "brightness", "grid_mask", "gaussian_blur",
                                "experimental.median_blur", "jpeg_compression_distortion"])
def test_sweeps_come_from_the_declaration(op):
    spec = CATALOG[op]
    p = spec.param(spec.magnitude)
    values = sweep_values(p, spec.signed)
    assert len(values) == 4
    assert all(p.check(v) is None for v in values)
    lo, hi = p.slider
    start = p.neutral if p.neutral is not None else lo
    assert values[0] == pytest.approx(start, abs=p.step)
    assert values[-1] in (lo, hi) and values[-1] != values[0]
    assert plan_row(spec).values == values


def test_a_search_finds_aliases_and_says_when_nothing_matches(squares):
    """It used to report "0 operators in 0.0 s" for a search without match."""
    small = Catalog([CATALOG[n] for n in ("saturation", "color_twist", "hue")])
    view = GalleryView(device="cpu", size=128, max_images=1, catalog=small)
    try:
        view.set_arrays(squares[:1], ["a"])
        view.search.value = "grayscale"
        assert view.wait_idle(60)
        assert view.shown() == ["saturation"]
        view.search.value = "colorjiter"
        assert view.wait_idle(60)
        assert view.shown() == []
        assert "no operator matches &#x27;colorjiter&#x27;; did you mean color_twist" in \
            view.status.value and "0 operators" not in view.status.value
    finally:
        view.close()


def _decode(data: bytes) -> np.ndarray:
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"), dtype=np.int16)


def test_choice_parameters_are_walked_from_the_declaration(full):
    """Operators without a magnitude used to show one column: their defaults."""
    walked = [op for op, spec in CATALOG.items() if spec.magnitude is None and choice_params(spec)]
    assert {"filter", "flip", "color_space_conversion"} <= set(walked)
    for op in walked:
        plan = full.results[op].plan
        assert plan.mode == "choices"
        for p in choice_params(CATALOG[op]):  # every value of every choice is a column
            shown = {c.params.get(p.name, p.default) for c in plan.columns}
            assert shown == set(choice_values(p)), (op, p.name, shown)
    kernels = full.results["filter"].tiles[:len(CATALOG["filter"].param("kernel").choices)]
    for a in range(len(kernels)):
        for b in range(a):
            assert not np.array_equal(kernels[a][0], kernels[b][0]), (a, b)


def test_flip_and_colour_space_columns_are_what_numpy_says(full, squares):
    flip = full.results["flip"]
    truth = {"none": lambda a: a, "vertical": np.flipud, "horizontal": np.fliplr,
             "horizontal+vertical": lambda a: np.flipud(np.fliplr(a))}
    assert [c.button for c in flip.plan.columns] == list(truth)
    for column, expected in zip(flip.tiles, truth.values(), strict=True):
        for tile, original in zip(column, squares, strict=True):
            assert np.array_equal(tile, expected(original))
    csc = full.results["color_space_conversion"]
    bgr = [c.params["output_type"] for c in csc.plan.columns].index("BGR")
    assert np.array_equal(csc.tiles[bgr][0], squares[0][..., ::-1])


def test_clicking_a_tile_opens_it_large_in_its_card(full, squares):
    rotate, flip = full.row("rotate"), full.row("flip")
    rotate.click_tile(1, 4)  # image 1 at 90 deg
    assert full.zoom.shown == ("rotate", "1", "4")
    assert rotate.widget.children[-1] is full.zoom.widget
    assert "angle=90 deg" in full.zoom.title.value
    large = _decode(full.zoom.large.value)
    assert np.abs(large - full.results["rotate"].tiles[3][1]).mean() < 3
    assert np.abs(_decode(full.zoom.original.value) - squares[1]).mean() < 3
    side = int(full.zoom.large.layout.width.removesuffix("px"))
    assert side >= 2 * tile_px(128)
    flip.click_tile(0, 0)  # one zoom view: it moves to the card clicked last
    assert flip.widget.children[-1] is full.zoom.widget
    assert full.zoom.widget not in rotate.widget.children
    full.zoom.close_button.click()
    assert full.zoom.shown is None and full.zoom.widget not in flip.widget.children


def test_cards_are_encoded_while_the_next_rows_render(squares, monkeypatch):
    """A row's strips are encoded (and its card made) on the cards thread, not the render
    worker, so DALI renders the next row meanwhile; every card still arrives, in render
    order, before the gallery says it is done."""
    import dali_gallery.gallery.view as view_mod

    threads: dict[str, str] = {}
    events: list[tuple[str, str]] = []
    real_strips, real_render = view_mod.row_strips, view_mod.RowRenderer.render

    def strips(result, *args, **kw):
        threads[result.plan.op] = threading.current_thread().name
        events.append(("encoded", result.plan.op))
        return real_strips(result, *args, **kw)

    def render(rows, spec):
        events.append(("rendered", spec.name))
        return real_render(rows, spec)

    monkeypatch.setattr(view_mod, "row_strips", strips)
    monkeypatch.setattr(view_mod.RowRenderer, "render", render)
    view = GalleryView(device="cpu", size=128, max_images=2)
    view.category.value = "color"
    view.set_arrays(squares, ["a", "b"])
    assert view.wait_idle(120), view.status.value
    rendered = [op for what, op in events if what == "rendered"]
    assert set(threads) == set(view.visible) == set(rendered)
    assert set(threads.values()) == {"dali-gallery-cards_0"}
    assert [op for what, op in events if what == "encoded"] == rendered  # render order
    assert view.shown() == view.visible and "operators in" in view.status.value
    view.close()


def test_a_card_that_cannot_be_encoded_is_reported(squares, monkeypatch):
    import dali_gallery.gallery.view as view_mod

    def broken(result, *args, **kw):
        raise OSError(f"no encoder for {result.plan.op}")

    monkeypatch.setattr(view_mod, "row_strips", broken)
    view = GalleryView(device="cpu", size=128, max_images=1)
    view.search.value = "brightness"
    view.set_arrays(squares[:1])
    assert view.wait_idle(60)
    assert "gallery render failed: OSError: no encoder for brightness" in view.status.value
    assert view.shown() == []
    view.close()
