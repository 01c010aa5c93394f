"""The preview's run-time values: one input per value, fed straight to DALI's backend.

A preview pipeline takes every slider's value at run time (so a drag rebuilds nothing). Fed
through ``Pipeline.feed_input`` one ``external_source`` each, a chain of six steps cost ten
calls per render: about 1 ms of Python on an H100 host. Packed into one vector per type and
sliced in the graph instead, the ten slices cost DALI ~0.3 ms a render on an H200 (each is an
operator the executor schedules), the largest part of what the engine added to a bare DALI run.
Now each value is its own input again, and the engine hands DALI a ``TensorListCPU`` made once
per document straight to the backend (:func:`feed`): ~5 us a value, and no operator in between.
The generated module's ``P(name, dtype)`` is that input: :data:`FED` in the module lists the
names, :func:`fed_nodes` makes the inputs while the pipeline is traced, :func:`tensors` makes
what is fed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from .dali_record import note_fed, note_ran

DTYPES = {"FLOAT": np.float32, "INT32": np.int32}
PREFIX = "fed_"
"""Input names: ``fed_<value name>`` (no value can take the images' or the labels' name)."""


class FedValue(Protocol):
    name: str
    dtype: str
    width: int


Layout = dict[str, tuple[str, int]]
"""name -> (dtype, width); width 0 is a scalar, else a vector of that length."""


def layout(feeds: Sequence[FedValue]) -> Layout:
    """Each fed value's type and width, in the order the chain feeds them."""
    return {f.name: (f.dtype, f.width) for f in feeds}


def module_source(table: Layout) -> str:
    """The generated module's ``FED`` table (name: dtype, width) and ``P``: a fed value is an
    input of its own (:func:`fed_nodes` makes them)."""
    rows = "".join(f"    {name!r}: ({dtype!r}, {width}),\n"
                   for name, (dtype, width) in table.items())
    return ((f"FED = {{\n{rows}}}" if rows else "FED = {}") + "\n"
            + "FED_NODES = {}\n\n\n"
            "def P(name, dtype):\n"
            '    """A value fed by the preview at run time: an input of its own (FED: each\n'
            '    name\'s type and width; width 0 is a scalar)."""\n'
            "    return FED_NODES[name]")


def fed_nodes(module: Any, prefix: str = PREFIX) -> None:
    """Make the module's fed inputs (one ``external_source`` per value) in the pipeline being
    traced, for its ``P``; ``prefix`` starts their names (a fused pipeline gives each of its
    chains its own: :mod:`pipelines.fused_render`)."""
    from nvidia.dali import fn, types

    module.FED_NODES = {name: fn.external_source(name=prefix + name, dtype=getattr(types, t))
                        for name, (t, _) in module.FED.items()}


def tensors(values: Mapping[str, np.ndarray], table: Layout, batch: int) -> dict[str, Any]:
    """What :func:`feed` hands DALI for each value (each (batch,) or (batch, k) by name): a
    ``TensorListCPU`` per input, made once and fed to every render of a document (DALI
    copies what it is fed)."""
    from nvidia.dali.tensors import TensorListCPU

    out = {}
    for name, (dtype, width) in table.items():
        shape = (batch,) if width == 0 else (batch, width)
        column = np.ascontiguousarray(np.asarray(values[name], DTYPES[dtype]).reshape(shape))
        out[PREFIX + name] = TensorListCPU(column)
    return out


def feed(pipe: Any, inputs: Mapping[str, Any]) -> None:
    """Feed a built pipeline: a ``TensorListCPU`` (the values' tensors, and the engine's image
    and label batches, :mod:`pipelines.input_batches`) straight to the backend (what
    ``Pipeline.feed_input`` ends with, without its ~20 us of Python a call), anything else
    through ``feed_input``."""
    from nvidia.dali.tensors import TensorListCPU

    note_fed(pipe, inputs)
    for name, data in inputs.items():
        if isinstance(data, TensorListCPU):
            pipe._pipe.SetExternalTLInput(name, data, 0, False)  # host data: no CUDA stream
        else:
            pipe.feed_input(name, data)


def run_fed(pipe: Any) -> Any:
    """``pipe.run()`` after :func:`feed` (what the benches' floor records as one run)."""
    outputs = pipe.run()
    note_ran(pipe)
    return outputs
