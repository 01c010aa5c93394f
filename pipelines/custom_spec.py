"""The catalog entry of a user-defined Python operator, and the source the generated code copies.

Pure (registers nothing), so that the shipped examples (:mod:`pipelines.ops.custom`) can be
declared like every other operator, and :func:`pipelines.custom.custom_op` can register them.
Making an entry checks the function the way the preview will run it: the copy of its source
(with the imports and constants it reads, :mod:`pipelines.custom_code`) is loaded and run once
on test images (:mod:`pipelines.custom_probe`), so a missing name, a failure or a result that
is not an RGB uint8 image of the input's size is refused here, naming the operator.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .custom_code import RESERVED_MODULES, capture
from .custom_probe import load_copy, probe
from .labels import LabelRule, Refuse
from .opspec import OpSpec
from .params import Param

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
"""An operator name: dotted identifiers (it is written into generated code as a string)."""


UNDECLARED = Refuse("a Python operator does not say how it moves labels (register it with "
                    "labels=KEEP if it changes pixel values only)")
"""The label rule of a custom operator registered without one."""


def custom_spec(name: str, doc: str, function: Callable[..., Any], *,
                params: Iterable[Param] = (), devices: Iterable[str] = ("cpu", "gpu"),
                magnitude: str | None = None, signed: bool = False,
                reserved: Mapping[str, str] = RESERVED_MODULES,
                labels: LabelRule | None = None) -> OpSpec:
    """The entry that runs ``function(image, *params)`` through DALI's ``python_function``
    (``reserved``: names the generated modules bind to modules, see ``custom_code.capture``)."""
    params = tuple(params)
    devices = tuple(devices)
    if not isinstance(name, str) or NAME.fullmatch(name) is None:
        raise ValueError(f"custom operator name {name!r} is not allowed; expected dotted "
                         "identifiers such as 'custom.my_effect'")
    _check_function(name, function, params)
    for p in params:
        if p.kind in ("float", "int") and not p.runtime:
            raise ValueError(f"{name}: parameter {p.name!r} must be declared runtime=True "
                             "(custom operators receive every value as a per-sample input)")
    code = capture(name, function, source_of(function), reserved)
    cost = probe(name, load_copy(name, code), params, devices)
    code = dataclasses.replace(code, cost=cost)
    inputs = ", ".join(f"{{{p.name}}}" for p in params)
    wrapped = f'_checked({function.__name__}, "{name}")'
    call = (f"fn.python_function({{x}}, *_inputs({{x}}, {inputs}), "
            f"function={wrapped}, output_layouts=\"HWC\")"
            if params else
            f"fn.python_function({{x}}, function={wrapped}, output_layouts=\"HWC\")")
    return OpSpec(name, "custom", doc, call, params, devices=frozenset(devices),
                  magnitude=magnitude, signed=signed, function=function, custom_code=code,
                  labels=labels if labels is not None else UNDECLARED,
                  gpu_reason="" if "cpu" in devices else "the function is written for CuPy")


def _check_function(name: str, function: Callable[..., Any], params: tuple[Param, ...]) -> None:
    if (not callable(function) or not getattr(function, "__name__", "").isidentifier()
            or function.__name__ == "<lambda>"):
        raise ValueError(f"{name}: the function must be a named def")
    try:
        source_of(function)
    except (OSError, TypeError, SyntaxError) as e:
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
    if not isinstance(node, ast.FunctionDef) or node.name != function.__name__:
        raise TypeError("not a function definition")
    lines = src.splitlines()
    return without_annotations("\n".join(lines[node.lineno - 1:]).rstrip())


def without_annotations(src: str) -> str:
    """``src`` without the annotations of its functions' parameters, returns and local
    variables (``out: T = v`` becomes ``out = v``; a bare ``out: T``, ``pass``). The copy
    runs in a generated module that evaluates them when the ``def`` runs, while the user's
    module may never have (``from __future__ import annotations``, ``TYPE_CHECKING``
    imports, ``NDArray[np.uint8]``); nothing reads them, and each name in them would have
    to be copied too (and a typing alias cannot be). Comments and layout stay; a default
    loses its spaces (``k: float = 1.0`` becomes ``k=1.0``, as ruff writes it)."""
    tree = ast.parse(src)
    starts = [0]
    for line in src.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    lines = src.splitlines(keepends=True)

    def at(lineno: int, col: int) -> int:  # ast columns count UTF-8 bytes
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode())

    cuts: list[tuple[int, int, str]] = []
    for node in _local_annotations(tree):
        if node.value is not None:  # out: NDArray = ... -> out = ...
            target_end = at(node.target.end_lineno or 0, node.target.end_col_offset or 0)
            cuts.append((target_end, at(node.value.lineno, node.value.col_offset), " = "))
        elif isinstance(node.target, ast.Name):  # out: NDArray -> pass (keeps a block whole)
            cuts.append((at(node.lineno, node.col_offset),
                         at(node.end_lineno or 0, node.end_col_offset or 0), "pass"))
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = node.args
        for arg in [*a.posonlyargs, *a.args, a.vararg, *a.kwonlyargs, a.kwarg]:
            if arg is None or arg.annotation is None:
                continue
            end = at(arg.annotation.end_lineno or 0, arg.annotation.end_col_offset or 0)
            default = re.match(r"[ \t]*=[ \t]*", src[end:])
            cuts.append((at(arg.lineno, arg.col_offset) + len(arg.arg),
                         end + (default.end() if default else 0), "=" if default else ""))
        if node.returns is not None:
            begin = at(node.returns.lineno, node.returns.col_offset)
            arrow = src.rindex("->", 0, begin)
            while src[arrow - 1] in " \t":
                arrow -= 1
            end = at(node.returns.end_lineno or 0, node.returns.end_col_offset or 0)
            for _ in range(src.count("(", arrow, begin)):  # -> (a parenthesised annotation)
                end = src.index(")", end) + 1
            cuts.append((arrow, end, ""))
    for start, end, text in sorted(cuts, reverse=True):
        src = src[:start] + text + src[end:]
    return src


def _local_annotations(tree: ast.AST) -> list[ast.AnnAssign]:
    """Annotated statements in function bodies (not in a class body, where a dataclass reads
    them): Python never evaluates those annotations (PEP 526), with a value or without one
    (``x: T`` does nothing at run time; a bare ``obj.attr: T`` or ``a[i]: T`` still evaluates
    its target, so only a bare name is dropped)."""
    found, functions = [], (ast.FunctionDef, ast.AsyncFunctionDef)
    stack = [(tree, isinstance(tree, functions))]
    while stack:
        node, in_function = stack.pop()
        if in_function and isinstance(node, ast.AnnAssign):
            found.append(node)
        stack += [(c, isinstance(c, functions) or (in_function and not isinstance(c, ast.ClassDef)))
                  for c in ast.iter_child_nodes(node)]
    return found

