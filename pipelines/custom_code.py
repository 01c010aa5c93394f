"""What a custom operator's function takes into the generated modules besides its own source.

The preview module and the exported training module hold a copy of the function's source, not
the user's module, so every name the function reads from outside (its module's globals, its
closure) must come along: a module becomes an import line, a constant (int, float, str, bool,
None, or a tuple of them) an assignment of the value it had at registration. Anything else (a
function, a class, an array) cannot be copied faithfully, so registration refuses it and says
what to do instead, rather than the preview failing later with a ``NameError``.
"""

from __future__ import annotations

import ast
import builtins
import functools
import math
import sys
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .code_format import LINE_LIMIT, format_statement, split_string
from .embedded_helpers import helpers

STD_MODULES = ("argparse", "atexit", "collections", "json", "math", "os", "pathlib", "reprlib",
               "shutil", "sys", "tempfile")
"""Standard-library modules the generated modules import (each where their code uses it)."""
RESERVED_MODULES: dict[str, str] = {
    **{m: m for m in STD_MODULES}, "np": "numpy",
    "fn": "nvidia.dali.fn", "types": "nvidia.dali.types", "dmath": "nvidia.dali.math",
}
"""Names the generated modules import themselves, and the module each one is: a function may
read such a name only as that very module (the module's own import line then serves both).
:func:`pipelines.custom.custom_op` adds the ``nvidia.dali.auto_aug`` modules the catalog's
policies use (``catalog.AUTO_AUG_MODULES``)."""

OWN_NAMES = frozenset({
    "pipeline_def", "do_not_convert", "signed_bin", "DataNode", "SEED", "HW_DECODER_LOAD",
    "IMAGE_EXTENSIONS",
    "PRESET_JSON", "P", "FED", "FED_NODES", "_checked", "augment", "finish",
    "select", "flat_folder_files",
    "reader_args", "training_pipeline", "create_pipeline", "shard_seed", "check_shard",
    "checkpoint_file", "read_checkpoint", "replay", "batch_arguments",
    "batch_options", "script_batch", "save_npz", "batch_at", "main",
    # the labelled module's own (pipelines.export_labels, pipelines.coco_keypoints)
    "LABEL_KEYS", "unfit_for_masks", "keypoint_table", "keypoints_lookup", "keypoint_count",
    "pad_per_batch",
    # the annotation checks the labelled module carries (pipelines.coco_check) and theirs
    "checked_annotations", "readable", "cut", "_Quoter", "quote", "MAX_QUOTE", "SIZE_THRESHOLD",
    "BOX_TOLERANCE", "INT32_MAX", "is_int", "is_number", "numbers", "safe_name",
    "check_categories", "image_problem", "check_images", "box_problem", "clipped_box",
    "rle_counts", "rle_problem", "segmentation_problem", "keypoints_problem",
    "annotation_problem", "clean_annotation", "check_entries", "listed_files", "MASK_ID_MAX",
    "drawable_masks",  # pipelines.coco_masks, carried with the checks
})
"""Top-level names of the generated modules besides the module imports and the graph helpers
(:func:`reserved_names` adds those)."""


@functools.cache
def reserved_names() -> frozenset[str]:
    """Every top-level name of the generated modules but their imports (a test keeps this
    complete): a custom function, or a global it reads, by one of these names would replace
    the module's own. The graph helpers' come from their declarations
    (:func:`pipelines.embedded_helpers.helpers`, gathered on first use), so a new helper is
    reserved as it is added."""
    return OWN_NAMES | frozenset(helpers())


CONSTANT_CHARS = 10_000
"""Longest source a copied constant may take: larger data belongs in a file the function
loads, not in every generated module."""


@dataclass(frozen=True)
class CallCost:
    """Seconds one call of a custom function takes: ``per_call`` plus ``per_pixel`` times the
    image's pixels, measured at registration (:mod:`pipelines.custom_probe`)."""

    per_call: float
    per_pixel: float

    def seconds(self, pixels: Iterable[int]) -> float:
        """Estimated time of one call per image of ``pixels`` pixels."""
        return sum(self.per_call + self.per_pixel * p for p in pixels)

    def describe(self) -> str:
        return f"{_duration(self.per_call)} per call + {self.per_pixel * 1e9:.1f} ns per pixel"


@dataclass(frozen=True)
class CustomCode:
    """A custom function as the generated modules hold it: its source (no decorators), the
    imports and constants it reads, and what a call costs (None: it could not be run here)."""

    function_name: str
    source: str
    imports: tuple[tuple[str, str], ...] = ()
    """(module, name) pairs: ``import module as name``."""
    constants: tuple[tuple[str, str], ...] = ()
    """(name, source of its value)."""
    cost: CallCost | None = None

    @property
    def standalone(self) -> str:
        """Imports, constants and function: what registration runs to probe the copy."""
        lines = "\n".join(import_line(module, name) for module, name in self.imports)
        return f"{lines}\n\n\n{self.text}" if lines else self.text

    @property
    def text(self) -> str:
        """Constants and function, as they go into a module (import lines go in its header)."""
        consts = "\n".join(constant_line(n, v) for n, v in self.constants)
        return f"{consts}\n\n\n{self.source}" if consts else self.source

    def bindings(self) -> dict[str, str]:
        """Every top-level name the copy defines, with what it binds it to."""
        out = {name: import_line(module, name) for module, name in self.imports}
        out.update((n, constant_line(n, v)) for n, v in self.constants)
        out[self.function_name] = self.source
        return out


def import_line(module: str, name: str) -> str:
    return f"import {module}" if module == name else f"import {module} as {name}"


def constant_line(name: str, value: str) -> str:
    """``name = value`` within the line limit (tuples one item per line, long plain strings as
    implicitly concatenated chunks), the way ruff formats it."""
    line = f"{name} = {value}"
    if len(line) <= LINE_LIMIT:
        return line
    text = ast.literal_eval(value) if value[:1] in ("'", '"') else None
    if isinstance(text, str) and _plain(text):
        return "\n".join([f"{name} = ("] + split_string(text, "    ") + [")"])
    return "\n".join(format_statement(line, ""))


def capture(op: str, function: Callable[..., Any], source: str,
            reserved: Mapping[str, str] = RESERVED_MODULES) -> CustomCode:
    """The imports and constants ``function`` (whose source is ``source``) reads from outside;
    raises ValueError naming ``op``, the name and what to do for anything else. ``reserved``:
    the names the generated modules bind to modules, and those modules."""
    fname = function.__name__
    if fname in reserved_names() or fname in reserved or _dunder(fname):
        raise ValueError(f"{op}: a custom function cannot be named {fname!r}, which the "
                         "generated module uses itself: rename the function")
    if hasattr(builtins, fname):
        raise ValueError(f"{op}: a custom function cannot be named {fname!r}, a Python builtin "
                         "that the generated module's own code may call: rename the function")
    tree = ast.parse(source).body[0]
    imports: list[tuple[str, str]] = []
    constants: list[tuple[str, str]] = []
    closure = _closure(function)
    for name in outside_names(tree):
        if name in closure:
            value = closure[name]
        elif name in function.__globals__:
            value = function.__globals__[name]
        elif hasattr(builtins, name):
            continue
        else:
            raise ValueError(f"{op}: {fname} reads {name!r}, which is not defined when the "
                             f"operator is registered: define it above {fname}, or inside it")
        if value is function:
            continue  # a recursive call: the copy defines the name itself
        text, value = _entry(op, fname, name, value, reserved)
        if isinstance(value, types.ModuleType):
            imports.append((text, name))
        else:
            constants.append((name, text))
    return CustomCode(fname, source, tuple(imports), tuple(constants))


def outside_names(tree: ast.AST) -> list[str]:
    """Names the function reads that it does not bind itself (in order of first use). Any name
    bound anywhere inside counts as local, nested functions and comprehensions included."""
    bound: set[str] = set()
    declared: set[str] = set()
    reads: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                reads.setdefault(node.id)
            else:
                bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node is not tree:
                bound.add(node.name)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
        elif isinstance(node, ast.Global):
            declared.update(node.names)
            reads.update(dict.fromkeys(node.names))
    return [n for n in reads if n not in bound or n in declared]


def check_together(codes: Sequence[tuple[str, CustomCode]]) -> None:
    """Raises ValueError when two operators' copies bind one name differently (one module
    holds them all)."""
    seen: dict[str, tuple[str, str]] = {}
    for op, code in codes:
        for name, bound in code.bindings().items():
            other = seen.get(name)
            if other is None or other[1] == bound:
                seen.setdefault(name, (op, bound))
                continue
            if _what(bound) == _what(other[1]) == "a function":
                raise ValueError(f"{op}: its function {name} is not the function {other[0]} "
                                 "runs by that name, and one generated module may hold both: "
                                 "rename one")
            raise ValueError(f"{op}: {code.function_name} needs {name!r} to be "
                             f"{_what(bound)}, but {other[0]} needs it to be "
                             f"{_what(other[1])}, and one generated module may hold "
                             "both: rename one")


def module_text(codes: Sequence[CustomCode], wrapper: str) -> str:
    """The custom part of a generated module: ``wrapper`` (the output check) once, then each
    function with its constants."""
    if not codes:
        return ""
    parts, emitted = [wrapper], set()
    for code in codes:
        consts = [constant_line(n, v) for n, v in code.constants if n not in emitted]
        emitted.update(n for n, _ in code.constants)
        parts.append("\n".join(consts) + "\n\n\n" + code.source if consts else code.source)
    return "\n\n\n".join(parts)


def import_lines(codes: Sequence[CustomCode]) -> list[str]:
    """Each import line the functions need for a module's header, once. DALI's own modules
    are left out: the header always imports them (``from nvidia.dali import fn, types``)."""
    return list(dict.fromkeys(import_line(m, n) for c in codes for m, n in c.imports
                              if not (m.startswith("nvidia.dali.") and m.endswith(f".{n}"))))


def _entry(op: str, fname: str, name: str, value: Any,
           reserved: Mapping[str, str]) -> tuple[str, Any]:
    """(module name, the module) or (source of the constant, the value)."""
    if _dunder(name) or name in reserved_names() or (
            name in reserved and (not isinstance(value, types.ModuleType)
                                  or value.__name__ != reserved[name])):
        raise ValueError(f"{op}: {fname} reads {name!r}, a name the generated module uses "
                         f"itself: import what it stands for inside {fname}, under another name")
    if hasattr(builtins, name):  # its module rebinds a builtin: the copy would, module-wide
        raise ValueError(f"{op}: {fname} reads {name!r}, which its module binds in place of the "
                         "Python builtin; copied, it would replace the builtin for the generated "
                         f"module's own code: rename it, or define it inside {fname}")
    if isinstance(value, types.ModuleType):
        module = value.__name__
        if module == "__main__" or sys.modules.get(module) is not value:
            raise ValueError(f"{op}: {fname} reads the module {name!r} ({module}), which cannot "
                             f"be imported by name in the generated module: import what "
                             f"{fname} needs inside it")
        return module, value
    literal = _literal(value)
    if literal is None:
        raise ValueError(f"{op}: {fname} reads {name!r}, a {type(value).__name__}; only "
                         "modules and constants (int, float, str, bool, None or tuples of "
                         f"them) are copied into the generated code: define {name} inside "
                         f"{fname}, or import it there")
    if len(literal) > CONSTANT_CHARS:
        raise ValueError(f"{op}: {fname} reads {name!r}, a constant of {len(literal)} "
                         f"characters; at most {CONSTANT_CHARS} are copied into the generated "
                         f"code: load it inside {fname} instead")
    return literal, value


def _literal(value: Any, depth: int = 0) -> str | None:
    """Source that evaluates to ``value`` (exact types only: an IntEnum is not an int here)."""
    kind = type(value)
    if value is None or kind in (bool, int):
        return repr(value)
    if kind is float:
        return repr(value) if math.isfinite(value) else f'float("{value!r}")'
    if kind is str:
        if _plain(value):
            q = "'" if value.count('"') > value.count("'") else '"'
            return q + value.replace("\\", "\\\\").replace(q, "\\" + q) + q
        text = repr(value)  # escapes what is not printable; ruff prefers double quotes
        return f'"{text[1:-1]}"' if text[0] == "'" and '"' not in value else text
    if kind is tuple and depth < 8:
        items = [_literal(v, depth + 1) for v in value]
        if any(i is None for i in items):
            return None
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"  # type: ignore
    return None


def _closure(function: Callable[..., Any]) -> dict[str, Any]:
    code = getattr(function, "__code__", None)
    cells = getattr(function, "__closure__", None) or ()
    out = {}
    for name, cell in zip(code.co_freevars if code else (), cells, strict=True):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell: the enclosing function never assigned it
            continue
    return out


def _what(bound: str) -> str:
    first = bound.splitlines()[0]
    return "a function" if first.startswith("def ") else f"`{first}`"


def _dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _plain(s: str) -> bool:
    return s.isascii() and s.isprintable()


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
