"""The engine works out a preset's validation, module and budget plan once per document: a
drag re-renders one chain with new fed values only (issue 13: on an H100 these checks took
2.2 ms of Python per render, more than the bare DALI run). What a render depends on is in the
key, and a failing check is never remembered."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dali_gallery.pipelines import budget as budget_mod
from dali_gallery.pipelines import render_memo
from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import Preset, PresetError, load, new_step
from dali_gallery.pipelines.preset_validate import document_of
from dali_gallery.pipelines.render_budget import BudgetError
from dali_gallery.pipelines.render_memo import RenderMemo, document_key
from tests.support import SAMPLES, preset_dict


@pytest.fixture
def engine():
    e = PreviewEngine("cpu", num_threads=2)
    assert e.set_images(SAMPLES) == []
    yield e
    e.close()


@pytest.fixture
def counted(monkeypatch) -> list[int]:
    """How often the memo validated a preset."""
    calls = [0]

    def counting(source, catalog=CATALOG):
        calls[0] += 1
        return load(source, catalog)

    monkeypatch.setattr(render_memo, "load", counting)
    return calls


def test_a_drag_validates_the_preset_once_and_renders_every_value(engine: PreviewEngine,
                                                                   counted) -> None:
    preset = Preset([new_step("rotate", angle=5.0), new_step("hsv", hue=10.0)])
    first = engine.render(preset).images[0]
    outputs = [first]
    for angle in (15.0, 25.0):
        preset.steps[0].params["angle"] = angle  # each value: a new document, validated
        outputs.append(engine.render(preset).images[0])
    for _ in range(3):  # the same document again: remembered
        assert np.array_equal(engine.render(preset).images[0], outputs[-1])
    assert counted[0] == 3
    assert not np.array_equal(outputs[0], outputs[1]) and not np.array_equal(outputs[1],
                                                                             outputs[2])
    preset.steps[0].params["angle"] = 5.0
    again = load(json.loads(json.dumps(document_of(preset))))  # an equal document: remembered
    assert np.array_equal(engine.render(again).images[0], first)
    assert counted[0] == 3


def test_an_invalid_preset_is_refused_on_every_render(engine: PreviewEngine, counted) -> None:
    bad = preset_dict([{"op": "rotate", "params": {"angle": "wide"}}])
    for _ in range(2):
        with pytest.raises(PresetError, match="angle"):
            engine.render(bad)
    assert counted[0] == 2


def test_a_render_over_the_budget_is_refused_every_time(engine: PreviewEngine) -> None:
    """The plan is remembered, the check against the budget (and the kernel's ledger) is
    not: lowering the budget refuses a render that passed before."""
    preset = Preset([new_step("paste", ratio=3.0)])
    engine.render(preset)
    try:
        budget_mod.configure(budget_mod.Budget(render_pixels=1_000_000))
        for _ in range(2):
            with pytest.raises(BudgetError) as caught:
                engine.render(preset)
            assert caught.value.op == "paste" and caught.value.param == "ratio"
    finally:
        budget_mod.configure(None)
    assert engine.render(preset).images[0].ndim == 3


def test_the_key_names_the_document_and_the_catalog_entries_it_uses() -> None:
    doc = preset_dict([{"op": "rotate", "params": {"angle": 5.0}}])
    key = document_key(doc, CATALOG)
    assert key is not None and document_key(json.loads(json.dumps(doc)), CATALOG) == key
    assert document_key(load(doc), CATALOG) == document_key(load(doc), CATALOG)
    other = dict(CATALOG)
    other["rotate"] = CATALOG["rotate"].__class__(**{**vars(CATALOG["rotate"])})
    assert document_key(doc, other) != key  # an operator registered again: validated again
    assert document_key(preset_dict([{"op": "rotate", "params": {"angle": 6.0}}]),
                        CATALOG) != key
    assert document_key("preset.json", CATALOG) is None  # a file may change: never remembered
    assert document_key({"steps": [{"op": "rotate", "params": {"angle": float("nan")}}]},
                        CATALOG) is None


def test_the_memo_is_bounded_and_does_not_remember_failures() -> None:
    memo = RenderMemo(size=2)
    for k in range(5):
        assert memo.derived(k, lambda k=k: k * k) == k * k
    assert len(memo._derived) == 2
    calls = []

    def failing():
        calls.append(1)
        raise ValueError("no")

    for _ in range(2):
        with pytest.raises(ValueError):
            memo.derived("x", failing)
    assert len(calls) == 2
    assert memo.derived(None, lambda: 7) == 7 and None not in memo._derived
