"""What a render works out before DALI runs, remembered per preset document.

A slider drag renders one chain hundreds of times with new fed values only. Each render used to
validate the preset again (a deep copy and every parameter's rules), generate the preview
module's source, and plan the pixel and Python-time budgets: measured on an H100 host, 2.2 ms of
Python per render, more than the bare DALI run of 8 images of 256x256 (1.7 ms). These results
depend on nothing but the preset's document, the catalog entries it names, the images' sizes and
the draws, so :class:`RenderMemo` keys them on exactly that and works each out once. A check
that fails is never remembered: the next render raises it again. The budget ledger (what other
renders in the kernel hold) is still checked on every render by the caller.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from functools import lru_cache
from typing import Any, TypeVar

from .catalog import Catalog
from .preset import Preset, load
from .preset_validate import document_of

T = TypeVar("T")
MAX_ENTRIES = 256
"""Remembered results per engine (a drag touches one; the gallery's rows touch dozens)."""


def document_key(source: Any, catalog: Catalog) -> str | None:
    """A key naming the preset ``source`` (a :class:`Preset` or a document dict) and the
    catalog entries it names; None for anything else (a path's file may change), or a
    document that is not plain JSON (it is validated on every render, as before)."""
    if isinstance(source, Preset):
        doc: Any = document_of(source)
    elif isinstance(source, Mapping):
        doc = source
    else:
        return None
    try:
        text = json.dumps(doc, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):
        return None
    specs = [(op, id(catalog.get(op))) for op in _names_in(text)]
    return text + repr(specs)


@lru_cache(maxsize=MAX_ENTRIES)
def _names_in(text: str) -> tuple[str, ...]:
    """The operator names of a document's JSON text, sorted, once per text (a drag renders
    one document many times; walking it cost ~0.05 ms a render). The catalog entries they
    name are looked up on every render: a custom operator registered again is a new one."""
    return tuple(sorted(set(_op_names(json.loads(text)))))


def _op_names(doc: Any) -> list[str]:
    """Every ``op`` value in the document (steps and the children of groups)."""
    found: list[str] = []
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("op"), str):
                found.append(item["op"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


class RenderMemo:
    """Per engine: validated presets and anything else derived from one (by key), the most
    recently used :data:`MAX_ENTRIES` of them."""

    def __init__(self, size: int = MAX_ENTRIES) -> None:
        self._size = size
        self._derived: OrderedDict[Hashable, Any] = OrderedDict()

    def preset(self, source: Any, catalog: Catalog) -> tuple[Preset, str | None]:
        """The validated preset (read-only: it is shared by later renders) and its key;
        PresetError when it is not valid (raised again by every render)."""
        key = document_key(source, catalog)
        preset = self.derived(None if key is None else ("preset", key),
                              lambda: load(source, catalog))
        return preset, key

    def derived(self, key: Hashable | None, make: Callable[[], T]) -> T:
        """``make()``, once per key (every time when ``key`` is None). An exception is raised
        and not remembered."""
        if key is None:
            return make()
        if key in self._derived:
            self._derived.move_to_end(key)
            return self._derived[key]
        value = make()
        self._derived[key] = value
        while len(self._derived) > self._size:
            self._derived.popitem(last=False)
        return value
