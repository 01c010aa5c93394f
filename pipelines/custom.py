"""User-defined augmentations: a Python function over a NumPy (CPU) or CuPy (GPU) image.

Declare the parameters with the same :class:`~pipelines.params.Param` fields as built-in
operators, and the operator appears in the picker, the gallery, presets and the exported code.
DALI runs it through ``fn.python_function``: each parameter arrives as a 0-d array input, so
values drawn per sample (``uniform``) work, and the exported module contains the function's
source, so training runs the same code.

    @custom_op("custom.my_effect", "What it does.", params=(Param(...),))
    def my_effect(image, strength):
        ...

:mod:`pipelines.ops.custom` ships two examples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .catalog import CATALOG, Catalog, unregister
from .custom_spec import custom_spec, source_of
from .params import Param

__all__ = ["custom_op", "source_of"]


def custom_op(name: str, doc: str, *, params: Iterable[Param] = (),
              devices: Iterable[str] = ("cpu", "gpu"), magnitude: str | None = None,
              signed: bool = False, catalog: Catalog = CATALOG,
              replace: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``function(image, *params)`` as an operator named ``name``."""
    params = tuple(params)

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        spec = custom_spec(name, doc, function, params=params, devices=devices,
                           magnitude=magnitude, signed=signed)
        if replace and name in catalog:
            unregister(catalog, name)
        catalog.register(spec)
        return function

    return register
