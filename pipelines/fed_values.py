"""The preview's run-time values fed as one vector per type, not one input per value.

A preview pipeline takes every slider's value at run time (so a drag rebuilds nothing). Fed one
``external_source`` each, a chain of six steps cost ten ``feed_input`` calls per render: about
1 ms of Python on an H100 host, more than half the bare DALI run it feeds. Here every value
of a type lies in one vector per sample (``fed_FLOAT``, ``fed_INT32``), and the generated
module's ``P(name, dtype)`` is a slice of it: :data:`FED` in the module says where each name
lies, :func:`pack` builds the vectors from the values by name (sweeps override some of them
per sample first), and :func:`fed_nodes` makes the inputs while the pipeline is traced.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

DTYPES = {"FLOAT": np.float32, "INT32": np.int32}


class FedValue(Protocol):
    name: str
    dtype: str
    width: int


Layout = dict[str, tuple[str, int, int]]
"""name -> (dtype, start, width); width 0 is a scalar, else a vector of that length."""


def layout(feeds: Sequence[FedValue]) -> Layout:
    """Where each fed value lies in its type's vector, in the order the chain feeds them."""
    ends = dict.fromkeys(DTYPES, 0)
    out: Layout = {}
    for f in feeds:
        out[f.name] = (f.dtype, ends[f.dtype], f.width)
        ends[f.dtype] += max(f.width, 1)
    return out


def widths(table: Layout) -> dict[str, int]:
    """The length of each type's vector (types without values: none)."""
    ends: dict[str, int] = {}
    for dtype, start, width in table.values():
        ends[dtype] = max(ends.get(dtype, 0), start + max(width, 1))
    return ends


def module_source(table: Layout) -> str:
    """The generated module's ``FED`` table (name: start, width), ``FED_TYPES`` and ``P``: a
    fed value is a slice of its type's vector (:func:`fed_nodes` makes the vectors)."""
    rows = "".join(f"    {name!r}: ({start}, {width}),\n"
                   for name, (_, start, width) in table.items())
    return ((f"FED = {{\n{rows}}}" if rows else "FED = {}") + "\n"
            + f"FED_TYPES = {tuple(widths(table))!r}\n"
            + "FED_NODES = {}\n\n\n"
            "def P(name, dtype):\n"
            '    """A value fed by the preview at run time: a slice of the one vector fed per\n'
            '    type (FED: where each name lies; width 0 is a scalar)."""\n'
            "    start, width = FED[name]\n"
            "    vector = FED_NODES[dtype]\n"
            "    return vector[start] if width == 0 else vector[start : start + width]")


def fed_nodes(module: Any) -> None:
    """Make the module's fed vectors (one ``external_source`` per type it uses) in the
    pipeline being traced, for its ``P``."""
    from nvidia.dali import fn, types

    module.FED_NODES = {getattr(types, t): fn.external_source(name=f"fed_{t}",
                                                              dtype=getattr(types, t))
                        for t in module.FED_TYPES}


def pack(values: Mapping[str, np.ndarray], table: Layout, batch: int) -> dict[str, np.ndarray]:
    """One (batch, width) array per type from the values by name (each (batch,) or
    (batch, k))."""
    out = {dtype: np.zeros((batch, width), DTYPES[dtype])
           for dtype, width in widths(table).items()}
    for name, (dtype, start, width) in table.items():
        column = np.asarray(values[name], DTYPES[dtype]).reshape(batch, max(width, 1))
        out[dtype][:, start:start + max(width, 1)] = column
    return {f"fed_{dtype}": array for dtype, array in out.items()}
