"""ipywidgets panels of dali-gallery, built on :mod:`pipelines`.

``Builder`` is the pipeline builder: operator picker, step cards, live DALI previews and the
export panel, all generated from the operator catalog.
"""

from .builder import Builder

__all__ = ["Builder"]
