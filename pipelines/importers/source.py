"""Read a pasted torchvision / Albumentations pipeline from its syntax tree, never running it.

Only a whitelist of syntax is accepted: imports of the known libraries (recorded as aliases,
not executed), assignments or expressions whose value is a transform call, and inside calls
constants, tuples, lists, dicts, unary minus, arithmetic on numbers and the names assigned
above (their values as read: ``size = 224``, ``jitter = T.ColorJitter(...)``). Every other
construct, any name that resolves outside torchvision / Albumentations (``os.system``,
``__import__``, ``eval``), and any input over the size budgets is refused with the line and
column, before anything is evaluated. Lambdas inside ``Lambda(...)`` are kept as text only.
"""

from __future__ import annotations

import ast
import builtins
import math
from typing import Any

from .source_types import (
    MAX_NUMBER,
    Call,
    Opaque,
    Parsed,
    Symbol,
    expanded_size,
    number_problem,
    tv_tensor_key,
)

MAX_SOURCE = 64_000
"""Characters of pasted source (a long pipeline is ~3 KB)."""
MAX_NODES = 5_000
MAX_DEPTH = 24
MAX_ITEMS = 256
"""Elements of one list, tuple or dict literal."""
MAX_STRING = 200

LIBRARIES = ("torchvision", "albumentations")
_KNOWN_ROOTS = ("torchvision", "albumentations", "torch", "cv2", "PIL")
DEFAULT_ALIASES = {
    "T": "torchvision.transforms",
    "transforms": "torchvision.transforms",
    "v2": "torchvision.transforms.v2",
    "torchvision": "torchvision",
    "A": "albumentations",
    "albu": "albumentations",
    "albumentations": "albumentations",
    "ToTensorV2": "albumentations.pytorch.ToTensorV2",
    "InterpolationMode": "torchvision.transforms.InterpolationMode",
    "AutoAugmentPolicy": "torchvision.transforms.AutoAugmentPolicy",
    "torch": "torch",
    "nn": "torch.nn",
    "cv2": "cv2",
}
"""Names the documentation examples use without showing their imports."""

CV2_CONSTANTS = {
    "INTER_NEAREST": 0, "INTER_LINEAR": 1, "INTER_CUBIC": 2, "INTER_AREA": 3,
    "INTER_LANCZOS4": 4, "INTER_LINEAR_EXACT": 5, "INTER_NEAREST_EXACT": 6,
    "BORDER_CONSTANT": 0, "BORDER_REPLICATE": 1, "BORDER_REFLECT": 2, "BORDER_WRAP": 3,
    "BORDER_REFLECT_101": 4, "BORDER_REFLECT101": 4, "BORDER_DEFAULT": 4,
}
PIL_FILTERS = {"NEAREST": 0, "LANCZOS": 1, "ANTIALIAS": 1, "BILINEAR": 2, "BICUBIC": 3,
               "BOX": 4, "HAMMING": 5}
"""PIL's resampling filters (Image.BICUBIC, Image.Resampling.BICUBIC): torchvision takes these
codes as its interpolation (DINO, DeiT and MAE write them so)."""
TORCH_DTYPES = ("float32", "float", "float16", "half", "float64", "double", "uint8", "int64")
INTERPOLATION_MODES = ("NEAREST", "NEAREST_EXACT", "BILINEAR", "BICUBIC", "BOX", "HAMMING",
                       "LANCZOS")
AUTOAUGMENT_POLICIES = ("IMAGENET", "CIFAR10", "SVHN")


__all__ = ["Call", "Opaque", "Parsed", "SourceRefused", "Symbol", "number_problem", "parse_source"]


class SourceRefused(ValueError):
    """The input cannot be read safely; nothing of it was run."""

    def __init__(self, message: str, line: int | None = None, col: int | None = None) -> None:
        self.line = line
        self.col = col
        where = f"line {line}, column {col + 1}: " if line is not None and col is not None else ""
        super().__init__(where + message)


def parse_source(text: str) -> Parsed:
    """The transform pipeline of a Python snippet; SourceRefused says why not."""
    if len(text) > MAX_SOURCE:
        raise SourceRefused(f"the source has {len(text)} characters; at most {MAX_SOURCE} are "
                            "read (paste only the transform pipeline)")
    try:
        tree = ast.parse(text)
    except UnicodeEncodeError as e:  # a lone surrogate (half of a character pair)
        raise SourceRefused(f"character {e.start} is {text[e.start]!r}, a lone surrogate (half "
                            "of a character pair); allowed: Unicode text") from None
    except SyntaxError as e:
        raise SourceRefused(f"not valid Python: {e.msg}", e.lineno, (e.offset or 1) - 1) from e
    except (MemoryError, RecursionError, ValueError) as e:
        raise SourceRefused("the source is nested too deeply to read safely "
                            f"({type(e).__name__})") from e
    return _Reader(text).module(tree)


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.aliases: dict[str, str] = dict(DEFAULT_ALIASES)
        self.star: list[str] = []
        self.nodes = 0
        self.names: dict[str, tuple[int, Any]] = {}
        """Assigned names: (their statement's index, the value read)."""
        self.used: set[int] = set()
        """Statements whose value another one uses (a part, not a pipeline of its own)."""

    # ---- statements ---------------------------------------------------------------------------

    def module(self, tree: ast.Module) -> Parsed:
        found: list[tuple[str, Any]] = []
        for stmt in tree.body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self._import(stmt)
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                if stmt.value is None or not all(isinstance(t, ast.Name) for t in targets):
                    raise _refuse(stmt, "only `name = <transform pipeline>` assignments are read")
                name = ", ".join(t.id for t in targets if isinstance(t, ast.Name))
                found.append((name, self.value(stmt.value, 0)))
                self.names.update({t.id: (len(found) - 1, found[-1][1]) for t in targets
                                   if isinstance(t, ast.Name)})
            elif isinstance(stmt, ast.Expr):
                value = stmt.value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    continue  # a docstring or a note
                found.append(("the expression", self.value(value, 0)))
            elif isinstance(stmt, ast.Pass):
                continue
            else:
                raise _refuse(stmt, f"a {_describe(stmt)} is not read; paste the transform "
                              "pipeline (imports and `name = Compose([...])`) only: nothing "
                              "is executed")
        roots = [f for i, f in enumerate(found) if i not in self.used]
        pipelines = [(n, v) for n, v in _expand(roots) if _is_pipeline(v)]
        if not pipelines:
            raise SourceRefused("no transform pipeline found: expected a torchvision "
                                "`Compose([...])` / `v2.Compose([...])`, an Albumentations "
                                "`A.Compose([...])` or a list of transforms")
        chained = [p for p in pipelines if isinstance(p[1], list) or p[1].name in CHAINS]
        chosen = next((p for p in pipelines if "train" in p[0].lower()),
                      (chained or pipelines)[0])  # a chain before a lone transform's variable
        notes = []
        others = [n for n, _ in pipelines if n != chosen[0]]
        if others:
            notes.append(f"imported {chosen[0]}; also found {', '.join(others)} (paste one "
                         "pipeline at a time to import another)")
        return Parsed(chosen[1], chosen[0], notes)

    def _import(self, stmt: ast.Import | ast.ImportFrom) -> None:
        if isinstance(stmt, ast.Import):
            for a in stmt.names:
                self._check_module(stmt, a.name)
                self.aliases[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0])
            return
        module = stmt.module or ""
        if stmt.level:
            raise _refuse(stmt, "relative imports are not read")
        self._check_module(stmt, module)
        for a in stmt.names:
            if a.name == "*":
                self.star.append(module)
            else:
                self.aliases[a.asname or a.name] = f"{module}.{a.name}"

    def _check_module(self, stmt: ast.stmt, module: str) -> None:
        if module.split(".")[0] not in _KNOWN_ROOTS:
            raise _refuse(stmt, f"import of {module!r} is not allowed; only torchvision, "
                          "albumentations, torch, cv2 and PIL names are understood (nothing "
                          "is imported or run)")

    # ---- expressions --------------------------------------------------------------------------

    def value(self, node: ast.AST, depth: int) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _refuse(node, f"the pipeline has more than {MAX_NODES} syntax nodes")
        if depth > MAX_DEPTH:
            raise _refuse(node, f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, ast.Constant):
            return _constant(node)
        if isinstance(node, (ast.List, ast.Tuple)):
            if len(node.elts) > MAX_ITEMS:
                raise _refuse(node, f"a list of {len(node.elts)} items; at most {MAX_ITEMS}")
            items = [self.value(e, depth + 1) for e in node.elts]
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            if len(node.keys) > MAX_ITEMS:
                raise _refuse(node, f"a dict of {len(node.keys)} items; at most {MAX_ITEMS}")
            out = {}
            for k, v in zip(node.keys, node.values, strict=True):
                key = k.value if isinstance(k, ast.Constant) else tv_tensor_key(
                    self.resolve(k)) if isinstance(k, (ast.Name, ast.Attribute)) else None
                if not isinstance(key, str):
                    raise _refuse(node, "dict keys must be string literals or tv_tensors classes")
                out[key] = self.value(v, depth + 1)
            return out
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = self.value(node.operand, depth + 1)
            if not _is_number(v):
                raise _refuse(node, "a sign applies to numbers only")
            return -v if isinstance(node.op, ast.USub) else v
        if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITH_TYPES):
            return self._arith(node, depth)
        if isinstance(node, ast.Name) and node.id in self.names:
            return self._variable(node)
        if isinstance(node, (ast.Name, ast.Attribute)):
            return self._symbol(node)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Lambda):
            raise _refuse(node, "a lambda is code that would have to run; it is read only as "
                          "the argument of Lambda(...), which is then reported as not imported")
        raise _refuse(node, f"{_describe(node)} is not read (only literals, lists, tuples, "
                      "dicts and transform calls are)")

    def _arith(self, node: ast.BinOp, depth: int) -> Any:
        a, b = self.value(node.left, depth + 1), self.value(node.right, depth + 1)
        if isinstance(node.op, ast.Mult) and isinstance(b, (list, tuple)):
            a, b = b, a
        if isinstance(node.op, ast.Mult) and isinstance(a, (list, tuple)) and \
                isinstance(b, int) and not isinstance(b, bool):  # [0.5] * 3
            if not 0 <= len(a) * b <= MAX_ITEMS:
                raise _refuse(node, f"a repeated list of {len(a) * b} items; at most {MAX_ITEMS}")
            if b > 1:  # each copy is read again: it counts against the node budget
                self.nodes += expanded_size(a, MAX_NODES) * (b - 1)
                if self.nodes > MAX_NODES:
                    raise _refuse(node, f"a repeated list makes the pipeline more than "
                                  f"{MAX_NODES} values (each repeated item counts, with "
                                  "what it holds)")
            return a * b
        if not (_is_number(a) and _is_number(b)):
            raise _refuse(node, "arithmetic applies to numbers only")
        if isinstance(node.op, ast.Div) and b == 0:
            raise _refuse(node, "division by zero")
        result = _ARITH[type(node.op)](a, b)
        if not math.isfinite(result) or abs(result) > MAX_NUMBER:
            raise _refuse(node, f"the number {result!r:.30} is outside +-{MAX_NUMBER:g}")
        return result

    def resolve(self, node: ast.AST) -> str:
        """The dotted path a name or attribute chain refers to (imports applied)."""
        parts: list[str] = []
        cur = node
        while isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        if isinstance(cur, ast.Call):
            inner = ast.get_source_segment(self.text, cur.func) or "a call"
            raise _refuse(node, f"using the result of {inner[:40]!r}(...) is not allowed: "
                          "only transform classes of torchvision and Albumentations are read, "
                          "and nothing is run")
        if not isinstance(cur, ast.Name):
            raise _refuse(node, f"{_describe(cur)} cannot name a transform")
        head = cur.id
        if head in self.aliases:
            base = self.aliases[head]
        elif not parts and self.star and not _forbidden(head):
            base = f"{self.star[0]}.{head}"
        else:
            base = head
        return ".".join([base, *reversed(parts)])

    def _variable(self, node: ast.Name) -> Any:
        """The value a name was assigned above; every use counts against the node budget."""
        index, value = self.names[node.id]
        self.used.add(index)
        self.nodes += expanded_size(value, MAX_NODES)
        if self.nodes > MAX_NODES:
            raise _refuse(node, f"the pipeline has more than {MAX_NODES} values (each use of "
                          f"{node.id!r} counts, with what it holds)")
        return value

    def _symbol(self, node: ast.Name | ast.Attribute) -> Symbol:
        path = self.resolve(node)
        last = path.rsplit(".", 1)[-1]
        if path.startswith("cv2.") and last in CV2_CONSTANTS:
            return Symbol(path, CV2_CONSTANTS[last])
        if path.startswith("PIL.") and last in PIL_FILTERS:
            return Symbol(path, PIL_FILTERS[last])
        if path.startswith("torch.") and last in TORCH_DTYPES:
            return Symbol(path, last)
        if ".InterpolationMode." in f".{path}" and last in INTERPOLATION_MODES:
            return Symbol(path, last.lower().replace("_", "-"))
        if ".AutoAugmentPolicy." in f".{path}" and last in AUTOAUGMENT_POLICIES:
            return Symbol(path, last.lower())
        raise _refuse(node, f"the name {path!r} is neither assigned above nor a known "
                      "constant of torchvision, Albumentations, torch, cv2 or PIL (only "
                      "`name = value` lines before its use are read)")

    def _call(self, node: ast.Call, depth: int) -> Call:
        path = self.resolve(node.func)
        head = path.split(".")[0]
        name = path.rsplit(".", 1)[-1]
        if _forbidden(head) or _forbidden(name):
            raise _refuse(node, f"a call to {path!r} is not allowed: only transform classes of "
                          "torchvision and Albumentations are read, and nothing is run")
        if head in LIBRARIES:
            library = head
        elif path in ("torch.nn.Sequential", "torch.nn.ModuleList"):
            library = "torchvision"
        elif head in _KNOWN_ROOTS or "." in path:
            raise _refuse(node, f"a call to {path!r} is not allowed: only transform classes of "
                          "torchvision and Albumentations are read, and nothing is run")
        else:
            library = "custom"  # a user's own class: reported as not imported
        args: list[Any] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise _refuse(a, "*args is not read; write the arguments out")
            args.append(self._argument(a, name, depth))
        kwargs: dict[str, Any] = {}
        for k in node.keywords:
            if k.arg is None:
                raise _refuse(k.value, "**kwargs is not read; write the arguments out")
            kwargs[k.arg] = self._argument(k.value, name, depth)
        text = ast.get_source_segment(self.text, node) or name
        text = " ".join(text.split())
        return Call(library, path.rsplit(".", 1)[0], name, tuple(args), kwargs, node.lineno,
                    node.col_offset, text if len(text) <= 100 else text[:97] + "...")

    def _argument(self, node: ast.AST, name: str, depth: int) -> Any:
        if isinstance(node, ast.Lambda) and name == "Lambda":
            seg = ast.get_source_segment(self.text, node) or "lambda"
            return Opaque(seg[:100])
        return self.value(node, depth + 1)


CHAINS = ("Compose", "ReplayCompose", "Sequential")
"""Containers running all they hold, in order (ReplayCompose: a Compose that records its draws)."""

_ARITH = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
          ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b}
_ARITH_TYPES = tuple(_ARITH)
_BUILTINS = frozenset(dir(builtins))


def _forbidden(name: str) -> bool:
    """Builtins (eval, open, __import__...) and dunder names never name a transform."""
    return name in _BUILTINS or name.startswith("__") or name in ("os", "sys", "subprocess")


def _constant(node: ast.Constant) -> Any:
    v = node.value
    if v is None or isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        why = number_problem(v)
        if why:
            raise _refuse(node, why)
        return v
    if isinstance(v, str):
        if len(v) > MAX_STRING:
            raise _refuse(node, f"a string of {len(v)} characters; at most {MAX_STRING}")
        return v
    raise _refuse(node, f"a {type(v).__name__} literal is not read")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _expand(found: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """Dicts of pipelines (``data_transforms = {"train": Compose(...), ...}``) by key."""
    out = []
    for name, value in found:
        if isinstance(value, dict):
            out += [(f"{name}[{k!r}]", v) for k, v in value.items()]
        else:
            out.append((name, value))
    return out


def _is_pipeline(v: Any) -> bool:
    return isinstance(v, list) or (isinstance(v, Call) and v.library != "custom")


def _describe(node: ast.AST) -> str:
    names = {"FunctionDef": "function definition", "ClassDef": "class definition",
             "For": "for loop", "While": "while loop", "If": "if statement",
             "With": "with statement", "Try": "try statement", "Delete": "del statement",
             "AugAssign": "augmented assignment", "Global": "global statement",
             "JoinedStr": "f-string", "Subscript": "subscript", "ListComp":
             "list comprehension", "GeneratorExp": "generator", "Compare": "comparison",
             "BoolOp": "boolean expression", "IfExp": "conditional expression",
             "Await": "await", "NamedExpr": "assignment expression", "Set": "set literal"}
    kind = type(node).__name__
    return names.get(kind, f"`{kind}` construct")


def _refuse(node: ast.AST, message: str) -> SourceRefused:
    return SourceRefused(message, getattr(node, "lineno", None), getattr(node, "col_offset", None))
