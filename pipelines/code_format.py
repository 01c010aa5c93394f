"""Layout of generated Python: functions, statements split the way ruff/black split them, and
the literals parameter values are written as.

The generated modules (preview and export) are read by users and checked by ruff, so lines
stay within :data:`LINE_LIMIT`; a function also says where each of its statements landed, so
the preview can map a line DALI reports back to the step that wrote it.
"""

from __future__ import annotations

import ast
from typing import Any

from .params import Param

LINE_LIMIT = 88
"""Generated lines stay within ruff's/black's default width; longer ones are split."""


def function_lines(name: str, params: str, doc: str,
                   body: list[str]) -> tuple[list[str], list[int]]:
    """The lines of ``def name(params)`` and, for each statement of ``body``, the index of its
    first line among them (plus the number of lines, so statement k spans
    ``starts[k]:starts[k + 1]``)."""
    lines = [f"def {name}({params}):", f'    """{doc}"""']
    starts = []
    for line in body:
        starts.append(len(lines))
        lines.extend(format_statement(line, "    "))
    starts.append(len(lines))
    return lines, starts


def function(name: str, params: str, doc: str, body: list[str]) -> str:
    return "\n".join(function_lines(name, params, doc, body)[0])


def format_statement(line: str, indent: str) -> list[str]:
    """Split one statement that is too long the way ruff/black do (one item per line, trailing
    comma), recursing into nested calls and lists. Comments and short lines pass through."""
    stripped = line.lstrip(" ")
    inner = indent + " " * (len(line) - len(stripped))
    if len(inner) + len(stripped) <= LINE_LIMIT or stripped.startswith("#"):
        return [inner + stripped]
    tree = ast.parse(stripped)
    stmt = tree.body[0]
    if isinstance(stmt, ast.Assign):
        target = ast.get_source_segment(stripped, stmt.targets[0])
        return _fmt(stripped, stmt.value, inner, f"{target} = ", "")
    if isinstance(stmt, ast.Return) and stmt.value is not None:
        return _fmt(stripped, stmt.value, inner, "return ", "")
    if isinstance(stmt, ast.Expr):
        return _fmt(stripped, stmt.value, inner, "", "")
    return [inner + stripped]


def _fmt(src: str, node: ast.expr, indent: str, prefix: str, suffix: str) -> list[str]:
    text = ast.get_source_segment(src, node) or ""
    one = indent + prefix + text + suffix
    if len(one) <= LINE_LIMIT:
        return [one]
    items: list[tuple[str, ast.expr]]
    if isinstance(node, ast.Call):
        head = (ast.get_source_segment(src, node.func) or "") + "("
        close = ")"
        pos = [("", a) for a in node.args]
        kws = [(f"{k.arg}=" if k.arg else "**", k.value) for k in node.keywords]
        items = sorted(pos + kws, key=lambda t: (t[1].lineno, t[1].col_offset))
    elif isinstance(node, ast.List):
        head, close, items = "[", "]", [("", e) for e in node.elts]
    elif isinstance(node, ast.Tuple) and text.startswith("("):
        head, close, items = "(", ")", [("", e) for e in node.elts]
    else:
        return [one]
    if not items:
        return [one]
    out = [indent + prefix + head]
    for kw, value in items:
        out.extend(_fmt(src, value, indent + "    ", kw, ","))
    out.append(indent + close + suffix)
    return out


def literal(p: Param, value: Any) -> str:
    """Python source of a literal parameter value (the value is validated already)."""
    if p.kind == "enum":
        return p.codes[value] if value in p.codes else _str(value)
    if p.kind == "bool":
        if p.dali_int:
            return "1" if value else "0"
        return "True" if value else "False"
    if p.kind == "int":
        return str(int(value))
    return repr(float(value))


def number_literal(p: Param, v: Any) -> str:
    """A number of parameter ``p`` (a bound of a range, a value of a choice) as source."""
    return str(int(v)) if p.kind in ("int", "bool") else repr(float(v))


def _str(s: str) -> str:
    """A double-quoted string literal (ruff's preferred quotes), safely escaped."""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"' if _plain(s) else repr(s)


def _plain(s: str) -> bool:
    return s.isascii() and s.isprintable()


def split_string(text: str, indent: str, width: int = LINE_LIMIT) -> list[str]:
    """A long string constant as implicitly concatenated chunks, each quoted the way ruff
    prefers (double quotes unless the chunk holds more double than single quotes)."""
    room = width - len(indent) - 8
    chunks: list[str] = []
    while text:
        cut = room
        piece = text[:cut]
        while _quote(piece)[1] > room and cut > 8:
            cut -= 4
            piece = text[:cut]
        chunks.append(_quote(piece)[0])
        text = text[len(piece):]
    return [indent + c for c in chunks] or [indent + '""']


def _quote(s: str) -> tuple[str, int]:
    body = s.replace("\\", "\\\\").replace("\n", "\\n")
    if s.count('"') > s.count("'"):
        q = "'" + body.replace("'", "\\'") + "'"
    else:
        q = '"' + body.replace('"', '\\"') + '"'
    return q, len(q)
