"""The catalog entry of a user-defined Python operator, and the source the generated code copies.

Pure (registers nothing), so that the shipped examples (:mod:`pipelines.ops.custom`) can be
declared like every other operator, and :func:`pipelines.custom.custom_op` can register them.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable, Iterable
from typing import Any

from .opspec import OpSpec
from .params import Param


def custom_spec(name: str, doc: str, function: Callable[..., Any], *,
                params: Iterable[Param] = (), devices: Iterable[str] = ("cpu", "gpu"),
                magnitude: str | None = None, signed: bool = False) -> OpSpec:
    """The entry that runs ``function(image, *params)`` through DALI's ``python_function``."""
    params = tuple(params)
    devices = tuple(devices)
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
    return OpSpec(name, "custom", doc, call, params, devices=frozenset(devices),
                  magnitude=magnitude, signed=signed, function=function,
                  gpu_reason="" if "cpu" in devices else "the function is written for CuPy")


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
