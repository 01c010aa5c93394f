"""How a container transform picks its transforms, as the preset's group (``one_of``) holds it.

Albumentations' OneOf picks one by the transforms' own p (its weights) and applies it whatever
that p; its SomeOf picks n uniformly and applies each with its own p, as do torchvision's
RandomChoice (one, weights p) and RandomApply / Albumentations' Sequential (all, in order, on
one coin). What a group cannot hold is refused with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rules import Args, Refused, number
from .source import Call
from .table import rule_for


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
    if e.name in ("RandomApply", "Sequential"):
        return GroupMode(None)
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
