"""The dali-gallery app: gallery view, sample images, CLI and Voila launcher."""

from __future__ import annotations

from pathlib import Path

__all__ = ["samples_dir"]


def samples_dir() -> Path:
    """The bundled sample photos (package data), found through the package wherever it is
    installed, so that a notebook copied elsewhere still finds them (a path relative to the
    notebook does not). FileNotFoundError when the package was installed without them."""
    folder = Path(__file__).resolve().parent / "samples"
    if not folder.is_dir():
        raise FileNotFoundError("dali-gallery's sample images are missing from the package "
                                "(reinstall it: pip install dali-gallery)")
    return folder
