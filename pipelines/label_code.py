"""The lines that carry labels through a generated chain, from each operator's label rule.

:mod:`pipelines.codegen` asks :func:`step_label_lines` for the statements of one step when the
chain has labels; the rules themselves are declared in the catalog (:mod:`pipelines.labels`),
and the graph functions they call live in :mod:`pipelines.label_helpers`. Nothing here names
an operator.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .labels import (
    DEFAULT_MIN_KEPT,
    FRAMES,
    BoxCrop,
    Flip,
    Keep,
    Overrides,
    Refuse,
    Scale,
    Warp,
)
from .opspec import PLACEHOLDER, OpSpec
from .preset import Preset, Step

LABEL_VARS = ("boxes", "classes", "keypoints", "masks")
"""The chain's label variables (``masks`` only where the dataset has masks)."""
TAIL_KEPT = (-1, None)
"""Key of the training tail's centre crop among a render's kept fractions (after the steps')."""


@dataclass(frozen=True)
class LabelSet:
    """Which labels a chain carries, and its drop threshold."""

    masks: bool = False
    min_kept: float = DEFAULT_MIN_KEPT
    after_run: bool = False
    """The preview's boxes and keypoints move after the run (:func:`after_run_possible`)."""

    @property
    def names(self) -> tuple[str, ...]:
        return LABEL_VARS if self.masks else LABEL_VARS[:3]

    @property
    def graph_names(self) -> tuple[str, ...]:
        """The label variables the graph carries: after the run, only the masks (pixels)."""
        if not self.after_run:
            return self.names
        return ("masks",) if self.masks else ()

    def unpack(self) -> list[str]:
        """The line that takes the graph's labels apart (none when it carries none)."""
        names = self.graph_names
        return [f"{', '.join(names)}{',' if len(names) == 1 else ''} = labels"] if names else []


@dataclass(frozen=True)
class Move:
    """A moving step whose label line waits for the next ones (:func:`flush_moves`):
    ``frame`` (a warp's) or ``"mirror"``; ``tag`` its variables' suffix; a flip's flags."""

    tag: str
    frame: str
    horizontal: str = "False"
    vertical: str = "False"
    columns: tuple[str, str, str] | None = None
    """A warp's matrix and the images' shapes before and after (default: its tag's)."""

    @property
    def kind(self) -> tuple[Any, ...]:
        """What :func:`pipelines.label_chain_helpers._moved_chain_batch` is told of it: a
        flip's literal flags (None: a graph value, one of its inputs)."""
        if self.frame != "mirror":
            return (self.frame,)
        return ("mirror", _literal_flag(self.horizontal), _literal_flag(self.vertical))

    def inputs(self) -> list[str]:
        """The graph values it reads, in that function's order (DALI returns no scalar
        constant, so a literal flag is in :attr:`kind` instead)."""
        if self.frame == "mirror":
            return [f for f in (self.horizontal, self.vertical) if _literal_flag(f) is None]
        return list(self.columns or (f"m_{self.tag}", f"before_{self.tag}.shape()",
                                     f"after_{self.tag}.shape()"))


def _literal_flag(text: str) -> bool | None:
    """A flip's flag written as a literal (``True``, ``0``), else None (a graph value)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return bool(value) if isinstance(value, (bool, int, float)) else None


class LabelRefused(ValueError):
    """A step whose operator cannot move labels, in a chain with labels."""

    def __init__(self, step: int, op: str, reason: str) -> None:
        self.step, self.op, self.reason = step, op, reason
        self.detail = (f"cannot be used with labels: {reason}. Remove or disable it, or "
                       "preview without annotations")
        """The message without the step's name (a StepError names it itself)."""
        super().__init__(f"step {step} ({op}) {self.detail}")


def refusals(preset: Preset, catalog: Mapping[str, OpSpec]) -> list[LabelRefused]:
    """Every enabled step (or group child) whose operator cannot move labels exactly."""
    found = []
    for i, step in preset.active_ops():
        rule = catalog[step.op].labels
        if isinstance(rule, Refuse):
            found.append(LabelRefused(i, step.op, rule.reason))
        elif rule is None:
            found.append(LabelRefused(i, step.op, "its catalog entry does not declare what it "
                                      "does to labels"))
    return found


def hoisted(spec: OpSpec, args: dict[str, str], tag: str, masks: bool = False) -> list[str]:
    """Bind fed values the label lines use a second time to variables (a fed name may appear
    once in a graph); updates ``args`` in place and returns the binding lines. ``masks``:
    the chain carries masks (a rule that moves them through the entry's own call uses every
    parameter of the call again)."""
    rule = spec.labels
    templates = rule.templates if rule is not None else ()
    if masks and rule is not None and rule.nearest_masks is not None:
        templates = (*templates, spec.call)
    used = set(PLACEHOLDER.findall(" ".join(templates)))
    lines = []
    for name in sorted(used & set(args)):
        if "P(" in args[name]:
            lines.append(f"{name}_{tag} = {args[name]}")
            args[name] = f"{name}_{tag}"
    return lines


def _nearest_call(spec: OpSpec, args: Mapping[str, str], overrides: Overrides) -> str:
    """The entry's own call on the masks with ``overrides`` (nearest neighbour, fill 0; none
    for a call that resamples nothing)."""
    return spec.call_source({**args, "x": "masks", **dict(overrides)})


def _fill(template: str, args: Mapping[str, str]) -> str:
    return PLACEHOLDER.sub(lambda m: args[m.group(1)], template)


def step_label_lines(spec: OpSpec, call: str, args: dict[str, str], tag: str,
                     labels: LabelSet, moves: list[Move] | None = None) -> tuple[list[str], bool]:
    """The statements that replace ``images = <call>`` for a step in a chain with labels, and
    whether they record kept fractions (``kept_<tag>``). ``args`` maps the call's placeholders
    (``x``, ``seed`` and each parameter) to their sources. ``moves`` (a step without a
    condition): a flip or warp appends its label move there instead of writing it, so that
    consecutive ones share one Python step (:func:`flush_moves`)."""
    rule = spec.labels
    if isinstance(rule, Keep) or (isinstance(rule, Scale) and not labels.masks):
        return [f"images = {call}"], False
    if isinstance(rule, Scale) and rule.nearest is not None:
        return [f"images = {call}", f"masks = {_nearest_call(spec, args, rule.nearest)}"], False
    if isinstance(rule, Scale):
        return [f"before_{tag} = images", f"images = {call}",
                f"masks = _warp_mask(masks, _scale_matrix(before_{tag}, images), images)"], False
    if isinstance(rule, Flip):
        h, v = _fill(rule.horizontal, args), _fill(rule.vertical, args)
        lines = [f"images = {call}"]
        if labels.masks:
            lines.append(f"masks = {_nearest_call(spec, args, ())}")  # a mirror resamples nothing
        if moves is not None:
            moves.append(Move(tag, "mirror", h, v))
        else:
            lines.append(_flip_line(h, v))
        return lines, False
    if isinstance(rule, BoxCrop):
        names = "images, boxes, classes, keypoints, kept_" + tag + (", masks" if labels.masks
                                                                   else "")
        fill = {**args, "min_kept": repr(labels.min_kept),
                "masks": "masks" if labels.masks else "None"}
        return [f"{names} = {_fill(rule.call, fill)}"], True
    if not isinstance(rule, Warp):
        raise TypeError(f"{spec.name}: no label lines for {type(rule).__name__}")
    before = f"before_{tag}"
    lines = [f"{before} = images"]
    cuts_masks = labels.masks and "{masks}" in rule.call  # the call moves them itself
    if rule.call:
        outs = f"images, m_{tag}" + (", masks" if cuts_masks else "")
        fill = {**args, "masks": "masks" if cuts_masks else "None"}
        lines.append(f"{outs} = {_fill(rule.call, fill)}")
    else:
        lines.append(f"images = {call}")
        lines.append(f"m_{tag} = {_fill(rule.matrix, {**args, 'x': before, 'out': 'images'})}")
    hom = ", homography=True" if rule.homography else ""
    if labels.masks and rule.nearest is not None:
        lines.append(f"masks = {_nearest_call(spec, args, rule.nearest)}")
    elif labels.masks and not cuts_masks:
        m = _fill(FRAMES[rule.frame], {"m": f"m_{tag}", "before": before, "after": "images"})
        lines.append(f"masks = _warp_mask(masks, {m}, images{hom})")
    if moves is not None:
        moves.append(Move(tag, rule.frame))
        return [*lines, f"after_{tag} = images"], True
    lines.append(_move_line(tag, rule.frame, "images", labels))
    return lines, True


def _move_line(tag: str, frame: str, after: str, labels: LabelSet) -> str:
    """One warp's own Python step (:func:`pipelines.label_helpers._move_labels`)."""
    how = "" if frame == "pixels" else f', frame="{frame}"'
    return (f"boxes, classes, keypoints, kept_{tag} = _move_labels(boxes, classes, keypoints, "
            f"m_{tag}, before_{tag}.shape(), {after}.shape(), {labels.min_kept!r}{how})")


def _flip_line(horizontal: str, vertical: str) -> str:
    """A flip's boxes and keypoints through DALI (:func:`pipelines.label_helpers._flip_labels`)."""
    return f"boxes, keypoints = _flip_labels(boxes, keypoints, {horizontal}, {vertical})"


def flush_moves(moves: list[Move], labels: LabelSet,
                kinds: list[tuple[Any, ...]] | None = None) -> list[str]:
    """The label lines of the moves waiting in ``moves`` (emptied): flips alone through DALI's
    box and point flips, one warp in its own Python step, and a run with a warp and
    anything else in one Python step for all (:mod:`pipelines.label_chain_helpers`).
    ``labels.after_run``: the moves' inputs bound to ``after_run`` for the preview to
    apply after the run, their kinds appended to ``kinds``."""
    pending, moves[:] = list(moves), []
    if labels.after_run:
        assert kinds is not None
        bind = "after_run +=" if kinds else "after_run ="
        kinds.extend(m.kind for m in pending)
        steps = ", ".join(m.tag.replace("_", " child ") for m in pending)
        return [f"# the labels of steps {steps}: moved in that order after the run",
                f"{bind} [{', '.join(c for m in pending for c in m.inputs())}]"]
    warps = [m for m in pending if m.frame != "mirror"]
    if not warps or len(pending) == 1:
        return [_flip_line(m.horizontal, m.vertical) if m.frame == "mirror" else
                _move_line(m.tag, m.frame, f"after_{m.tag}", labels) for m in pending]
    items = ", ".join(f'("mirror", {m.horizontal}, {m.vertical})' if m.frame == "mirror" else
                      f'("{m.frame}", m_{m.tag}, before_{m.tag}, after_{m.tag})'
                      for m in pending)
    kept = ", ".join(f"kept_{m.tag}" for m in warps)
    steps = ", ".join(m.tag.replace("_", " child ") for m in pending)
    return [f"# the labels of steps {steps}: moved in that order, in one Python step",
            f"boxes, classes, keypoints, {kept} = _move_labels_chain(boxes, classes, "
            f"keypoints, [{items}], {labels.min_kept!r})"]


def flush_into(chain: Any) -> None:
    """Write a chain's waiting moves (``chain.moves``) at the end of its body, inside the last
    step's block (``chain.step_lines``: a failure there names that step)."""
    if chain.moves:
        chain.body.extend(flush_moves(chain.moves, chain.labels, chain.after_run_kinds))
        last = next(reversed(chain.step_lines))
        chain.step_lines[last] = (chain.step_lines[last][0], len(chain.body))


def after_run_possible(preset: Preset, catalog: Mapping[str, OpSpec]) -> bool:
    """Whether a preview can move boxes and keypoints after the run: no step reads them in
    the graph (a box-aware crop) or moves them under a condition (a step with a
    probability, a group with such a child). DALI then computes every matrix, shape and
    flag, and the engine applies them with the exported Python step's own NumPy: no
    labels fed, no Python operator (the labels bench's chain with boxes, H100: 2.0x its
    unlabelled render -> 1.7x)."""
    return not any(waits_for_labels(step, catalog) for _, step in preset.active_steps())


def waits_for_labels(step: object, catalog: Mapping[str, OpSpec]) -> bool:
    """Whether moves waiting before ``step`` (a step or a group) must be written first: a
    group with a child that moves or reads boxes, a step under a condition that does, a
    box-aware crop."""
    if not isinstance(step, Step):  # a group: when a child touches boxes (it runs or not)
        return any(not isinstance(catalog[c.op].labels, (Keep, Scale))
                   for _, c in step.active_children())
    rule = catalog[step.op].labels
    return isinstance(rule, BoxCrop) or (step.probability < 1 and isinstance(rule, (Flip, Warp)))


def tail_label_lines(labels: LabelSet, resize: str | None, crop: tuple[int, int] | None,
                     mirror: str | None, kept: bool = False,
                     kinds: list[tuple[Any, ...]] | None = None) -> list[str]:
    """The training tail's geometry with labels: its resize (``resize``: the statement), the
    centre crop ``crop_mirror_normalize`` makes (``crop``: height, width) and its mirror
    (``mirror``: the coin's expression, bound to ``mirror`` for the images' call too). With
    ``kept`` (the preview) the crop's kept fractions are bound to ``kept_tail``, so that the
    inspector can say which boxes the crop dropped (:data:`TAIL_KEPT`); after the run
    (``labels.after_run``) the moves' inputs are bound to ``after_run`` and their kinds
    appended to ``kinds`` instead (:func:`flush_moves`)."""
    lines = labels.unpack()
    if resize and labels.masks:  # relative boxes and keypoints stay (a Scale); masks follow
        lines += ["before_tail = images", resize,
                  "masks = _warp_mask(masks, _scale_matrix(before_tail, images), images)"]
    elif resize:
        lines.append(resize)
    moves: list[Move] = []  # after the run: each move's inputs, written at the end
    if crop:
        lines += [f"masks = fn.crop(masks, crop=({crop[0]}, {crop[1]}), "
                  'out_of_bounds_policy="pad")'] if labels.masks else []  # as the images
        # a centre crop: the identity about the centres
        moves.append(Move("tail", "centres", columns=(
            "_const([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])", "images.shape()",
            f"_const([{crop[0]}.0, {crop[1]}.0])")))
        if not labels.after_run:
            m, shape_in, shape_out = moves[-1].inputs()
            lines.append("boxes, classes, keypoints, " + ("kept_tail" if kept else "_") +
                         f" = _move_labels(boxes, classes, keypoints, {m}, {shape_in}, "
                         f"{shape_out}, {labels.min_kept!r}, frame=\"centres\")")
    if mirror:
        lines.append(f"mirror = fn.cast({mirror}, dtype=types.INT32)")
        lines += ["masks = fn.flip(masks, horizontal=mirror)"] if labels.masks else []
        moves.append(Move("tail", "mirror", "mirror", "0"))
        lines += [] if labels.after_run else [_flip_line("mirror", "0")]
    return lines + (flush_moves(moves, labels, kinds) if labels.after_run and moves else [])


def label_tuple(labels: LabelSet) -> str:
    """The graph's labels as the tuple a chain returns."""
    names = labels.graph_names
    return f"({', '.join(names)}{',' if len(names) == 1 else ''})"


def return_line(labels: LabelSet | None, records: list[str] | None, kept: list[str],
                after_run: bool = False) -> str:
    """The chain's ``return``: the images, the labels (a tuple), and in the preview
    (``records`` given) the records and each moving block's kept fractions, or after the
    run the moves' inputs (``after_run``: bound; else none)."""
    out = "images" if labels is None else f"images, {label_tuple(labels)}"
    if records is None:
        return f"return {out}"
    tail = "" if labels is None else ", [" + ", ".join(f"kept_{t}" for t in kept) + "]"
    if labels is not None and labels.after_run:
        tail = ", after_run" if after_run else ", []"
    return f"return {out}, [{', '.join(records)}]{tail}"


def unfired_kept(tag: str) -> str:
    """``kept_<tag>`` for samples where the step did not run: every box kept whole."""
    return f"kept_{tag} = boxes[:, 0] * 0.0 + 1.0"
