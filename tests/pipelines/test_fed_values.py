"""The preview's run-time values go in as one vector per type (issue 13: ten ``feed_input`` calls
per render cost ~1 ms on an H100 host). The layout, the packing and the generated ``P`` agree,
and a preview fed this way renders exactly what the values say."""

from __future__ import annotations

import numpy as np

from dali_gallery.pipelines.codegen import Feed, preview_module
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.fed_values import layout, module_source, pack, widths
from dali_gallery.pipelines.preset import Preset, Uniform, new_step

FEEDS = [Feed("s0_angle_range", 0, "angle", "FLOAT", "range", None, 2),
         Feed("s1_vertical", 1, "vertical", "INT32", "value"),
         Feed("s2_weights", 2, "weights", "FLOAT", "weights", None, 3),
         Feed("s3_probability", 3, "probability", "FLOAT", "probability")]


def test_each_value_has_its_own_slice_of_its_type_s_vector():
    table = layout(FEEDS)
    assert table == {"s0_angle_range": ("FLOAT", 0, 2), "s1_vertical": ("INT32", 0, 0),
                     "s2_weights": ("FLOAT", 2, 3), "s3_probability": ("FLOAT", 5, 0)}
    assert widths(table) == {"FLOAT": 6, "INT32": 1}
    values = {"s0_angle_range": np.tile(np.float32([-5, 5]), (4, 1)),
              "s1_vertical": np.array([0, 1, 0, 1], np.int32),
              "s2_weights": np.tile(np.float32([0.2, 0.3, 0.5]), (4, 1)),
              "s3_probability": np.arange(4, dtype=np.float32) / 4}
    packed = pack(values, table, 4)
    assert set(packed) == {"fed_FLOAT", "fed_INT32"}
    assert packed["fed_FLOAT"].dtype == np.float32 and packed["fed_INT32"].dtype == np.int32
    assert np.array_equal(packed["fed_FLOAT"][:, 0:2], values["s0_angle_range"])
    assert np.array_equal(packed["fed_FLOAT"][:, 2:5], values["s2_weights"])
    assert np.array_equal(packed["fed_FLOAT"][:, 5], values["s3_probability"])
    assert np.array_equal(packed["fed_INT32"][:, 0], values["s1_vertical"])


def test_the_generated_module_carries_the_same_layout():
    code, chain = preview_module(Preset([new_step("rotate", angle=Uniform(-5.0, 5.0)),
                                         new_step("flip", vertical=True)]))
    namespace: dict = {}
    exec(module_source(layout(chain.feeds)), namespace)  # the table and P, nothing else
    assert module_source(layout(chain.feeds)) in code
    assert namespace["FED"] == {n: (s, w) for n, (_, s, w) in layout(chain.feeds).items()}
    assert set(namespace["FED_TYPES"]) == {"FLOAT", "INT32"}


def test_a_fed_preview_renders_what_the_values_say():
    """Per-sample values through the packed vectors: a sweep of a flip and of a brightness
    gives, tile by tile, what a literal render of each value gives."""
    image = (np.arange(24 * 32 * 3) % 251).astype(np.uint8).reshape(24, 32, 3)
    engine = PreviewEngine("cpu", num_threads=1)
    try:
        engine.set_arrays([image])
        sweep = engine.render_sweep(new_step("flip", vertical=False), "horizontal",
                                    [True, False])  # an INT32 value, per sample
        for k, value in enumerate([True, False]):
            alone = engine.render(Preset([new_step("flip", horizontal=value, vertical=False)]))
            assert np.array_equal(sweep.images[k], alone.images[0])
        assert not np.array_equal(sweep.images[0], sweep.images[1])
        bright = engine.render_sweep(new_step("brightness", brightness=1.0), "brightness",
                                     [0.5, 1.5])
        for k, value in enumerate([0.5, 1.5]):
            alone = engine.render(Preset([new_step("brightness", brightness=value)]))
            assert np.array_equal(bright.images[k], alone.images[0])
    finally:
        engine.close()
