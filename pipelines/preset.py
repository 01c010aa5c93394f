"""The preset: the user's pipeline as versioned JSON, the one input of the preview and the export.

Entry points, one per kind of input, so that bytes from a browser can never become a path:

- :func:`parse_document`: a document's text or bytes (an upload): parsed, never opened as a path;
- :func:`load_file`: a file by path, for the CLI and notebooks only (size-capped, regular files);
- :func:`validate_preset`: a dict or a :class:`Preset` built in code;
- :func:`load`: the notebook convenience that dispatches on the type of what it is given.

All of them run the same validation (:mod:`.preset_validate`), which reports every problem at
once in a :class:`PresetError`. The types live in :mod:`.preset_types`, the document budgets in
:mod:`.preset_document`; this module re-exports their public names.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .catalog import CATALOG, Catalog
from .preset_document import (
    MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
    document_text,
    parse_json,
    path_origin,
    quote,
    read_document,
)
from .preset_types import (
    DEFAULT_SEED,
    FORMAT,
    GROUP_KEY,
    IMAGENET_OUTPUT,
    MAX_CHILDREN,
    MIN_CHILDREN,
    VERSION,
    ChainStep,
    Choice,
    Group,
    Output,
    Preset,
    PresetError,
    Step,
    Uniform,
    Value,
    cut,
    is_random,
    new_step,
    value_to_json,
)
from .preset_validate import (
    MAX_OPERATORS,
    MAX_STEPS,
    MIGRATIONS,
    Migration,
    validate_document,
    validate_preset,
)
from .preset_values import MAX_CHOICES


def parse_document(data: str | bytes | bytearray | memoryview, catalog: Catalog = CATALOG,
                   origin: str = "preset") -> Preset:
    """A preset from an untrusted document (an upload, pasted text). It is never a path:
    text that is not a JSON object is refused, whatever it names."""
    return validate_document(parse_json(data, origin), catalog)


def load_file(path: str | os.PathLike[str], catalog: Catalog = CATALOG,
              origin: str | None = None) -> Preset:
    """A preset file named by a trusted caller (CLI, notebook); never for browser input.
    ``origin`` names it in messages (default: its path)."""
    origin = origin or path_origin(path)
    return validate_document(parse_json(read_document(path, origin), origin), catalog)


def loads(text: str | bytes, catalog: Catalog = CATALOG, origin: str = "preset") -> Preset:
    """Same as :func:`parse_document` (the name ``json.loads`` users expect)."""
    return parse_document(text, catalog, origin)


def load(source: Any, catalog: Catalog = CATALOG) -> Preset:
    """A Preset, dict, JSON text or path (``Path``, or a string not starting with ``{``).

    Trusted callers only (notebooks, tests): a string may name a file. Input from a browser
    goes through :func:`parse_document`, which never opens anything."""
    if isinstance(source, Preset):
        return validate_preset(source, catalog)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return parse_document(source, catalog)
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return parse_document(source, catalog)
    if isinstance(source, (str, os.PathLike)):
        return load_file(source, catalog)
    if not isinstance(source, Mapping):
        raise PresetError([f"preset: expected a JSON object, got {type(source).__name__}"])
    return validate_preset(source, catalog)


__all__ = [
    "DEFAULT_SEED", "FORMAT", "GROUP_KEY", "IMAGENET_OUTPUT", "MAX_CHILDREN", "MAX_CHOICES",
    "MAX_DEPTH", "MAX_DOCUMENT_BYTES", "MAX_OPERATORS", "MAX_STEPS", "MIGRATIONS",
    "MIN_CHILDREN", "VERSION", "ChainStep", "Choice", "Group", "Migration", "Output",
    "Preset", "PresetError", "Step", "Uniform", "Value", "cut", "document_text", "is_random",
    "load", "load_file", "loads", "new_step", "parse_document", "quote", "validate_document",
    "validate_preset", "value_to_json",
]
