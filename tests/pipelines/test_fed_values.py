"""The preview's run-time values go in as one input each, handed to DALI's backend as tensors
made once per document (issue 13: ten ``feed_input`` calls per render cost ~1 ms on an H100 host;
one vector sliced in the graph cost ~0.3 ms of DALI's run on an H200). The layout, the tensors
and the generated ``P`` agree, and a preview fed this way renders exactly what the values say."""

from __future__ import annotations

import numpy as np

from dali_gallery.pipelines.codegen import Feed, preview_module
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.fed_values import PREFIX, feed, layout, module_source, tensors
from dali_gallery.pipelines.preset import Preset, Uniform, new_step

FEEDS = [Feed("s0_angle_range", 0, "angle", "FLOAT", "range", None, 2),
         Feed("s1_vertical", 1, "vertical", "INT32", "value"),
         Feed("s2_weights", 2, "weights", "FLOAT", "weights", None, 3),
         Feed("s3_probability", 3, "probability", "FLOAT", "probability")]


def test_each_value_is_a_tensor_of_its_own_type_and_width():
    table = layout(FEEDS)
    assert table == {"s0_angle_range": ("FLOAT", 2), "s1_vertical": ("INT32", 0),
                     "s2_weights": ("FLOAT", 3), "s3_probability": ("FLOAT", 0)}
    values = {"s0_angle_range": np.tile(np.float32([-5, 5]), (4, 1)),
              "s1_vertical": np.array([0, 1, 0, 1], np.int64),  # cast to the input's type
              "s2_weights": np.tile(np.float32([0.2, 0.3, 0.5]), (4, 1)),
              "s3_probability": np.arange(4, dtype=np.float64) / 4}
    fed = tensors(values, table, 4)
    assert set(fed) == {PREFIX + name for name in table}
    for name, (dtype, width) in table.items():
        array = np.asarray(fed[PREFIX + name].as_tensor())
        assert array.dtype == (np.float32 if dtype == "FLOAT" else np.int32)
        assert array.shape == ((4,) if width == 0 else (4, width))  # a scalar per sample
        assert np.array_equal(array, values[name])


def test_the_generated_module_carries_the_same_layout():
    code, chain = preview_module(Preset([new_step("rotate", angle=Uniform(-5.0, 5.0)),
                                         new_step("flip", vertical=True)]))
    namespace: dict = {}
    exec(module_source(layout(chain.feeds)), namespace)  # the table and P, nothing else
    assert module_source(layout(chain.feeds)) in code
    assert namespace["FED"] == layout(chain.feeds)
    namespace["FED_NODES"].update({name: f"node {name}" for name in namespace["FED"]})
    assert [namespace["P"](name, t) for name, (t, _) in namespace["FED"].items()] == \
        [f"node {name}" for name in namespace["FED"]]


def test_feed_hands_tensors_to_the_backend_and_the_rest_to_feed_input():
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=3, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def two_inputs():
        a = fn.external_source(name=PREFIX + "a", dtype=types.FLOAT)
        b = fn.external_source(name="b", dtype=types.INT32)
        return a * 2, b + 1

    pipe = two_inputs()
    pipe.build()
    values = {"a": np.float32([[1, 2], [3, 4], [5, 6]])}
    fed = tensors(values, {"a": ("FLOAT", 2)}, 3)
    for k in range(2):  # the same tensors feed every run
        feed(pipe, {**fed, "b": [np.int32([k]), np.int32([k + 1]), np.int32([k + 2])]})
        a, b = pipe.run()
        assert np.array_equal(np.asarray(a.as_tensor()), values["a"] * 2)
        assert np.asarray(b.as_tensor()).ravel().tolist() == [k + 1, k + 2, k + 3]
    del pipe


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
