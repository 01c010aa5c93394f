"""dali-gallery: explore NVIDIA DALI augmentations live, build pipelines, export training code.

The installed code lives under this one import namespace (``dali_gallery.pipelines``,
``dali_gallery.widgets``, ``dali_gallery.gallery``) so that an ML repository's own
``pipelines/`` or ``widgets/`` folder, first on a notebook's ``sys.path``, cannot shadow it.
The repository keeps the three folders at its top level; ``pyproject.toml`` maps them here.

``Builder`` is imported on first use: ``import dali_gallery`` stays cheap (no DALI, no widgets).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_CHECKOUT = Path(__file__).resolve().parent.parent
if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "gallery" / "voila").is_dir():
    # A source checkout used without installing (PYTHONPATH=., or this folder shadowing an
    # install when Python runs from the repository root): the subpackages are the repository's
    # top-level folders. An installed copy has them inside this folder and skips this.
    __path__.append(str(_CHECKOUT))

__version__ = "0.1.0"
__all__ = ["Builder", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "Builder":
        from dali_gallery.widgets.builder import Builder

        return Builder
    raise AttributeError(f"module 'dali_gallery' has no attribute {name!r}")
