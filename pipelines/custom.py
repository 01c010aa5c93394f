"""User-defined augmentations: a Python function over a NumPy (CPU) or CuPy (GPU) image.

Declare the parameters with the same :class:`~pipelines.params.Param` fields as built-in
operators, and the operator appears in the picker, the gallery, presets and the exported code.
DALI runs it through ``fn.python_function``: each parameter arrives as a 0-d array input, so
values drawn per sample (``uniform``) work, and the exported module contains the function's
source, so training runs the same code.

    @custom_op("custom.vignette", "Darken the corners.", params=(Param(...),))
    def vignette(image, strength):
        ...
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterable
from typing import Any

from .catalog import CATALOG, Catalog, OpSpec
from .params import Param


def custom_op(name: str, doc: str, *, params: Iterable[Param] = (),
              devices: Iterable[str] = ("cpu", "gpu"), magnitude: str | None = None,
              signed: bool = False, catalog: Catalog = CATALOG,
              replace: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``function(image, *params)`` as an operator named ``name``."""
    params = tuple(params)

    def register(function: Callable[..., Any]) -> Callable[..., Any]:
        _check_function(name, function, params)
        for p in params:
            if p.kind in ("float", "int") and not p.runtime:
                raise ValueError(f"{name}: parameter {p.name!r} must be declared runtime=True "
                                 "(custom operators receive every value as a per-sample input)")
        inputs = ", ".join(f"{{{p.name}}}" for p in params)
        call = (f"fn.python_function({{x}}, *_inputs({{x}}, {inputs}), "
                f"function={function.__name__}, output_layouts=\"HWC\")"
                if params else
                f"fn.python_function({{x}}, function={function.__name__}, "
                f"output_layouts=\"HWC\")")
        spec = OpSpec(name, "custom", doc, call, params, devices=frozenset(devices),
                      magnitude=magnitude, signed=signed, function=function,
                      gpu_reason="" if "cpu" in devices else "the function is written for CuPy")
        if replace and name in catalog:
            from .catalog import unregister

            unregister(catalog, name)
        catalog.register(spec)
        return function

    return register


def _check_function(name: str, function: Callable[..., Any], params: tuple[Param, ...]) -> None:
    if not function.__name__.isidentifier() or function.__name__ == "<lambda>":
        raise ValueError(f"{name}: the function must be a named, module-level def")
    try:
        source_of(function)
    except (OSError, TypeError) as e:
        raise ValueError(f"{name}: cannot read the source of {function.__name__} ({e}); define "
                         "it in a .py file or a notebook cell") from e
    sig = inspect.signature(function)
    names = list(sig.parameters)[1:]
    if names != [p.name for p in params]:
        raise ValueError(f"{name}: {function.__name__}{sig} must take (image, "
                         f"{', '.join(p.name for p in params)}) in the declared order")
    for p in params:
        if p.kind not in ("float", "int", "bool"):
            raise ValueError(f"{name}: parameter {p.name!r} is a {p.kind}; custom operators take "
                             "float, int or bool parameters")


def source_of(function: Callable[..., Any]) -> str:
    """The function's source without decorators (it is copied into generated modules)."""
    src = textwrap.dedent(inspect.getsource(function))
    tree = ast.parse(src)
    node = tree.body[0]
    if not isinstance(node, ast.FunctionDef):
        raise TypeError("not a function definition")
    lines = src.splitlines()
    return "\n".join(lines[node.lineno - 1:]).rstrip()
