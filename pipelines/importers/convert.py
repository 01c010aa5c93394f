"""Turn a parsed pipeline into a preset, transform by transform, and say how each one fared.

Every transform is looked up in the rule table; one that cannot be imported (no equivalent, an
argument out of the catalog's bounds, custom code) is listed with the reason and the nearest
alternative, and the rest still imports. Resize / CenterCrop / Normalize and the tensor
conversions that end the pipeline become the preset's output tail (what DALI applies last);
containers become step probabilities or groups.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from ..catalog import CATALOG, Catalog
from ..preset import FORMAT, VERSION, Preset, PresetError, load
from .rules import Args, Context, Conversion, Refused, Rule, Verdict, fmt, number
from .source import Call, Parsed
from .table import rule_for

Status = Literal["imported", "tail", "conversion", "not imported"]
MAX_GROUP = 8
_TAIL_ORDER = ("resize_shorter", "crop")


@dataclass
class Imported:
    """How one transform of the original pipeline was imported."""

    call: Call
    status: Status
    verdict: Verdict
    steps: list[int] = field(default_factory=list)
    """Indices of the preset steps it became."""
    tail: list[str] = field(default_factory=list)
    """Output-tail keys it set."""
    notes: list[str] = field(default_factory=list)
    nearest: str = ""
    rule: Rule | None = None
    args: Args | None = None
    inside: str = ""
    """The container it sits in ("RandomApply p=0.5", "OneOf"...), if any."""

    @property
    def label(self) -> str:
        return f"{self.call.name} ({self.call.where})" if self.call.line else self.call.name

    def to_dict(self) -> dict[str, Any]:
        return {"transform": self.call.name, "library": self.call.library, "line": self.call.line,
                "source": self.call.text, "status": self.status, "verdict": self.verdict.line(),
                "verdict_kind": self.verdict.kind, "steps": self.steps, "tail": self.tail,
                "notes": self.notes, "nearest": self.nearest or None, "inside": self.inside or None}


@dataclass
class ImportResult:
    """The imported preset and the per-transform account of the import."""

    preset: Preset
    library: str
    transforms: list[Imported]
    notes: list[str]
    origin: str
    parsed: Parsed

    @property
    def not_imported(self) -> list[Imported]:
        return [t for t in self.transforms if t.status == "not imported"]

    def summary(self) -> str:
        n = len(self.transforms)
        bad = len(self.not_imported)
        return (f"{n - bad} of {n} transforms imported from {self.library} into "
                f"{len(self.preset.steps)} steps" + (f"; {bad} not imported" if bad else ""))

    def to_dict(self) -> dict[str, Any]:
        return {"library": self.library, "origin": self.origin, "summary": self.summary(),
                "notes": self.notes, "transforms": [t.to_dict() for t in self.transforms],
                "preset": self.preset.to_dict()}


Built = list[tuple[list["Imported"], dict[str, Any]]]
"""Steps with the transforms they came from."""
Entry = tuple["Imported | None", "Conversion | None", Built]


def groups_supported() -> bool:
    """Whether the preset format has step groups (one-of / all-or-none) yet."""
    from .. import preset

    return hasattr(preset, "GROUPS")


class Converter:
    def __init__(self, parsed: Parsed, origin: str, catalog: Catalog = CATALOG) -> None:
        self.parsed = parsed
        self.origin = origin
        self.catalog = catalog
        self.items: list[Imported] = []
        self.notes = list(parsed.notes)
        self.libraries: set[str] = set()
        self.nested_tail: dict[str, Any] = {}

    def run(self) -> ImportResult:
        entries = self._top_level(self.parsed.root)
        ctx = Context(next(iter(self.libraries), "torchvision"))
        converted = [self._entry(e, ctx) for e in entries]
        in_tail = self._tail_position(converted)
        steps: list[dict[str, Any]] = []
        tail: dict[str, Any] = {}
        for k, (item, conv, built) in enumerate(converted):
            if item is not None and conv is not None and conv.tail is not None and (
                    k in in_tail or not conv.steps):
                tail.update(conv.tail)
                item.tail = sorted(conv.tail)
                if item.status == "imported":
                    item.status = "tail"
                    if k not in in_tail:
                        item.notes.append("moved to the output tail: DALI normalises last")
                continue
            for owners, s in built:
                for owner in owners:
                    owner.steps.append(len(steps))
                steps.append(s)
        tail = {**self.nested_tail, **tail}
        library = " + ".join(sorted(self.libraries)) or "torchvision"
        preset = load(self._preset_dict(steps, tail, library), self.catalog)
        return ImportResult(preset, library, self.items, self.notes, self.origin, self.parsed)

    # ---- walking the tree ---------------------------------------------------------------------

    def _top_level(self, root: Any) -> list[Any]:
        if isinstance(root, list):
            return list(root)
        rule = rule_for(root.library, root.name)
        self.libraries.add(root.library)
        if rule is None or rule.kind != "container" or root.name not in (
                "Compose", "Sequential"):
            return [root]
        try:
            args = rule.bind(root)
        except Refused as e:
            raise PresetError([f"{root.name} ({root.where}): {e.reason}"]) from e
        p = args.get("p")
        if root.library == "albumentations" and root.name == "Sequential":
            return [root]  # a Sequential at the top has its own probability: a group
        if isinstance(p, (int, float)) and p < 1:
            self.notes.append(f"Compose(p={fmt(p)}): the whole pipeline fires with "
                              f"probability {fmt(p)} in Albumentations; every step keeps its "
                              "own probability here")
        return list(args["transforms"] or [])

    def _entry(self, e: Any, ctx: Context) -> Entry:
        """(the report item, its conversion, the steps it contributes)."""
        if not isinstance(e, Call):
            self.notes.append(f"skipped {e!r:.60}: not a transform")
            return None, None, []
        self.libraries.add(e.library) if e.library != "custom" else None
        rule = rule_for(e.library, e.name)
        if e.library == "custom" or rule is None:
            return self._refused(e, None, _unknown(e)), None, []
        if rule.kind == "container":
            return self._container(e, rule, ctx)
        if rule.kind == "unsupported":
            return self._refused(e, rule, Refused(rule.verdict.reason, rule.nearest)), None, []
        try:
            args = rule.bind(e)
            assert rule.convert is not None
            conv = rule.convert(args, ctx)
        except Refused as r:
            return self._refused(e, rule, r), None, []
        problems = self._validate(conv.steps)
        if problems:
            return self._refused(e, rule, Refused("; ".join(problems))), None, []
        status: Status = "conversion" if rule.kind == "conversion" else "imported"
        item = Imported(e, status, conv.verdict or rule.verdict, notes=list(conv.notes),
                        rule=rule, args=args)
        self.items.append(item)
        return item, conv, [([item], s) for s in copy.deepcopy(conv.steps)]

    def _container(self, e: Call, rule: Rule, ctx: Context) -> Entry:
        try:
            args = rule.bind(e)
        except Refused as r:
            return self._refused(e, rule, r), None, []
        children = [c for c in (args.get("transforms") or []) if isinstance(c, Call)]
        if e.name in ("Compose", "Sequential") and e.library == "torchvision":
            return self._inline(children, ctx, "")
        p = float(number(args["p"], "p")) if args.get("p") is not None else 1.0
        mode, weights = _group_mode(e, args, children)
        if mode is None:
            return self._refused(e, rule, Refused(
                f"{e.name}(n={args.get('n')}) of {len(children)} transforms: picking several "
                "of a set has no preset construct", "OneOf (n=1)")), None, []
        label = f"{e.name} p={fmt(p)}"
        item, _, built = self._inline(children, ctx, label, force=e.library == "albumentations"
                                      and mode == "one_of")
        if mode == "all" and len(built) <= 1:
            for _, s in built:
                s["probability"] = round(s["probability"] * p, 6)
            return item, None, built
        if not groups_supported():
            what = (f"picks one of {len(children)} transforms per sample" if mode == "one_of"
                    else f"applies {len(children)} transforms together with one coin")
            reason = (f"inside {e.name}, which {what}: step groups are not yet supported by "
                      "the preset format")
            for it in self.items:
                if it.inside == label and it.status == "imported":
                    it.status = "not imported"
                    it.verdict = Verdict("unsupported", reason=reason)
                    it.nearest = ("this transform as a step of its own (it then fires on its "
                                  "own coin: not the same distribution)")
            return None, None, []
        if len(built) > MAX_GROUP or (mode == "one_of" and len(built) != len(children)):
            return self._refused(e, rule, Refused(
                f"{e.name}: each transform must become one step, at most {MAX_GROUP}")), None, []
        group: dict[str, Any] = {"group": mode, "probability": p,
                                 "steps": [s for _, s in built]}
        if mode == "one_of":
            group["weights"] = weights
        return item, None, [([o for owners, _ in built for o in owners], group)]

    def _inline(self, children: list[Call], ctx: Context, label: str,
                force: bool = False) -> Entry:
        built: Built = []
        first = None
        for c in children:
            item, conv, steps = self._entry(c, ctx)
            if item is not None:
                item.inside = item.inside or label
                first = first or item
                if conv is not None and conv.tail is not None and not conv.steps:
                    self.nested_tail.update(conv.tail)
                    item.tail, item.status = sorted(conv.tail), "tail"
                    item.notes.append("inside a container: the output tail applies it to "
                                      "every sample, last")
            for owners, s in steps:
                if force:
                    s["probability"] = 1.0
                built.append((owners, s))
        return first, None, built

    def _refused(self, e: Call, rule: Rule | None, r: Refused) -> Imported:
        item = Imported(e, "not imported", Verdict("unsupported", reason=r.reason),
                        nearest=r.nearest or (rule.nearest if rule else ""), rule=rule)
        self.items.append(item)
        return item

    def _validate(self, steps: list[dict[str, Any]]) -> list[str]:
        """Each step checked against the catalog on its own (bounds, units, draws)."""
        problems = []
        for s in steps:
            try:
                load(self._preset_dict([s], {}, ""), self.catalog)
            except PresetError as e:
                problems += [p.replace("step 0 ", "", 1) for p in e.problems]
        return problems

    # ---- the output tail ----------------------------------------------------------------------

    def _tail_position(self, converted: list[Entry]) -> set[int]:
        """Indices of the top-level entries that end the pipeline and have a tail form, in the
        tail's own order (resize, then crop, then normalisation)."""
        chosen: set[int] = set()
        seen: list[str] = []
        for k in range(len(converted) - 1, -1, -1):
            item, conv, _ = converted[k]
            if item is None or conv is None:
                break
            if item.status == "conversion" or (conv.tail is not None and not conv.steps):
                chosen.add(k)
                continue
            if conv.tail is None:
                break
            keys = [key for key in _TAIL_ORDER if key in conv.tail]
            if not keys or any(key in seen for key in keys) or (
                    "crop" in keys and "resize_shorter" in seen):
                break
            seen += keys
            chosen.add(k)
        return chosen

    def _preset_dict(self, steps: list[dict[str, Any]], tail: dict[str, Any],
                     library: str) -> dict[str, Any]:
        output = None
        if tail:
            output = {"layout": "HWC", "dtype": "uint8", **tail}
            if "mean" in output and output["dtype"] == "uint8":
                output["dtype"] = "float32"
        name = f"imported from {library}" if library else ""
        return {"format": FORMAT, "version": VERSION, "name": name, "seed": 42, "steps": steps,
                "output": output}


def _group_mode(e: Call, args: Args, children: list[Call]) -> tuple[str | None, list[float]]:
    n = len(children)
    if e.name in ("RandomApply", "Sequential"):
        return "all", []
    if e.name == "RandomChoice":
        p = args.get("p")
        return "one_of", [float(x) for x in p] if p else [1.0] * n
    if e.name == "OneOf":
        return "one_of", [float(c.kwargs.get("p", _default_p(c))) for c in children]
    if e.name == "SomeOf":
        k = args.get("n", 1)
        if k == 1:
            return "one_of", [float(c.kwargs.get("p", _default_p(c))) for c in children]
        if k >= n and not args.get("replace"):
            return "all", []
    return None, []


def _default_p(c: Call) -> float:
    rule = rule_for(c.library, c.name)
    return float(rule.defaults.get("p", 1.0)) if rule is not None else 1.0


def _unknown(e: Call) -> Refused:
    if e.library == "custom":
        return Refused(f"{e.name} is not a transform of torchvision or Albumentations (custom "
                       "code is never imported or run)",
                       "a custom operator (@custom_op) with the same code")
    return Refused(f"{e.library}.{e.name} has no mapping in dali-gallery yet",
                   "the catalog (`dali-gallery ops`)")
