"""How a container transform picks its transforms, as the preset's group (``one_of``) holds it.

Albumentations' OneOf picks one by the transforms' own p (its weights) and applies it whatever
that p; its SomeOf picks n uniformly and applies each with its own p, as do torchvision's
RandomChoice (one, weights p) and RandomApply / Albumentations' Sequential (all, in order, on
one coin). What a group cannot hold is refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..labels import DEFAULT_MIN_KEPT
from ..preset import GROUP_KEY, MAX_CHILDREN
from .rules import Args, Refused, Rule, number, plain
from .source import CHAINS, Call
from .table import rule_for

TORCH_NN = "torch.nn"
"""Where torch.nn.ModuleList / torch.nn.Sequential resolve (the reader allows these two)."""


@dataclass(frozen=True)
class GroupMode:
    """How a container picks its transforms: ``pick`` of them (None: all, in order) by
    ``weights`` (None: equal); ``force``: a picked one is applied whatever its own p."""

    pick: int | None
    weights: list[float] | None = None
    force: bool = False


def group_mode(e: Call, args: Args, children: list[Call]) -> GroupMode:
    """The group a container becomes (Refused: one the preset cannot hold)."""
    n = len(children)
    if e.name == "RandomApply" or e.name in CHAINS:  # a nested Albumentations Compose
        return GroupMode(None)  # runs all of its transforms, in order, with its p
    if e.name == "RandomChoice":
        p = args.get("p")
        if p is not None and (not isinstance(p, list) or len(p) != n):
            raise Refused(f"RandomChoice: p must list one weight per transform ({n})")
        return GroupMode(1, _weights(p) if p else None)
    if e.name == "OneOf":  # Albumentations: the p of each transform is its weight
        return GroupMode(1, _weights([_p_of(c) for c in children]), force=True)
    k = args.get("n", 1)  # SomeOf: uniform, each applied with its own p
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise Refused(f"SomeOf(n={k!r}): n must be a positive integer")
    if args.get("replace") and k > 1:
        raise Refused(f"SomeOf(n={k}, replace=True) may apply a transform twice; a group picks "
                      "distinct transforms", "SomeOf(replace=False)")
    return GroupMode(None) if k >= n else GroupMode(k)


def one_coin(steps: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The steps of one transform with its own p (Albumentations' Affine, Resize,
    CoarseDropout) as a group that applies them all on that one coin: as separate steps each
    would fire on its own coin (a resize without its crop, a rotation without its zoom).
    None where they need no group (p 1 or 0) or cannot be one (a group already, too many)."""
    if not 2 <= len(steps) <= MAX_CHILDREN or any(GROUP_KEY in s for s in steps):
        return None
    p = max(s["probability"] for s in steps)
    if not 0 < p < 1:
        return None
    inner = [{**s, "probability": round(s["probability"] / p, 6)} for s in steps]
    return {GROUP_KEY: inner, "probability": p, "pick": len(inner)}


def label_notes(e: Call, args: Args) -> list[str]:
    """What an Albumentations Compose's bbox_params / keypoint_params become: the preset holds
    no label settings, and dali-gallery's own box threshold differs from min_visibility."""
    if e.library != "albumentations":
        return []
    notes = []
    box = args.get("bbox_params")
    if box is not None:
        given = (box.kwargs if isinstance(box, Call) else box) if isinstance(
            box, (Call, dict)) else {}
        vis, area = (_shown(plain(given.get(k, 0.0))) for k in ("min_visibility", "min_area"))
        notes.append(f"bbox_params are not imported (a preset holds no label settings): with "
                     f"labels, dali-gallery drops a box that keeps less than "
                     f"{DEFAULT_MIN_KEPT:.0%} of its area after a step; this Compose has "
                     f"Albumentations drop boxes under min_visibility={vis} of their area "
                     f"and min_area={area} px")
    if args.get("keypoint_params") is not None:
        notes.append("keypoint_params are not imported (a preset holds no label settings): "
                     "their format and remove_invisible do not carry over")
    return notes


def _shown(v: Any) -> str:
    return f"{v:g}" if isinstance(v, (int, float)) and not isinstance(v, bool) else repr(v)


def strict_of(e: Call, args: Args) -> bool:
    """Whether ``e`` is an Albumentations ``Compose(strict=True)``: Albumentations 2 raises on
    the 1.x arguments of every transform inside it instead of ignoring them."""
    return e.library == "albumentations" and e.name == "Compose" and bool(args.get("strict"))


def transforms_of(e: Call, rule: Rule, args: Args) -> list[Any]:
    """A container's transforms as a list: written as a list, or as one of the torch.nn
    containers its rule declares (``module_lists``); anything else is refused, as the library
    refuses it, rather than iterated."""
    value = args.get("transforms")
    if value is None:
        return []
    if isinstance(value, Call) and value.module == TORCH_NN and value.name in rule.module_lists:
        value = _modules_of(value)
    if not isinstance(value, list):
        forms = ["a list of transforms"] + [f"torch.nn.{n}(...)" for n in rule.module_lists]
        raise Refused(f"{e.name}(transforms={_text(value)}): expected "
                      + " or ".join(forms))
    if any(isinstance(v, list) for v in value):
        how = f"as separate arguments, {e.name}(t1, t2, ...)" if rule.varargs else "in one list"
        written = _text(e) if rule.varargs else f"{e.name}(transforms={_text(value)})"
        raise Refused(f"{written} holds a list, which is no transform (the library calls each "
                      f"item): write the transforms {how}")
    return value


def _modules_of(holder: Call) -> Any:
    """The items of torch.nn.ModuleList([...]) (its one argument, ``modules``) or of
    torch.nn.Sequential(t1, t2, ...) (read by its own rule)."""
    own = rule_for(holder.library, holder.name)
    if own is not None:
        return transforms_of(holder, own, own.bind(holder))
    if len(holder.args) > 1 or set(holder.kwargs) - {"modules"}:
        raise Refused(f"{_text(holder)}: torch.nn.ModuleList takes one list of modules")
    return plain(holder.args[0] if holder.args else holder.kwargs.get("modules", []))


def _text(value: Any) -> str:
    """A value as the user wrote it (calls by their source text)."""
    if isinstance(value, list):
        text = "[" + ", ".join(_text(v) for v in value) + "]"
    else:
        text = (value.text or value.name) if isinstance(value, Call) else repr(plain(value))
    return text if len(text) <= 80 else text[:77] + "..."


def _weights(values: list[object]) -> list[float]:
    out = [number(v, "weight p") for v in values]
    if any(w < 0 for w in out) or not sum(out) > 0:
        raise Refused(f"the weights {[float(w) for w in out]} must be at least 0, and not all 0")
    return out


def _p_of(c: Call) -> object:
    """A transform's p as written, or its library default."""
    rule = rule_for(c.library, c.name)
    if rule is None:
        return c.kwargs.get("p", 1.0)
    try:
        return rule.bind(c).get("p", 1.0)
    except Refused:  # the transform itself is refused when it is converted
        return c.kwargs.get("p", rule.defaults.get("p", 1.0))
