"""House rules a test can check, over the source of the three packages (tests excluded).

- Operators are known by name only in their declarations (``pipelines/ops/``) and the catalog.
- Imports flow one way: gallery -> widgets -> pipelines.
- No import cycles between modules (imports inside functions count: they run too).
- No module over 400 lines.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from dali_gallery.pipelines.ops import all_ops
from tests.support import REPO

PACKAGES = ("pipelines", "widgets", "gallery")
LAYER = {"pipelines": 0, "widgets": 1, "gallery": 2}
MAX_LINES = 400
DECLARATIONS = ("pipelines/ops/", "pipelines/catalog.py")

_IMPORT_RULES = ("the import rules: each torchvision / Albumentations transform and the catalog "
                 "steps it becomes (one declaration per library transform, pipelines/importers)")
NAMES_ALLOWED = {
    "gallery/bench_reference.py": "the bench's hand-written plain-DALI reference (it must not be "
                                  "built from the catalog it measures)",
    "gallery/detection_bench.py": "the detection bench's hand-written plain-DALI reference and "
                                  "its torchvision twin (not built from the catalog)",
    **{f"pipelines/importers/{m}.py": _IMPORT_RULES for m in (
        "torchvision_geometry", "torchvision_warps", "torchvision_pixels", "torchvision_rules",
        "albumentations_geometry", "albumentations_warps", "albumentations_pixels",
        "albumentations_filters", "albumentations_rules", "bins")},
    "pipelines/label_helpers.py": "graph helpers the label rules call: masks go through DALI's "
                                  "affine / perspective warps (mechanisms, not per-operator "
                                  "code)",
    "pipelines/label_crop_helpers.py": "graph helpers the crop rules call: a random window is "
                                       "drawn with DALI's crop generator or bbox crop and cut "
                                       "with slice (mechanisms, not per-operator code)",
}
"""Modules that may name operators anywhere, and why."""
WORDS_ALLOWED = {
    ("pipelines/preset_output.py", "crop"): "the training tail's crop field",
    ("pipelines/preset_types.py", "crop"): "the training tail's crop field",
    ("pipelines/params.py", "hue"): "the parameter the shared hue factory declares",
    ("gallery/decode_bench.py", "crop"): "the training tail's crop field",
    ("pipelines/importers/convert.py", "crop"): "the training tail's crop field",
    ("pipelines/image_decode.py", "resize"): "a decode mode (images shrunk to the preview size)",
}
"""(module, word): a generic operator name used as a string for something else, and what."""


def sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))


def rel(path: Path, root: Path = REPO) -> str:
    return path.relative_to(root).as_posix()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["dali_gallery", *parts])


# ---- operator names -----------------------------------------------------------------------------


def operator_names() -> tuple[list[str], list[str]]:
    """(distinctive, generic): names with a ``_`` or ``.`` cannot be anything but an operator;
    single words (``rotate``, ``hue``) are operators only where a string is exactly the name."""
    names = [op.name for op in all_ops()]
    distinctive = [n for n in names if "_" in n or "." in n]
    return distinctive, [n for n in names if n not in distinctive]


def named_operators(path: Path, root: Path = REPO) -> list[str]:
    """Every place ``path`` names an operator, as ``module:line: name``."""
    where = rel(path, root)
    text = path.read_text(encoding="utf-8")
    distinctive, generic = operator_names()
    found = []
    for name in distinctive:
        for m in re.finditer(rf"(?<![\w]){re.escape(name)}(?![\w])", text):
            line = text.count("\n", 0, m.start()) + 1
            found.append(f"{where}:{line}: {name}")
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type != tokenize.STRING:
            continue
        try:
            value = ast.literal_eval(tok.string)
        except (ValueError, SyntaxError):  # an f-string: its constant parts are not names
            continue
        if value in generic and (where, value) not in WORDS_ALLOWED:
            found.append(f"{where}:{tok.start[0]}: {value!r}")
    return found


def test_operators_are_named_only_in_their_declarations():
    checked = [p for p in sources() if not rel(p).startswith(DECLARATIONS)
               and rel(p) not in NAMES_ALLOWED]
    found = [hit for path in checked for hit in named_operators(path)]
    assert not found, "operator names outside pipelines/ops and the catalog:\n" + "\n".join(found)


def test_the_name_check_finds_what_it_looks_for(tmp_path):
    distinctive, generic = operator_names()
    bad = tmp_path / "pipelines" / "bad.py"
    bad.parent.mkdir()
    bad.write_text(f'"""Uses {distinctive[0]}."""\nSTEP = {{"op": "{generic[0]}"}}\n'
                   f'OK = f"{generic[0]}"\nWORD = "{generic[0]} things"\n')
    assert named_operators(bad, tmp_path) == [f"pipelines/bad.py:1: {distinctive[0]}",
                                    f"pipelines/bad.py:2: {generic[0]!r}"]


def test_allow_lists_name_files_that_exist():
    for path in NAMES_ALLOWED:
        assert (REPO / path).is_file(), path
    stale = [key for key in WORDS_ALLOWED if not (REPO / key[0]).is_file()
             or f'"{key[1]}"' not in (REPO / key[0]).read_text(encoding="utf-8")]
    assert not stale, f"allow-list entries with nothing left to allow: {stale}"


# ---- imports ------------------------------------------------------------------------------------


def module_imports(path: Path, known: set[str]) -> set[str]:
    """The project modules ``path`` imports, anywhere in it (relative imports resolved; ``from
    pkg import sub`` counts as importing the submodule)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {id(n) for block in ast.walk(tree) if _is_type_checking_block(block)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:  # annotations only: never imported at run time
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in known]
            out.update(subs)
            if len(subs) < len(node.names):
                out.add(base)
    return {m for m in out if m in known and m != name}


def _is_type_checking_block(node: ast.AST) -> bool:
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in sources()}
    known = set(paths)
    return {m: module_imports(p, known) for m, p in paths.items()}


def layer(module: str) -> int:
    return LAYER[module.split(".")[1]]


def test_imports_flow_downward():
    upward = [f"{m} imports {d}" for m, deps in import_graph().items() for d in sorted(deps)
              if layer(d) > layer(m)]
    assert not upward, "gallery -> widgets -> pipelines only:\n" + "\n".join(upward)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(g) for g in found)


def test_the_cycle_finder_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


# ---- size ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sources(), ids=rel)
def test_modules_stay_small(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{rel(path)} has {lines} lines; split it by what it holds"


def test_test_files_have_unique_names():
    """tests/ holds no packages, so pytest imports each test file by its base name: two files
    with one name make the whole run stop at collection."""
    names = [p.name for p in (REPO / "tests").rglob("test_*.py")]
    assert not {n for n in names if names.count(n) > 1}
