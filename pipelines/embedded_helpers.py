"""Every graph helper a generated module may carry, gathered from the modules that define them.

:mod:`pipelines.module_parts` copies the ones a chain calls, and
:func:`pipelines.custom_code.reserved_names` keeps custom functions off all their names, so a
helper declared in its module's ``HELPERS`` is both embedded and reserved. Each module of
:func:`modules` declares ``HELPERS`` (in the order generated modules define them) and ``DEPS``
(the helpers each one calls).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any


@functools.cache
def modules() -> tuple[ModuleType, ...]:
    """The modules that define helpers, in the order generated modules define theirs.

    Imported when first asked for, not with this module: importing ``pipelines.ops`` (the
    package of ``auto_aug_graph``) registers the shipped custom operators, which already
    asks :mod:`pipelines.custom_code` for the reserved names, so this module must be whole
    by then."""
    from . import graph_helpers, label_chain_helpers, label_crop_helpers, label_helpers
    from .ops import auto_aug_graph

    return (graph_helpers, auto_aug_graph, label_helpers, label_crop_helpers,
            label_chain_helpers)


@functools.cache
def helpers() -> tuple[str, ...]:
    """Every helper's name, in the order generated modules define them."""
    return tuple(name for m in modules() for name in m.HELPERS)


def deps() -> dict[str, tuple[str, ...]]:
    """The helpers each helper calls (one level: each lists its helpers' own too)."""
    return {k: v for m in modules() for k, v in m.DEPS.items()}


def helper(name: str) -> Callable[..., Any]:
    """A helper function by name, from the module that declares it."""
    for module in modules():
        if name in module.HELPERS:
            return getattr(module, name)
    raise KeyError(f"{name!r} is not a graph helper")
