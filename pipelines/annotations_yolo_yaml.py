"""The few YAML forms a YOLO ``data.yaml`` uses, read without a YAML dependency.

Ultralytics reads ``data.yaml`` with PyYAML; this package needs two of its top-level keys
(``names``, ``kpt_shape``), and PyYAML is not one of its runtime dependencies. So this reads
the forms Ultralytics' own files use: a flow list ``[a, 'b']`` or map ``{0: a}`` (over several
lines too), a block list (``- a`` lines, at any indent, the key's own included), an index map
(``0: a`` lines), plain, 'single' and "double" quoted values, and comments. Anything else
(anchors, aliases, tags, block scalars, nested collections) is refused with its line rather
than guessed. Plain values stay text as written, except the null forms (empty, ``~``, ``null``).
The tests compare every accepted form with PyYAML itself.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .annotations_coco import AnnotationError
from .preset_document import quote

MAX_NAMES = 10_000
"""Most class names."""
_NULLS = {"", "~", "null", "Null", "NULL"}
_NOT_PLAIN = "&*!|>%@`,[]{}#"
"""Characters a plain YAML value cannot start with (anchors, tags, block scalars, flow...)."""
_ESCAPES = {"0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v",
            "f": "\f", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\",
            "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX = {"x": 2, "u": 4, "U": 8}
_INDEX = re.compile(r"0|[1-9][0-9]{0,5}")
_BLOCK_KEY = re.compile(r"""('[^']*'|"[^"\\]*"|[^\s'"#&*!|>%@`,\[\]{}?:-][^#]*?)"""
                        r"[ \t]*:(?=[ \t]|$)")


@dataclass
class Collection:
    """A list or map value: ``items`` are (line, key or None for a list, value or None)."""

    kind: str  # "list" | "map"
    items: list[tuple[int, str | None, str | None]]


Value = str | Collection | None


def _fail(line: int, why: str) -> AnnotationError:
    return AnnotationError(f"line {line}: {why}")


def _null(text: str) -> str | None:
    return None if text in _NULLS else text


def _quoted(text: str, i: int, line: int) -> tuple[str, int]:
    """The value of the quoted scalar at ``text[i]`` and the index after its closing quote.
    A line break folds to a space, each empty line after it to a line break (YAML folding)."""
    mark, out, start, i = text[i], [], i, i + 1
    while i < len(text):
        ch = text[i]
        if mark == "'" and text.startswith("''", i):
            out.append("'")
            i += 2
        elif ch == mark:
            return "".join(out), i + 1
        elif ch == "\n" or (mark == '"' and text.startswith("\\\n", i)):
            joined = ch == "\\"  # an escaped line break: the lines join without a space
            while not joined and out and out[-1] in " \t":
                out.pop()
            i, empty = _fold_break(text, i + (2 if joined else 1))
            out.append("\n" * empty if empty or joined else " ")
        elif mark == '"' and ch == "\\" and i + 1 < len(text):
            esc, size = text[i + 1], _HEX.get(text[i + 1], 0)
            if size and re.fullmatch(r"[0-9a-fA-F]+", text[i + 2:i + 2 + size]):
                out.append(chr(min(int(text[i + 2:i + 2 + size], 16), 0x10FFFF)))
                i += 2 + size
            elif esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                i += 2
            else:
                raise _fail(line, f"\\{esc} is not a YAML escape in a double-quoted value")
        else:
            out.append(ch)
            i += 1
    raise _fail(line, f"the value starting {quote(text[start:start + 40])} has no closing "
                      f"{mark}")


def _fold_break(text: str, i: int) -> tuple[int, int]:
    """After a line break at ``i``: the index past the next line's indent, and how many
    empty lines were skipped."""
    empty = 0
    while True:
        while i < len(text) and text[i] in " \t":
            i += 1
        if text[i:i + 1] != "\n":
            return i, empty
        empty, i = empty + 1, i + 1


def _fold(pieces: list[str]) -> str:
    """Plain text over several lines (each stripped; "" for an empty line): each next line
    joins with a space, or with one line break per empty line before it."""
    out: list[str] = []
    empty = 0
    for piece in pieces:
        if not piece:
            empty += 1
            continue
        if out:
            out.append("\n" * empty if empty else " ")
        out.append(piece)
        empty = 0
    return "".join(out)


def _plain_start(text: str, line: int) -> None:
    """Refuse a value YAML would not read as plain text (anchor, alias, tag, block scalar,
    a nested collection, reserved characters)."""
    if text[:1] and (text[0] in _NOT_PLAIN
                     or (text[0] in "-?:" and text[1:2] in ("", " ", "\t", "\n"))):
        raise _fail(line, f"{quote(text[:40])}: anchors, aliases, tags, block scalars and "
                          "nested lists or maps are not read; write each name as plain or "
                          "quoted text")


def _plain_rest(rest: str, line: int) -> str:
    """A block-context plain value: the rest of its line, up to a comment."""
    value = re.split(r"[ \t]#", rest, maxsplit=1)[0].strip(" \t")
    if re.search(r":([ \t]|$)", value):
        raise _fail(line, f"{quote(value)}: YAML reads ': ' as a key; quote the value")
    return value


@dataclass
class _Lines:
    """The document (line breaks as ``\\n``), its lines and where each starts."""

    text: str
    lines: list[str]
    starts: list[int]

    @classmethod
    def of(cls, text: str) -> _Lines:
        text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        starts = [0]
        for raw in lines[:-1]:
            starts.append(starts[-1] + len(raw) + 1)
        return cls(text, lines, starts)

    def line_of(self, i: int) -> int:
        """The 0-based line of index ``i``."""
        return bisect.bisect_right(self.starts, i) - 1

    def after(self, i: int, what: str) -> int:
        """The next line's index, when the rest of ``i``'s line is blank or a comment."""
        n = self.line_of(i)
        rest = self.text[i:self.starts[n] + len(self.lines[n])]
        if rest.strip(" \t") and not re.match(r"[ \t]+#", rest):
            raise _fail(n + 1, f"{quote(rest.strip()[:40])} follows {what}; only a comment "
                               "may")
        return n + 1


def _block_value(doc: _Lines, n: int, col: int) -> tuple[str, bool, int]:
    """(text, plain, next line) of the block-context value on line ``n`` from ``col`` on
    (after ``-`` or ``key:``); a quoted value may go on over several lines. Plain text is
    as written ("" when none): a null only once its last line is known."""
    raw = doc.lines[n]
    rest = raw[col:].lstrip(" \t")
    if not rest or rest.startswith("#"):
        return "", True, n + 1
    if rest[0] in "'\"":
        value, end = _quoted(doc.text, doc.starts[n] + len(raw) - len(rest), n + 1)
        return value, False, doc.after(end, f"the quoted value {quote(value)}")
    _plain_start(rest, n + 1)
    return _plain_rest(rest, n + 1), True, n + 1


def _flow_scalar(text: str, i: int, line: int) -> tuple[str | None, int]:
    """A value inside ``[...]``/``{...}``: quoted, or plain up to ``,``, ``]``, ``}``, a
    key's ``:`` or a comment, its lines folded."""
    if i >= len(text):
        return None, i
    if text[i] in "'\"":
        return _quoted(text, i, line)
    if text[i] == "?":
        raise _fail(line, "'?' (a complex key) is not read; quote a name starting with '?'")
    _plain_start(text[i:i + 2] if text[i] not in ",]}" else "", line)
    start = i
    while i < len(text) and text[i] not in ",[]{}":
        if text[i] == ":" and text[i + 1:i + 2] in ("", " ", "\t", "\n", ",", "]", "}"):
            break
        if text[i] == "#" and text[i - 1] in " \t\n":
            break
        i += 1
    return _null(_fold([p.strip(" \t") for p in text[start:i].split("\n")])), i


def _skip(text: str, i: int) -> int:
    """The index of the next token: blanks, line breaks and comments skipped."""
    while i < len(text):
        if text[i] in " \t\n":
            i += 1
        elif text[i] == "#":
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
        else:
            break
    return i


def _flow(doc: _Lines, i: int) -> tuple[Collection, int]:
    """The flow list or map opening at ``i`` and the index after its closing bracket."""
    text = doc.text
    close = "]" if text[i] == "[" else "}"
    found = Collection("list" if close == "]" else "map", [])
    i = _skip(text, i + 1)
    while i < len(text) and text[i] != close:
        at = doc.line_of(i) + 1
        value, i = _flow_scalar(text, i, at)
        key = None
        i = _skip(text, i)
        if text[i:i + 1] == ":":
            if found.kind == "list":
                raise _fail(at, f"{quote(value)}: a 'key: value' pair inside [...] is not "
                                "read (is the list closed with ']'?)")
            key = value
            value, i = _flow_scalar(text, _skip(text, i + 1), at)
            i = _skip(text, i)
        elif found.kind == "map":
            raise _fail(at, f"{quote(value)} has no ':' and value inside {{...}}")
        found.items.append((at, key, value))
        if text[i:i + 1] == ",":
            i = _skip(text, i + 1)
        elif text[i:i + 1] != close:
            got = quote(text[i:i + 20]) if i < len(text) else "the end of the file"
            raise _fail(doc.line_of(i) + 1, f"expected ',' or {close!r}, found {got}")
    if i >= len(text):
        raise _fail(doc.line_of(i) + 1, f"the list opened with {'[' if close == ']' else '{'}"
                                        f" is never closed with {close!r}")
    return found, i + 1


def _indent(raw: str, line: int) -> int:
    spaces = len(raw) - len(raw.lstrip(" "))
    if raw[spaces:spaces + 1] == "\t":
        raise _fail(line, "a tab in the indentation (YAML indents with spaces)")
    return spaces


_ITEM = re.compile(r"-([ \t]|$)")


def _block(doc: _Lines, n: int) -> Collection | None:
    """The ``- a`` or ``0: a`` lines from line ``n`` on; None when a top-level key (or the
    end) comes first (the value is null)."""
    lines = doc.lines
    while n < len(lines) and (not lines[n].strip(" \t")
                              or lines[n].strip(" \t").startswith("#")):
        n += 1
    if n == len(lines):
        return None
    depth = _indent(lines[n], n + 1)
    if _ITEM.match(lines[n][depth:]):
        found = Collection("list", [])
    elif depth > 0:
        found = Collection("map", [])
    else:
        return None
    items: list[tuple[int, str | None, list[str], bool]] = []  # line, key, lines, plain
    empty = 0
    while n < len(lines):
        raw, body = lines[n], lines[n].strip(" \t")
        if not body or body.startswith("#"):
            empty, n = empty + (not body), n + 1
            continue
        at = _indent(raw, n + 1)
        body = raw[at:]
        if at < depth or (at == 0 and not _ITEM.match(body)):
            if at > 0:
                raise _fail(n + 1, "this line is indented less than the names above it")
            break
        if at > depth:  # the value of the item above, or its plain text going on
            if not items or not items[-1][3]:
                raise _fail(n + 1, f"{quote(body.strip()[:40])} is indented more than the "
                                   "names above it (a nested list or map is not read)")
            ln, key, pieces, _ = items[-1]
            if pieces[0]:
                pieces.extend([""] * empty + [_plain_rest(body, n + 1)])
                n += 1
            else:
                text, plain, n = _block_value(doc, n, at)
                items[-1] = (ln, key, [text], plain)
            empty = 0
            continue
        if found.kind == "list":
            if not _ITEM.match(body):
                raise _fail(n + 1, f"{quote(body.strip()[:40])}: expected a '- name' line")
            key, col = None, at + 1
        else:
            m = _BLOCK_KEY.match(body)
            if m is None:
                raise _fail(n + 1, f"{quote(body.strip()[:40])}: expected an 'index: name' "
                                   "line")
            key = m.group(1)[1:-1] if m.group(1)[0] in "'\"" else m.group(1)
            col = at + m.end()
        text, plain, next_line = _block_value(doc, n, col)
        items.append((n + 1, key, [text], plain))
        empty, n = 0, next_line
    found.items = [(ln, key, _null(_fold(pieces)) if plain else pieces[0])
                   for ln, key, pieces, plain in items]
    return found


def top_level(text: str, key: str) -> tuple[int, Value] | None:
    """(line, value) of a top-level ``key``; None when absent (the last one wins, as in
    YAML readers). AnnotationError naming the line when its value is not read."""
    doc = _Lines.of(text)
    pattern = re.compile(rf"""({re.escape(key)}|'{re.escape(key)}'|"{re.escape(key)}")"""
                         r"[ \t]*:(?=[ \t]|$)")
    hits = [(n, m) for n, raw in enumerate(doc.lines) if (m := pattern.match(raw))]
    if not hits:
        return None
    n, m = hits[-1]
    rest = doc.lines[n][m.end():].lstrip(" \t")
    if rest[:1] in ("[", "{"):
        found, end = _flow(doc, doc.starts[n] + len(doc.lines[n]) - len(rest))
        doc.after(end, f"the closing bracket of {key}")
        return n + 1, found
    if rest and not rest.startswith("#"):
        text, plain, _ = _block_value(doc, n, m.end())
        return n + 1, _null(text) if plain else text
    return n + 1, _block(doc, n + 1)


def yaml_names(text: str) -> list[str] | None:
    """``names`` of a YOLO ``data.yaml`` as a list by class index; None when absent.
    AnnotationError naming the line when it is not a list or index map of non-empty names,
    or when a map's indices are not 0 to n-1 (Ultralytics' check_class_names refuses a gap:
    filling it in would give labels of a class the dataset does not name a name)."""
    found = top_level(text, "names")
    if found is None:
        return None
    line, value = found
    allowed = ("names must be a list ([a, b] or '- a' lines) or an index map ('0: a' lines "
               "or {0: a})")
    if not isinstance(value, Collection):
        raise _fail(line, f"names is {'empty' if value is None else quote(value)}; {allowed}")
    by_index: dict[int, str] = {}
    for k, (at, key, name) in enumerate(value.items):
        if key is not None and (not _INDEX.fullmatch(key) or int(key) >= MAX_NAMES):
            raise _fail(at, f"{quote(key)} is not a class index (0 to {MAX_NAMES - 1}); "
                            f"{allowed}")
        if name is None:
            raise _fail(at, f"class {key if key is not None else k} has an empty name")
        by_index[int(key) if key is not None else k] = name
    if not by_index:
        raise _fail(line, f"names lists no class; {allowed}")
    missing = [k for k in range(max(by_index) + 1) if k not in by_index]
    if missing:
        shown = ", ".join(map(str, missing[:10])) + (f" and {len(missing) - 10} more"
                                                     if len(missing) > 10 else "")
        n = len(by_index)
        raise _fail(line, f"names has no class index {shown} (its {n} indices go up to "
                          f"{max(by_index)}); an index map numbers the classes 0 to {n - 1} "
                          "with no gaps, as Ultralytics requires (or write names as a list)")
    return [by_index[k] for k in range(len(by_index))]


def yaml_kpt_shape(text: str) -> tuple[int, int] | None:
    """``kpt_shape: [K, 2 or 3]`` of a pose dataset's ``data.yaml`` (keypoints per object,
    values per keypoint); None when absent. AnnotationError naming the line otherwise."""
    found = top_level(text, "kpt_shape")
    if found is None:
        return None
    line, value = found
    numbers = [v or "" for _, _, v in value.items] if isinstance(value, Collection) else []
    if isinstance(value, Collection) and value.kind == "list" and len(numbers) == 2 \
            and _INDEX.fullmatch(numbers[0]) and 1 <= int(numbers[0]) <= 1000 \
            and numbers[1] in ("2", "3"):
        return int(numbers[0]), int(numbers[1])
    raise _fail(line, "kpt_shape must be [keypoints, 2 or 3] (keypoints 1 to 1000), not "
                      f"{quote(numbers if isinstance(value, Collection) else value)}")
