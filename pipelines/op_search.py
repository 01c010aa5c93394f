"""Finding an operator from what a user types: its name, description or a declared alias.

People search with the words they know: a torchvision or albumentations transform name
("ColorJitter", "ToGray"), a spelling of their own ("grey", "colour", "color jitter") or part of a
description. Text is compared after folding case, spelling ("colour" = "color", "grey" = "gray")
and separators ("color jitter" = "ColorJitter" = "color_jitter"), against each entry's name,
description and ``aliases`` (declared per operator in :mod:`pipelines.ops`). When nothing
matches, :func:`no_match` says so and suggests the closest names.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from .opspec import OpSpec

MAX_QUERY = 100
"""Longest search text considered (the rest is ignored: a search box is not a document)."""
MAX_SUGGESTIONS = 4

_SPELLING = (("colour", "color"), ("grey", "gray"), ("centre", "center"),
             ("equalisation", "equalization"), ("normalise", "normalize"))
_SEPARATORS = re.compile(r"[^a-z0-9]+")


def fold(text: str) -> str:
    """``text`` lower-cased, American spelling, without spaces, dots, dashes or underscores."""
    t = text.lower()[:MAX_QUERY]
    for british, american in _SPELLING:
        t = t.replace(british, american)
    return _SEPARATORS.sub("", t)


def _words(text: str) -> list[str]:
    t = text.lower()[:MAX_QUERY]
    for british, american in _SPELLING:
        t = t.replace(british, american)
    return [w for w in _SEPARATORS.split(t) if w]


def _fields(op: OpSpec) -> tuple[list[str], list[str]]:
    """(name and aliases, description), folded."""
    return [fold(op.name), *(fold(a) for a in op.aliases)], [fold(op.doc)]


def rank(op: OpSpec, text: str) -> int | None:
    """How well ``op`` matches ``text``: 0 its name or an alias exactly, 1 part of one, 2 its
    description, 3 every word somewhere; None: no match."""
    query = fold(text)
    if not query:
        return None
    names, doc = _fields(op)
    if query in names:
        return 0
    if any(query in n for n in names):
        return 1
    if any(query in d for d in doc):
        return 2
    words = [fold(w) for w in _words(text)]
    if len(words) > 1 and all(any(w in f for f in names + doc) for w in words):
        return 3
    return None


def search(ops: Iterable[OpSpec], text: str) -> list[OpSpec]:
    """Operators matching ``text``, best first (catalog order among equals)."""
    found = [(r, k, op) for k, op in enumerate(ops) if (r := rank(op, text)) is not None]
    return [op for _, _, op in sorted(found, key=lambda t: (t[0], t[1]))]


def suggestions(ops: Iterable[OpSpec], text: str) -> list[str]:
    """Operator names close to ``text`` (by name or alias), for a search that found nothing."""
    query = fold(text)
    keys: dict[str, str] = {}
    for op in ops:
        for key in (op.name, op.name.split(".")[-1], *op.aliases):
            keys.setdefault(fold(key), op.name)
    close = difflib.get_close_matches(query, list(keys), n=3 * MAX_SUGGESTIONS, cutoff=0.6)
    out: list[str] = []
    for key in close:
        if keys[key] not in out:
            out.append(keys[key])
    return out[:MAX_SUGGESTIONS]


def no_match(ops: Iterable[OpSpec], text: str) -> str:
    """The sentence for a search without results: what was searched, and what may be meant."""
    shown = text.strip()[:40] + ("..." if len(text.strip()) > 40 else "")
    near = suggestions(list(ops), text)
    hint = (f"; did you mean {', '.join(near)}?" if near else
            "; try a transform name (ColorJitter, RandomErasing) or a word such as blur, "
            "noise, crop")
    return f"no operator matches {shown!r}{hint}"
