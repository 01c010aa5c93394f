"""Bring an existing torchvision or Albumentations pipeline into dali-gallery.

``import_pipeline(text)`` reads a pasted ``Compose([...])`` (from its syntax tree; nothing is
run) or an Albumentations ``A.to_dict`` JSON / YAML dump and returns the preset with a
per-transform account (:class:`ImportResult`). :func:`parity_report` runs the original
library beside DALI on images; :func:`to_library_code` writes a preset back as torchvision v2
or Albumentations code. The libraries themselves are needed only for the parity report.
"""

from __future__ import annotations

import os

from ..catalog import CATALOG, Catalog
from .convert import Converter, Imported, ImportResult
from .serialized import SerializedRefused, looks_serialized, parse_serialized
from .source import SourceRefused, parse_source

os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")
"""Albumentations asks the network for a newer release when imported: never from a kernel."""

ImportRefused = (SourceRefused, SerializedRefused)
"""What :func:`import_pipeline` raises for input it will not read (nothing of it ran)."""


def import_pipeline(text: str, *, kind: str = "auto", catalog: Catalog = CATALOG) -> ImportResult:
    """The preset for a pasted pipeline. ``kind``: "auto", "python" or "serialized"."""
    if not isinstance(text, str):
        raise SourceRefused(f"expected text, got {type(text).__name__}")
    if kind not in ("auto", "python", "serialized"):
        raise ValueError(f"kind {kind!r} is not allowed; expected auto, python or serialized")
    serialized = kind == "serialized" or (kind == "auto" and looks_serialized(text))
    if serialized:
        parsed, origin = parse_serialized(text), "Albumentations serialized pipeline"
    else:
        parsed, origin = parse_source(text), "Python source"
    return Converter(parsed, origin, catalog).run()


def __getattr__(name: str):  # the parity report and reverse export import DALI's engine
    if name == "parity_report":
        from .parity import parity_report

        return parity_report
    if name == "to_library_code":
        from .reverse import to_library_code

        return to_library_code
    raise AttributeError(name)


__all__ = ["ImportRefused", "ImportResult", "Imported", "SerializedRefused", "SourceRefused",
           "import_pipeline", "parity_report", "to_library_code"]
