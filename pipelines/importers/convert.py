"""Turn a parsed pipeline into a preset, transform by transform, and say how each one fared.

Every transform is looked up in the rule table; one that cannot be imported (no equivalent, an
argument out of the catalog's bounds, custom code) is listed with the reason and the nearest
alternative, and the rest still imports. Resize / CenterCrop / Normalize and the tensor
conversions that end the pipeline become the preset's output tail (what DALI applies last);
containers become step probabilities or groups.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace
from typing import Any

from ..catalog import CATALOG, Catalog
from ..preset import FORMAT, GROUP_KEY, MAX_CHILDREN, VERSION, PresetError, load
from ..preset_output import validate_output
from ..preset_validate import MAX_WEIGHT, MIN_WEIGHT
from .containers import GroupMode, group_mode, label_notes, one_coin, strict_of, transforms_of
from .result import Imported, ImportResult, Status
from .rules import (
    Context,
    Conversion,
    Refused,
    Rule,
    Verdict,
    fmt,
    number,
    refuse_on_standardised,
)
from .source import CHAINS, Call, Parsed
from .table import rule_for, unknown_refusal

_TAIL_ORDER = ("resize_shorter", "crop")


Built = list[tuple[list["Imported"], dict[str, Any]]]
"""Steps with the transforms they came from."""
Entry = tuple["Imported | None", "Conversion | None", Built]


@dataclass
class _Part:
    """One transform of a container: the report items it made (its own, and those of the
    transforms inside it) and the steps it became."""

    items: list[Imported]
    steps: Built


class Converter:
    def __init__(self, parsed: Parsed, origin: str, catalog: Catalog = CATALOG) -> None:
        self.parsed = parsed
        self.origin = origin
        self.catalog = catalog
        self.items: list[Imported] = []
        self.notes = list(parsed.notes)
        self.libraries: set[str] = set()
        self.nested: dict[int, dict[str, Any]] = {}
        """Output-tail keys that transforms inside the top-level entry k set, by k."""
        self.top = 0  # the top-level entry being converted
        self.sometimes = False  # inside a container that applies its transforms to some samples
        self.strict = False  # the top level is an Albumentations Compose(strict=True)

    def run(self) -> ImportResult:
        entries = self._top_level(self.parsed.root)
        ctx = Context(next(iter(self.libraries), "torchvision"), strict=self.strict)
        converted = []
        for self.top, e in enumerate(entries):
            converted.append(self._entry(e, ctx))
        in_tail = self._tail_position(converted)
        steps: list[dict[str, Any]] = []
        tail: dict[str, Any] = {}
        for k, (item, conv, built) in enumerate(converted):
            tail.update(self.nested.get(k, {}))  # in the pipeline's order, as the libraries
            if item is not None and conv is not None and conv.tail is not None and (
                    k in in_tail or not conv.steps):
                if self._tail_refused(item, {**tail, **conv.tail}):
                    continue
                tail.update(conv.tail)
                item.tail = sorted(conv.tail)
                if item.status == "imported":
                    item.status = "tail"
                    if k not in in_tail:
                        item.notes.append("moved to the output tail: DALI normalises last")
                continue
            if conv is not None and (group := one_coin([s for _, s in built])) is not None:
                built = [(built[0][0], group)]  # one transform's steps on its own coin
            for owners, s in built:
                for owner in owners:  # a transform of two steps in one group: that step once
                    if len(steps) not in owner.steps:
                        owner.steps.append(len(steps))
                steps.append(s)
        library = " + ".join(sorted(self.libraries)) or "torchvision"
        preset = load(self._preset_dict(steps, tail, library), self.catalog)
        return ImportResult(preset, library, self.items, self.notes, self.origin, self.parsed)

    # ---- walking the tree ---------------------------------------------------------------------

    def _top_level(self, root: Any) -> list[Any]:
        if isinstance(root, list):
            return list(root)
        rule = rule_for(root.library, root.name)
        self.libraries.add(root.library)
        if rule is None or rule.kind != "container" or root.name not in CHAINS:
            return [root]
        try:
            args = rule.bind(root)
            transforms = transforms_of(root, rule, args)
        except Refused as e:
            raise PresetError([f"{root.name} ({root.where}): {e.reason}"]) from e
        self.strict = strict_of(root, args)
        self.notes += label_notes(root, args)
        p = args.get("p")
        if root.library == "albumentations" and root.name == "Sequential":
            return [root]  # a Sequential at the top has its own probability: a group
        if isinstance(p, (int, float)) and p < 1:
            self.notes.append(f"Compose(p={fmt(p)}): the whole pipeline fires with "
                              f"probability {fmt(p)} in Albumentations; every step keeps its "
                              "own probability here")
        return list(transforms)

    def _entry(self, e: Any, ctx: Context) -> Entry:
        """(the report item, its conversion, the steps it contributes)."""
        if not isinstance(e, Call):
            self.notes.append(f"skipped {e!r:.60}: not a transform")
            return None, None, []
        self.libraries.add(e.library) if e.library != "custom" else None
        rule = rule_for(e.library, e.name)
        if e.library == "custom" or rule is None:
            return self._refused(e, None, unknown_refusal(e)), None, []
        if rule.kind == "container":
            return self._container(e, rule, ctx)
        if rule.kind == "unsupported":
            return self._refused(e, rule, Refused(rule.verdict.reason, rule.nearest)), None, []
        found = replace(ctx)  # a refused transform leaves the state as it found it
        try:
            args = rule.bind(e)
            assert rule.convert is not None
            conv = rule.convert(args, ctx)
            refuse_on_standardised(e.name, conv.steps, ctx, self.catalog.__getitem__)
            problems = self._validate(conv.steps)
            if conv.tail:  # its own values (std 0): the later transforms must not read them
                validate_output(self._preset_dict([], conv.tail, "")["output"], problems)
            if problems:
                raise Refused("; ".join(problems))
        except Refused as r:
            ctx.__dict__.update(found.__dict__)
            return self._refused(e, rule, r), None, []
        status: Status = "conversion" if rule.kind == "conversion" else "imported"
        item = Imported(e, status, conv.verdict or rule.verdict, notes=list(conv.notes),
                        rule=rule, args=args)
        self.items.append(item)
        return item, conv, [([item], s) for s in copy.deepcopy(conv.steps)]

    def _container(self, e: Call, rule: Rule, ctx: Context) -> Entry:
        try:
            args = rule.bind(e)
            children = [c for c in transforms_of(e, rule, args) if isinstance(c, Call)]
        except Refused as r:
            return self._refused(e, rule, r), None, []
        if e.name in ("Compose", "Sequential") and e.library == "torchvision":
            return self._inline(children, ctx, "")
        try:  # RandomChoice's p are its weights: it fires always
            p = 1.0 if args.get("p") is None or e.name == "RandomChoice" else \
                number(args["p"], "p")
            if not 0 <= p <= 1:  # as a transform's own p is refused (rules.step)
                raise Refused(f"p={p:g} is not a probability (expected [0, 1])")
            how = group_mode(e, args, children)
        except Refused as r:
            return self._refused(e, rule, r), None, []
        label = f"{e.name} p={fmt(p)}"
        outer, ctx.strict = ctx.strict, ctx.strict or strict_of(e, args)
        try:
            always = how.pick is None and p == 1
            parts = [self._child(c, ctx, label, how.force, always) for c in children]
        finally:
            ctx.strict = outer
        if how.pick is None:
            return self._all_of(e, p, parts)
        return self._picked(e, p, how, parts, children)

    def _child(self, c: Call, ctx: Context, label: str, force: bool, always: bool) -> _Part:
        """One transform of a container: the report items it made and its steps. ``force``:
        the container applies it whatever its own p (Albumentations' OneOf); ``always``: the
        container applies all of its transforms to every sample."""
        inner = (rule := rule_for(c.library, c.name)) is not None and rule.kind == "container"
        if force and inner:
            c = replace(c, kwargs={**c.kwargs, "p": 1.0})  # its p is a weight, not a coin
        first, outer = len(self.items), self.sometimes
        self.sometimes = outer or not always
        try:
            _, _, steps = self._inline([c], ctx, label, force=force and not inner)
        finally:
            self.sometimes = outer
        for it in self.items[first:]:  # all of a nested Compose sit in it, not its first only
            it.inside = it.inside or label
        return _Part(self.items[first:], steps)

    def _all_of(self, e: Call, p: float, parts: list[_Part]) -> Entry:
        """Every transform, in order, on one coin: one step keeps it as its probability,
        several become a group that picks them all."""
        built = [s for part in parts for s in part.steps]
        item = next((it for part in parts for it in part.items), None)
        for part in parts:  # one transform of several steps on its own coin
            if len(part.items) == 1 and (group := one_coin([s for _, s in part.steps])):
                if len(parts) == 1:  # the container's coin, then the transform's
                    group["probability"] = round(group["probability"] * p, 6)
                    return item, None, [(part.steps[0][0], group)]
                part.items[0].notes.append(f"inside {e.name}, its {len(part.steps)} steps fire "
                                           "on separate coins of its p (groups do not nest)")
        if len(built) <= 1:
            for _, s in built:
                s["probability"] = round(s["probability"] * p, 6)
            return item, None, built
        nested = [it for part in parts if any(GROUP_KEY in s for _, s in part.steps)
                  for it in part.items]
        if nested or len(built) > MAX_CHILDREN:
            why = ("a group inside a group has no preset construct" if nested else
                   f"its transforms become {len(built)} steps; a group holds at most "
                   f"{MAX_CHILDREN}")
            self._drop([it for part in parts for it in part.items],
                       f"inside {e.name}, which applies its transforms together: {why}")
            return item, None, []
        group = {GROUP_KEY: [s for _, s in built], "probability": p, "pick": len(built)}
        return item, None, [([o for owners, _ in built for o in owners], group)]

    def _picked(self, e: Call, p: float, how: GroupMode, parts: list[_Part],
                children: list[Call]) -> Entry:
        """``how.pick`` of the transforms per sample. A transform that is not imported (or
        is no single step) drops out: with one picked, the group's probability shrinks by
        its weight so that every other transform keeps its rate exactly; with several, the
        rates cannot be kept and the whole group is not imported."""
        weights = how.weights or [1.0] * len(parts)
        total = sum(weights)
        kept: list[tuple[_Part, float]] = []
        for part, c, w in zip(parts, children, weights, strict=True):
            single = len(part.steps) == 1 and GROUP_KEY not in part.steps[0][1]
            if single and w >= MIN_WEIGHT * total:
                kept.append((part, w))
                continue
            if w < MIN_WEIGHT * total:
                self._drop(part.items, f"inside {e.name} with weight {fmt(w)} of {fmt(total)}: "
                           "picked less than once in a million samples")
            elif part.steps:
                self._drop(part.items, f"inside {e.name}, which picks transforms, it becomes "
                           + ("a group" if len(part.steps) == 1 else f"{len(part.steps)} steps")
                           + "; a picked transform must be one step")
            if how.pick > 1:
                self._drop([it for q in parts for it in q.items],
                           f"inside {e.name}(n={how.pick}) with {c.name}, which is not "
                           "imported: the others would be picked more often")
                return None, None, []
        item = next((it for part, _ in kept for it in part.items), None)
        if not kept:
            return item, None, []
        share = sum(w for _, w in kept) / total
        prob = round(p * share, 6)
        if share < 1:
            note = (f"{e.name} ({e.where}): fires with p={fmt(prob)} instead of {fmt(p)} for "
                    "the transforms not imported, so that each imported one keeps its rate")
            self.notes.append(note)
            for part, _ in kept:
                for it in part.items:
                    it.notes.append(note)
        if len(kept) == 1:
            (owners, s), = kept[0][0].steps
            s["probability"] = round(s["probability"] * prob, 6)
            return item, None, [(owners, s)]
        group: dict[str, Any] = {GROUP_KEY: [part.steps[0][1] for part, _ in kept],
                                 "probability": prob, "pick": how.pick}
        ws = [w for _, w in kept]
        if how.weights is not None and len(set(ws)) > 1:
            fits = all(MIN_WEIGHT <= w <= MAX_WEIGHT for w in ws)
            group["weights"] = ws if fits else [w / sum(ws) for w in ws]
        owners = [o for part, _ in kept for o in part.steps[0][0]]
        return item, None, [(owners, group)]

    def _drop(self, items: list[Imported], reason: str) -> None:
        """Mark transforms that were converted as not imported after all (their container
        could not hold them)."""
        for it in items:
            if it.status in ("imported", "conversion"):
                it.status = "not imported"
                it.verdict = Verdict("unsupported", reason=reason)
                it.steps = []
                it.nearest = it.nearest or ("this transform as a step of its own (it then fires "
                                            "on its own coin: not the same distribution)")

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
                    if self.sometimes:  # the tail converts every sample
                        self._drop([item], f"inside {item.inside}, which applies it to some "
                                   "samples only: the output tail converts every sample")
                        item.nearest = f"{item.call.name} outside the container"
                        continue
                    nested = self.nested.setdefault(self.top, {})
                    if self._tail_refused(item, {**nested, **conv.tail}):
                        continue
                    nested.update(conv.tail)
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

    def _tail_refused(self, item: Imported, tail: dict[str, Any]) -> bool:
        """Whether ``tail`` (with ``item``'s part) is one the preset refuses (Normalize std 0,
        a CenterCrop over the Resize): then ``item`` alone is not imported, saying why."""
        problems: list[str] = []
        validate_output(self._preset_dict([], tail, "")["output"], problems)
        if problems:
            item.status, item.tail, item.steps = "not imported", [], []
            item.verdict = Verdict("unsupported", reason="; ".join(problems))
        return bool(problems)

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
            if output.get("mean") is not None and output["dtype"] == "uint8":
                output["dtype"] = "float32"
        name = f"imported from {library}" if library else ""
        return {"format": FORMAT, "version": VERSION, "name": name, "seed": 42, "steps": steps,
                "output": output}

