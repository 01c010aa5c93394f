"""Following boxes through a render's kept fractions: which step clipped or dropped which box,
and which input box each output box is (no geometry recomputed)."""

from __future__ import annotations

import numpy as np

from dali_gallery.pipelines.label_code import TAIL_KEPT
from dali_gallery.pipelines.label_render import LabelOutput, SampleLabels
from dali_gallery.pipelines.preset import Group, Preset, Step
from dali_gallery.widgets.label_report import dropped_counts, labels_html, step_lines, track

NAMES = {1: "person", 2: "dog", 3: "<b>cat</b>"}


def out(boxes: list[list[float]], classes: list[int],
        kept: dict[tuple[int, int | None], list[float]]) -> LabelOutput:
    return LabelOutput(SampleLabels(np.array(boxes, np.float32).reshape(-1, 4), classes),
                       {k: np.array(v, np.float32) for k, v in kept.items()})


def preset() -> Preset:
    group = Group([Step("flip", {}), Step("rotate", {})])
    return Preset([Step("hue", {}), Step("crop", {}), group], seed=1)


def test_track_follows_survivors_through_steps():
    o = out([[0.1, 0.1, 0.2, 0.2], [0.5, 0.5, 0.9, 0.9]], [1, 3],
            {(1, None): [1.0, 0.1, 0.6], (2, 1): [0.4, 1.0]})
    t = track(3, o, 0.25)
    assert t.survivors == [0, 2] and t.clipped.tolist() == [True, True]
    assert t.dropped_at == {1: (1, None)}
    assert [s.dropped for s in t.steps] == [[1], []]
    assert [s.clipped for s in t.steps] == [[2], [0]]
    lines = step_lines(t, np.array([1, 2, 3]), NAMES, preset())
    assert lines == ["step 1 (crop): dropped 1 box (dog, kept 10 % of its area), clipped 1 box",
                     "step 2.1 (rotate): clipped 1 box (person, kept 40 % of its area)"]
    assert dropped_counts([o, o], 0.25) == {(1, None): 2, (2, 1): 0}


def test_the_training_output_s_centre_crop_is_named_after_the_steps():
    o = out([[0.4, 0.4, 0.6, 0.6]], [2], {(1, None): [1.0, 0.7], TAIL_KEPT: [0.0, 1.0]})
    t = track(2, o, 0.25)
    assert t.survivors == [1] and t.dropped_at == {0: TAIL_KEPT}
    lines = step_lines(t, np.array([1, 2]), NAMES, preset())
    assert lines == ["step 1 (crop): clipped 1 box",
                     "training output (centre crop): dropped 1 box (person, kept 0 % of its "
                     "area)"]
    assert dropped_counts([o], 0.25) == {(1, None): 0, TAIL_KEPT: 1}


def test_entries_that_do_not_add_up_claim_nothing():
    o = out([[0.1, 0.1, 0.2, 0.2]], [1], {(1, None): [1.0]})
    t = track(2, o, 0.25)  # two boxes in, one kept fraction: not this render's boxes
    assert t.survivors is None and t.clipped is None


def test_html_escapes_names_and_lists_before_and_after():
    before = SampleLabels(np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1]], np.float32), [3, 2])
    o = out([[0, 0, 1, 1]], [3], {(1, None): [1.0, 0.05]})
    text = labels_html(before, (100, 200, 3), o, (50, 50, 3), NAMES, preset(), 0.25)
    assert "<b>cat</b>" not in text and "&lt;b&gt;cat&lt;/b&gt;" in text
    assert "0, 0, 100, 50" in text and "0, 0, 50, 50" in text  # pixels of each side
    assert "dropped at step 1 (crop)" in text and "2 in, 1 out" in text
