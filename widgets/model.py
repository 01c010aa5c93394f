"""The user's pipeline behind the widgets: always a valid preset, every edit undoable.

Each edit builds the candidate preset as plain data and runs it through
:func:`pipelines.preset.load`, the same validation as preset files, so the pipeline held here
can never be invalid: a rejected edit raises :class:`PresetError` naming the step, operator,
parameter and value, and leaves the pipeline as it was. Widgets listen for :class:`Change`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.preset import (
    GROUP_KEY,
    IMAGENET_OUTPUT,
    Choice,
    Group,
    Preset,
    PresetError,
    Uniform,
    load,
    new_step,
    value_to_json,
)

from .history import History

ChangeKind = Literal["structure", "value", "seed", "meta", "restore"]


@dataclass(frozen=True)
class Change:
    """What an edit touched. ``structure``: steps added, removed, moved, enabled or disabled;
    ``value``: a parameter or probability of step ``step`` (of its child ``child`` when the
    step is a group); ``restore``: undo, redo or load."""

    kind: ChangeKind
    step: int | None = None
    param: str | None = None
    child: int | None = None


Listener = Callable[[Change], None]


def empty_preset() -> Preset:
    """A new pipeline: no steps, and the usual ImageNet training tail, so that its export
    trains as it is on images of any size (the output section turns it off)."""
    return Preset(output=copy.deepcopy(IMAGENET_OUTPUT))


class ChainModel:
    """Holds the preset, validates and records edits, and tells listeners about them."""

    def __init__(self, preset: Preset | None = None, catalog: Catalog = CATALOG) -> None:
        self.catalog = catalog
        self._preset = preset.copy() if preset is not None else empty_preset()
        self.history = History(self._preset.to_json(indent=None))
        self._listeners: list[Listener] = []

    # ---- reading ------------------------------------------------------------------------------

    @property
    def preset(self) -> Preset:
        """The live preset (do not mutate; use the edit methods)."""
        return self._preset

    def __len__(self) -> int:
        return len(self._preset.steps)

    def listen(self, fn: Listener) -> None:
        self._listeners.append(fn)

    # ---- edits --------------------------------------------------------------------------------

    def add_step(self, op: str, params: dict[str, Any] | None = None, *,
                 probability: float = 1.0, at: int | None = None) -> int:
        """Insert a step (at the end by default) with defaults overridden by ``params``."""
        if op not in self.catalog:
            raise PresetError([f"unknown operator {op!r}{self.catalog.suggest(op)}"])
        index = len(self) if at is None else self._check_index(at, insert=True)
        step = new_step(op, self.catalog)
        data = self._data()
        raw = {"op": op, "probability": probability, "enabled": True,
               "params": {k: value_to_json(v) for k, v in step.params.items()}}
        raw["params"].update({k: _json_value(v) for k, v in (params or {}).items()})
        data["steps"].insert(index, raw)
        self._commit(data, Change("structure", index))
        return index

    def duplicate_step(self, index: int) -> int:
        """Copy step ``index`` right after itself; returns the copy's index."""
        self._check_index(index)
        data = self._data()
        data["steps"].insert(index + 1, copy.deepcopy(data["steps"][index]))
        self._commit(data, Change("structure", index + 1))
        return index + 1

    def remove_step(self, index: int) -> None:
        self._check_index(index)
        data = self._data()
        del data["steps"][index]
        self._commit(data, Change("structure", index))

    def move_step(self, index: int, delta: int) -> int:
        """Move a step up (delta < 0) or down, clamped to the chain; returns its new index."""
        self._check_index(index)
        target = max(0, min(len(self) - 1, index + delta))
        if target == index:
            return index
        data = self._data()
        step = data["steps"].pop(index)
        data["steps"].insert(target, step)
        self._commit(data, Change("structure", target))
        return target

    def set_param(self, index: int, name: str, value: Any, child: int | None = None) -> None:
        """Set one parameter (of child ``child`` of a group): a literal, a
        :class:`Uniform`/:class:`Choice`, or their JSON."""
        step = self._step(index, child)
        spec = self.catalog[step.op]
        if name not in {p.name for p in spec.params}:
            allowed = ", ".join(p.name for p in spec.params) or "none"
            raise PresetError([f"{_where(index, child)} ({spec.name}): unknown parameter "
                               f"{name!r} (parameters: {allowed})"])
        data = self._data()
        raw = _raw(data, index, child)["params"][name] = _json_value(value)
        # one undo entry per drag; switching fixed / range / list starts a new one (the mode
        # read from the JSON form: a range and a list given as JSON are both dicts)
        mode = tuple(raw) if isinstance(raw, dict) else "fixed"
        key = ("param", index, child, name, mode)
        self._commit(data, Change("value", index, name, child), key=key)

    def set_probability(self, index: int, probability: float,
                        child: int | None = None) -> None:
        old = self._step(index, child).probability
        data = self._data()
        _raw(data, index, child)["probability"] = probability
        kind: ChangeKind = "structure" if (old >= 1) != (probability >= 1) else "value"
        self._commit(data, Change(kind, index, "probability", child),
                     key=("probability", index, child))

    def set_enabled(self, index: int, enabled: bool, child: int | None = None) -> None:
        self._step(index, child)
        data = self._data()
        _raw(data, index, child)["enabled"] = enabled
        self._commit(data, Change("structure", index, child=child))

    # ---- groups -------------------------------------------------------------------------------

    def set_weight(self, index: int, child: int, weight: float) -> None:
        """The weight of one child of a group (the others keep theirs; equal until set)."""
        group = self._group(index)
        self._step(index, child)
        data = self._data()
        weights = list(group.weights) if group.weights is not None else \
            [1.0] * len(group.children)
        weights[child] = _json_value(weight)
        data["steps"][index]["weights"] = weights
        self._commit(data, Change("value", index, "weights", child),
                     key=("weight", index, child))

    def set_pick(self, index: int, pick: int) -> None:
        """How many distinct children the group applies per sample."""
        self._group(index)
        data = self._data()
        data["steps"][index]["pick"] = pick
        self._commit(data, Change("structure", index, "pick"))

    def group_steps(self, index: int, count: int = 2) -> int:
        """Make steps ``index`` to ``index + count - 1`` one group that applies one of them
        per sample (equal weights); returns its index."""
        self._check_index(index)
        if index + count > len(self) or count < 2:
            raise PresetError([f"steps {index} to {index + count - 1}: a group needs 2 or more "
                               f"steps of the chain; it has {len(self)}"])
        data = self._data()
        children = data["steps"][index:index + count]
        if any(GROUP_KEY in c for c in children):
            raise PresetError([f"steps {index} to {index + count - 1}: a group inside a group "
                               "is not allowed"])
        data["steps"][index:index + count] = [{GROUP_KEY: children, "probability": 1.0}]
        self._commit(data, Change("structure", index))
        return index

    def ungroup(self, index: int) -> None:
        """Put a group's children back into the chain as steps of their own, in its place
        (each then fires on its own coin)."""
        self._group(index)
        data = self._data()
        data["steps"][index:index + 1] = data["steps"][index][GROUP_KEY]
        self._commit(data, Change("structure", index))

    def set_seed(self, seed: int) -> None:
        data = self._data()
        data["seed"] = seed
        self._commit(data, Change("seed"))  # each new draw is its own undo step

    def set_output(self, output: dict[str, Any] | None) -> None:
        """The training tail as preset JSON (None: no tail); validated like a preset file."""
        data = self._data()
        data["output"] = output
        self._commit(data, Change("value", None, "output"))

    def set_name(self, name: str) -> None:
        data = self._data()
        data["name"] = name
        self._commit(data, Change("meta"), key=("name",))

    def replace(self, source: Any) -> None:
        """Load a preset (path, JSON text, dict or Preset); the old one stays undoable."""
        preset = load(source, self.catalog)
        self._set(preset, Change("restore"), record=True)

    def undo(self) -> bool:
        state = self.history.undo()
        if state is None:
            return False
        self._set(load(state, self.catalog), Change("restore"), record=False)
        return True

    def redo(self) -> bool:
        state = self.history.redo()
        if state is None:
            return False
        self._set(load(state, self.catalog), Change("restore"), record=False)
        return True

    # ---- internals ----------------------------------------------------------------------------

    def _data(self) -> dict[str, Any]:
        return self._preset.to_dict()

    def _step(self, index: int, child: int | None) -> Any:
        """Step ``index``, or child ``child`` of the group there (IndexError if none)."""
        self._check_index(index)
        step = self._preset.steps[index]
        if child is None:
            return step
        if not isinstance(step, Group):
            raise IndexError(f"step {index} ({step.op}) is not a group; it has no child {child!r}")
        if isinstance(child, bool) or not isinstance(child, int) or \
                not 0 <= child < len(step.children):
            raise IndexError(f"child {child!r} of step {index} does not exist; the group has "
                             f"{len(step.children)} (0 to {len(step.children) - 1})")
        return step.children[child]

    def _group(self, index: int) -> Group:
        step = self._step(index, None)
        if not isinstance(step, Group):
            raise IndexError(f"step {index} ({step.op}) is not a group")
        return step

    def _check_index(self, index: int, insert: bool = False) -> int:
        n = len(self) + (1 if insert else 0)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < n:
            raise IndexError(f"step {index!r} does not exist; the chain has {len(self)} "
                             f"step(s) (indices 0 to {len(self) - 1})")
        return index

    def _commit(self, data: dict[str, Any], change: Change,
                key: Hashable | None = None) -> None:
        self._set(load(data, self.catalog), change, record=True, key=key)

    def _set(self, preset: Preset, change: Change, *, record: bool,
             key: Hashable | None = None) -> None:
        self._preset = preset
        if record:
            self.history.record(preset.to_json(indent=None), key)
        for fn in list(self._listeners):
            fn(change)


def _raw(data: dict[str, Any], index: int, child: int | None) -> dict[str, Any]:
    """The document dict of step ``index`` or of its child ``child``."""
    step = data["steps"][index]
    return step if child is None else step[GROUP_KEY][child]


def _where(index: int, child: int | None) -> str:
    return f"step {index}" if child is None else f"step {index} ({GROUP_KEY}), child {child}"


def _json_value(value: Any) -> Any:
    """Preset JSON of a parameter value given as a literal, Uniform, Choice or JSON form
    (numpy scalars, which sliders and arrays hand out, become Python numbers)."""
    if isinstance(value, (Uniform, Choice)):
        return value.to_json()
    if isinstance(value, np.generic):
        return value.item()
    return value
