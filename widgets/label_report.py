"""What a chain did to one tile's boxes, read from the render's own kept fractions.

The engine returns, per moving step, the fraction of its area each entering box kept
(:class:`~dali_gallery.pipelines.label_render.LabelOutput`); a box below the threshold is
dropped there, so the next step's entries are the survivors. Following that chain of entries
says which input box each output box is, which ones a step clipped (drawn dashed) and which it
dropped, and by how much, without recomputing any geometry here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any

import numpy as np

from dali_gallery.pipelines.label_code import TAIL_KEPT
from dali_gallery.pipelines.label_render import LabelOutput, SampleLabels
from dali_gallery.pipelines.preset import Group, Preset

from .label_overlay import TileLabels, caption_text

WHOLE = 1.0 - 1e-6
"""A kept fraction at or above this is a whole box (float32 rounding of 1)."""
NAMED_BELOW = 0.5
"""Clipped boxes keeping less than this of their area are named in the step's line."""
MAX_ROWS = 40
"""Boxes listed in the inspector's table (the rest are counted)."""


@dataclass
class StepBoxes:
    """One moving step on one sample: its entering boxes (input indices) and their fate."""

    key: tuple[int, int | None]
    entering: list[int]
    kept: np.ndarray
    dropped: list[int] = field(default_factory=list)
    clipped: list[int] = field(default_factory=list)


@dataclass
class BoxTrack:
    """The boxes of one sample through the chain. ``survivors[k]``: the input index of output
    box k, and ``clipped[k]`` whether a step cut it; both None when the render's entries do not
    add up (then nothing is claimed)."""

    steps: list[StepBoxes]
    survivors: list[int] | None
    clipped: np.ndarray | None
    least: dict[int, float]
    """Input index -> the smallest fraction of its area it kept at any step."""
    dropped_at: dict[int, tuple[int, int | None]]
    """Input index -> the step that dropped it."""


def track(n_in: int, output: LabelOutput, min_kept: float) -> BoxTrack:
    """Follow ``n_in`` input boxes through the kept fractions of ``output``."""
    alive = list(range(n_in))
    least = {i: 1.0 for i in alive}
    dropped_at: dict[int, tuple[int, int | None]] = {}
    steps: list[StepBoxes] = []
    consistent = True
    for key, kept in output.kept.items():
        kept = np.asarray(kept, np.float32).reshape(-1)
        if len(kept) != len(alive):
            consistent = False
            break
        step = StepBoxes(key, list(alive), kept)
        survivors = []
        for i, k in zip(alive, kept.tolist(), strict=True):
            least[i] = min(least[i], k)
            if k < min_kept:
                step.dropped.append(i)
                dropped_at[i] = key
            else:
                survivors.append(i)
                if k < WHOLE:
                    step.clipped.append(i)
        steps.append(step)
        alive = survivors
    if not consistent or len(alive) != len(output.labels.boxes):
        return BoxTrack(steps, None, None, least, dropped_at)
    clipped = np.array([least[i] < WHOLE for i in alive], bool)
    return BoxTrack(steps, alive, clipped, least, dropped_at)


def tile_labels(output: LabelOutput, clipped: np.ndarray | None) -> TileLabels:
    """What the overlay draws on a rendered tile."""
    labels = output.labels
    return TileLabels(labels.boxes, labels.classes, labels.keypoints, labels.mask, clipped)


def input_tile_labels(labels: SampleLabels) -> TileLabels:
    """What the overlay draws on an original."""
    return TileLabels(labels.boxes, labels.classes, labels.keypoints, labels.mask)


def step_name(preset: Preset, key: tuple[int, int | None]) -> str:
    """``step 2 (crop)``, or ``step 3.1 (rotate)`` for a group's child, or the training
    output's centre crop."""
    if key == TAIL_KEPT:
        return "training output (centre crop)"
    step, child = key
    if not 0 <= step < len(preset.steps):
        return f"step {step}"
    entry: Any = preset.steps[step]
    if child is not None and isinstance(entry, Group) and 0 <= child < len(entry.children):
        return f"step {step}.{child} ({entry.children[child].op})"
    return f"step {step} ({getattr(entry, 'op', 'group')})"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 'es' if word.endswith('x') else 's'}"


def _named(indices: list[int], kept: dict[int, float], classes: np.ndarray,
           names: Mapping[int, str]) -> str:
    parts = [f"{caption_text(int(classes[i]), names)}, kept {kept[i] * 100:.0f} % of its area"
             for i in indices]
    return "; ".join(parts)


def step_lines(result: BoxTrack, classes: np.ndarray, names: Mapping[int, str],
               preset: Preset) -> list[str]:
    """One plain-text line per moving step that clipped or dropped a box, e.g. ``step 2
    (crop): dropped 1 box (person, kept 10 % of its area)``."""
    lines = []
    for s in result.steps:
        if not s.dropped and not s.clipped:
            continue
        fraction = {i: float(k) for i, k in zip(s.entering, s.kept.tolist(), strict=True)}
        parts = []
        if s.dropped:
            parts.append(f"dropped {_plural(len(s.dropped), 'box')} "
                         f"({_named(s.dropped, fraction, classes, names)})")
        if s.clipped:
            low = [i for i in s.clipped if fraction[i] < NAMED_BELOW]
            text = f"clipped {_plural(len(s.clipped), 'box')}"
            if low:
                text += f" ({_named(low, fraction, classes, names)})"
            parts.append(text)
        lines.append(f"{step_name(preset, s.key)}: {', '.join(parts)}")
    return lines


def _ltrb(box: np.ndarray, shape: tuple[int, ...]) -> str:
    h, w = shape[:2]
    left, top, right, bottom = (float(v) for v in np.asarray(box) * [w, h, w, h])
    return f"{left:.0f}, {top:.0f}, {right:.0f}, {bottom:.0f}"


def labels_html(before: SampleLabels, before_shape: tuple[int, ...], output: LabelOutput,
                after_shape: tuple[int, ...], names: Mapping[int, str], preset: Preset,
                min_kept: float) -> str:
    """The inspector's labels section: what each moving step clipped or dropped, then one row
    per input box with its box before (pixels of the original) and after (pixels of the
    tile). Category names come from uploaded files: escaped."""
    result = track(len(before.boxes), output, min_kept)
    lines = step_lines(result, before.classes, names, preset)
    head = ("".join(f"<div>{escape(line)}</div>" for line in lines) if lines else
            "<div style='opacity:.75'>no box clipped or dropped by this chain</div>")
    bh, bw = before_shape[:2]
    ah, aw = after_shape[:2]
    rows = []
    if result.survivors is not None:
        where = {i: k for k, i in enumerate(result.survivors)}
        for i in range(min(len(before.boxes), MAX_ROWS)):
            name = escape(caption_text(int(before.classes[i]), names))
            if i in where:
                k = where[i]
                after = _ltrb(output.labels.boxes[k], after_shape)
                state = (f"clipped (kept {result.least[i] * 100:.0f} % at worst)"
                         if result.least[i] < WHOLE else "whole")
            else:
                after = "&ndash;"
                state = f"dropped at {escape(step_name(preset, result.dropped_at[i]))}" \
                    if i in result.dropped_at else "dropped"
            rows.append(f"<tr><td>{name}</td><td>{_ltrb(before.boxes[i], before_shape)}</td>"
                        f"<td>{after}</td><td>{state}</td></tr>")
        more = len(before.boxes) - MAX_ROWS
    else:  # the entries do not add up: list both sides, unmatched
        out = output.labels
        for k in range(max(len(before.boxes), len(out.boxes))):
            if k >= MAX_ROWS:
                break
            left = (f"{escape(caption_text(int(before.classes[k]), names))}: "
                    f"{_ltrb(before.boxes[k], before_shape)}" if k < len(before.boxes) else "")
            right = (f"{escape(caption_text(int(out.classes[k]), names))}: "
                     f"{_ltrb(out.boxes[k], after_shape)}" if k < len(out.boxes) else "")
            rows.append(f"<tr><td></td><td>{left}</td><td>{right}</td><td></td></tr>")
        more = max(len(before.boxes), len(out.boxes)) - MAX_ROWS
    if more > 0:
        rows.append(f"<tr><td colspan='4' style='opacity:.7'>&hellip; {more} more</td></tr>")
    table = ('<table style="font-size:12px;border-collapse:collapse" cellpadding="2">'
             f"<tr><th>box</th><th>before: l, t, r, b (px of {bw}&times;{bh})</th>"
             f"<th>after (px of {aw}&times;{ah})</th><th></th></tr>{''.join(rows)}</table>"
             if rows else "<div style='opacity:.75'>no boxes on this image</div>")
    return (f'<div class="dg-inspector-labels" style="font-size:12px"><b>labels</b> '
            f"({len(before.boxes)} in, {len(output.labels.boxes)} out; boxes keeping less "
            f"than {min_kept * 100:.0f} % of their area are dropped){head}{table}</div>")


def dropped_counts(outputs: list[LabelOutput], min_kept: float) -> dict[tuple[int, int | None],
                                                                        int]:
    """Boxes each moving step dropped, summed over samples (the distribution view)."""
    total: dict[tuple[int, int | None], int] = {}
    for out in outputs:
        for key, n in out.dropped(min_kept).items():
            total[key] = total.get(key, 0) + n
    return total
