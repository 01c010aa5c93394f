"""The inspector shows DALI's own pixels for the tile large, the original beside it, and never
keeps showing a tile of images that are no longer loaded."""

from __future__ import annotations

import io
from html import escape

import numpy as np
from PIL import Image

from dali_gallery.widgets.zoom import ZoomView, css_times, original_factor
from tests.support import SAMPLES
from tests.widgets.conftest import settle


def png_pixels(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def test_the_large_view_is_the_rendered_tile_and_the_original_pixel_for_pixel(builder):
    builder.add_step("rotate", angle=30.0, keep_size=False)  # a larger canvas than the input
    settle(builder)
    builder.inspect(1, 1)
    result = builder.last_result
    zoom = builder.inspector.zoom
    tile, original = result.render.tile(1, 1), result.originals[1]
    assert np.array_equal(png_pixels(zoom.large.value), tile)
    assert np.array_equal(png_pixels(zoom.original.value), original)
    assert max(tile.shape[:2]) > max(original.shape[:2])
    # same scale: the original's box is smaller by the ratio of the longer sides
    factor = max(original.shape[:2]) / max(tile.shape[:2])
    assert zoom.original.layout.width == css_times(zoom.large.layout.width, factor)
    assert f"{tile.shape[1]}&times;{tile.shape[0]} px" in zoom.large_caption.value


def test_box_sides_keep_one_scale_unless_the_original_would_not_fit():
    assert original_factor((256, 256), (256, 256)) == 1.0
    assert original_factor((362, 362), (256, 256)) == 256 / 362  # rotate, expanded canvas
    assert original_factor((64, 64), (512, 256)) == 1.0  # a small crop: shown no larger
    assert css_times("400px", 0.5) == "200.00px"
    assert css_times("min(10cqw, 40px)", 0.5) == "calc(min(10cqw, 40px) * 0.5000)"


def test_loading_other_images_clears_the_inspector(builder):
    """It used to keep showing image 2 of the old set when the new set had one image."""
    builder.inspect(2, 1)
    old_name = builder.last_result.names[2]
    assert old_name in builder.inspector.title.value
    builder.set_images([("mine.jpg", (SAMPLES / "coffee.jpg").read_bytes())])
    settle(builder)
    inspector = builder.inspector
    assert inspector.selected is None and inspector.widget.layout.display == "none"
    assert old_name not in inspector.title.value and inspector.reports == []
    assert bytes(inspector.zoom.large.value) == b"" and bytes(inspector.histogram.value) == b""


def test_the_same_number_of_other_images_also_clears_it(builder):
    builder.inspect(0, 0)
    assert builder.inspector.selected == (0, 0)
    builder.set_images(sorted(SAMPLES.glob("*.jpg"))[-3:])
    settle(builder)
    assert builder.inspector.selected is None
    assert builder.inspector.widget.layout.display == "none"


def test_a_closed_zoom_view_drops_its_images():
    closed: list[bool] = []
    zoom = ZoomView(on_close=lambda: closed.append(True))
    tile = np.zeros((20, 40, 3), dtype=np.uint8)
    zoom.show(tile, tile, title="a <b>name</b>", key=("x",))
    assert zoom.shown == ("x",) and "&lt;b&gt;" in zoom.title.value
    assert zoom.large.layout.width == "400px"  # a square box: the stylesheet's aspect-ratio
    zoom.close_button.click()
    assert closed == [True] and zoom.shown is None and bytes(zoom.large.value) == b""
    assert zoom.widget.layout.display == "none"


def test_a_tile_of_the_chw_training_output_is_named_by_its_width_and_height(builder):
    """The tail's default CHW layout made the title and caption read (3, 96, 80) as 96x3."""
    from dali_gallery.widgets.builder_layout import _show_tail

    builder.load_preset({"format": "dali-gallery/preset", "version": 1, "seed": 9,
                         "steps": [{"op": "hue", "params": {"hue": 30.0}}],
                         "output": {"resize_shorter": 100, "crop": [96, 80],
                                    "mean": [0.5, 0.5, 0.5], "std": [0.2, 0.2, 0.2],
                                    "layout": "CHW", "dtype": "float32"}})
    _show_tail(builder, True)
    settle(builder)
    builder.inspect(0, 1)
    tile = builder.last_result.render.tile(0, 1)
    assert tile.shape == (3, 96, 80)
    assert builder.inspector.title.value.endswith(" &middot; 80x96")
    assert "this tile &middot; 80&times;96 px" in builder.inspector.zoom.large_caption.value
    assert png_pixels(builder.inspector.zoom.large.value).shape == (96, 80, 3)


def test_a_builder_with_its_own_operators_inspects_and_collects_them():
    """The inspector and the Distribution tab used the default catalog: a Builder made with
    its own (a notebook's custom operator) raised KeyError on a click on the tile and could not
    collect ('unknown operator')."""
    from dali_gallery.pipelines.catalog import CATALOG, Catalog
    from dali_gallery.pipelines.custom import custom_op
    from dali_gallery.pipelines.params import Param
    from tests.widgets.conftest import make_builder

    def scaled(image, amount):
        return (image * (1 - amount)).astype(np.uint8)

    catalog = Catalog(list(CATALOG.values()))
    custom_op("custom.test_scaled", "Scales every pixel down.", catalog=catalog, params=(
        Param("amount", "float", 0.5, "how much darker", bounds=(0, 1), slider=(0, 1),
              step=0.01, runtime=True),))(scaled)
    b = make_builder(catalog=catalog, sync=True, autosave=None)
    try:
        settle(b)
        b.add_step("custom.test_scaled", amount={"uniform": [0.1, 0.9]})
        settle(b)
        assert b.last_error is None
        record = b.last_result.render.record(0, 1)
        reports = b.inspect(0, 1)
        assert reports[0].values == [("amount", record.values[0]["amount"], True)]
        assert "custom.test_scaled" in b.inspector.table.value
        b.distribution.sync = True
        assert b.distribution.run(30) and b.distribution.error is None
        (amount,) = b.distribution.sampled
        assert amount.param == "amount" and 0.1 <= amount.values.min() < amount.values.max() < 0.9
    finally:
        b.close()


def test_a_policy_tile_names_the_operation_bin_and_sign_it_drew(builder):
    """The policies' own draws are recorded for the inspector, but it listed only their
    fixed parameters: a trivial_augment tile never said which operation it got."""
    from dali_gallery.pipelines.catalog import CATALOG

    builder.load_preset({"format": "dali-gallery/preset", "version": 1, "seed": 5, "steps": [
        {"op": "trivial_augment", "params": {}},
        {"one_of": [{"op": "rand_augment", "params": {"n": 2, "m": 9}},
                    {"op": "auto_augment", "params": {}}], "pick": 2}], "output": None})
    settle(builder)
    record = builder.last_result.render.record(0, 1)
    trivial, _, rand, auto = builder.inspect(0, 1)
    ops = next(d for d in CATALOG["trivial_augment"].draws if d.name == "op").labels({})
    assert ("op", ops[record.values[0]["op"]], True) in trivial.values
    assert ("magnitude_bin", record.values[0]["magnitude_bin"], True) in trivial.values
    drawn = record.child_values[1]
    rand_ops = next(d for d in CATALOG["rand_augment"].draws if d.name == "op").labels(
        {"n": 2, "m": 9})
    assert [v for n, v, _ in rand.values if n.startswith("op_")] == [
        rand_ops[drawn[0]["op_1"]], rand_ops[drawn[0]["op_2"]]]
    (sub_policy,) = [v for n, v, _ in auto.values if n == "sub_policy"]
    assert " + " in sub_policy
    assert f"op=<b>{escape(ops[record.values[0]['op']])}</b>*" in builder.inspector.table.value
