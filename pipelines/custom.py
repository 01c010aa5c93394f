"""User-defined augmentations: a Python function over a NumPy (CPU) or CuPy (GPU) image.

Declare the parameters with the same :class:`~pipelines.params.Param` fields as built-in
operators, and the operator appears in the picker, the gallery, presets and the exported code.
DALI runs it through ``fn.python_function``: each parameter arrives as a 0-d array input, so
values drawn per sample (``uniform``) work, and the exported module contains the function's
source, so training runs the same code.

Registration checks the function the way the preview runs it: the module-level imports and
constants it reads are copied with it (:mod:`pipelines.custom_code`; anything else is refused
with what to do), and the copy runs once on test images with the defaults
(:mod:`pipelines.custom_probe`), so a failure or a result that is not an RGB uint8 image of the
input's size is refused here, and the measured cost bounds each render's Python time
(:mod:`pipelines.custom_budget`).

    @custom_op("custom.my_effect", "What it does.", params=(Param(...),))
    def my_effect(image, strength):
        ...

:mod:`pipelines.ops.custom` ships two examples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .catalog import AUTO_AUG_MODULES, CATALOG, Catalog, unregister
from .custom_code import RESERVED_MODULES, check_together
from .custom_spec import custom_spec, source_of
from .labels import LabelRule
from .params import Param

__all__ = ["MODULE_NAMES", "custom_op", "source_of"]

MODULE_NAMES = {**RESERVED_MODULES, **{m: f"nvidia.dali.auto_aug.{m}" for m in AUTO_AUG_MODULES}}
"""Every name the generated modules bind to a module: a function may read one only as that
module."""


def custom_op(name: str, doc: str, *, params: Iterable[Param] = (),
              devices: Iterable[str] = ("cpu", "gpu"), magnitude: str | None = None,
              signed: bool = False, catalog: Catalog = CATALOG, replace: bool = False,
              labels: LabelRule | None = None,
              ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``function(image, *params)`` as an operator named ``name``. ``labels``: what
    it does to boxes, masks and keypoints; ``labels.KEEP`` for a function that changes pixel
    values only (by default it is refused in chains with labels)."""
    params = tuple(params)

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        spec = custom_spec(name, doc, function, params=params, devices=devices,
                           magnitude=magnitude, signed=signed, reserved=MODULE_NAMES,
                           labels=labels)
        assert spec.custom_code is not None
        for other in catalog.values():  # one generated module may hold any two of them
            if other.custom_code is not None and not (replace and other.name == name):
                check_together([(other.name, other.custom_code), (name, spec.custom_code)])
        if replace and name in catalog:
            unregister(catalog, name)
        catalog.register(spec)
        return function

    return register
