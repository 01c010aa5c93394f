"""The Python steps of a generated chain run as plain Python. A chain with a step that fires at
random is traced through DALI's AutoGraph, which converts every function the trace calls and
every function those define; a converted function sends each call it makes through AutoGraph's
converter (the label step took 6.5 ms a batch of 8 instead of 0.4 on the 2-core CPU). So the
functions DALI is handed to run, the label step's and a custom operator's, must come out of
the trace unconverted."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from nvidia.dali import fn
from nvidia.dali.pipeline import do_not_convert

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.label_render import SampleLabels
from dali_gallery.pipelines.params import Param
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import Preset, Step


@pytest.fixture
def handed(monkeypatch: pytest.MonkeyPatch) -> list[Callable[..., Any]]:
    """The functions the traces hand to ``fn.python_function``."""
    seen: list[Callable[..., Any]] = []
    real = fn.python_function

    @do_not_convert  # the recorder itself is called inside the trace
    def record(*args: Any, function: Callable[..., Any], **kwargs: Any) -> Any:
        seen.append(function)
        return real(*args, function=function, **kwargs)

    monkeypatch.setattr(fn, "python_function", record)
    return seen


@pytest.fixture
def engine() -> Iterator[PreviewEngine]:
    e = PreviewEngine("cpu", num_threads=2, cache=PipelineCache(None))
    yield e
    e.close()


def converted(function: Callable[..., Any]) -> bool:
    """AutoGraph's rewrite reaches its ``ag__`` module through a closure, from a file of its
    own."""
    code = function.__code__
    return "ag__" in (*code.co_names, *code.co_freevars) or "autograph" in code.co_filename


def step(op: str, probability: float = 1.0, **params: Any) -> Step:
    return Step(op, {**CATALOG[op].defaults(), **params}, probability=probability)


def test_the_label_step_of_a_chain_with_random_steps_is_not_converted(engine, handed):
    img = np.zeros((48, 64, 3), np.uint8)
    img[8:24, 16:40] = 255
    labels = SampleLabels(np.array([[0.25, 1 / 6, 0.625, 0.5]], np.float32),
                          np.array([3], np.int32), np.zeros((1, 0, 3), np.float32), None)
    engine.set_arrays([img])
    engine.set_labels([labels])
    render = engine.render(Preset([step("rotate", 0.5, angle=30.0),
                                   step("random_resized_crop", 0.5, size=32)]), draws=4)
    assert handed and not [f for f in handed if converted(f)]
    assert render.labels is not None and len(render.labels) == 4
    assert all(len(out.labels.boxes) <= 1 for out in render.labels)


def test_a_custom_operator_in_a_chain_with_random_steps_is_not_converted(engine, handed,
                                                                        caplog):
    """AutoGraph cannot rewrite the wrapper of a custom function (it defines a class) and
    said so in a warning on every trace; the wrapper is now kept out of it."""
    catalog = Catalog(list(CATALOG.values()))
    level = Param("level", "float", 0.5, "A value", bounds=(0, 1), slider=(0, 1), step=0.01,
                  runtime=True)

    @custom_op("custom.test_plain_python", "Darkens.", params=(level,), catalog=catalog)
    def darken(image, level):
        return (image * (1.0 - float(level))).astype(np.uint8)

    engine.catalog = catalog
    engine.set_arrays([np.full((32, 48, 3), 200, np.uint8)])
    preset = Preset([Step("custom.test_plain_python", {"level": 0.5}, probability=0.5),
                     step("flip", 0.5)])
    with caplog.at_level(logging.WARNING):
        render = engine.render(preset, draws=4)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert handed and not [f for f in handed if converted(f)]
    assert {int(i.max()) for i in render.images} <= {100, 200}
