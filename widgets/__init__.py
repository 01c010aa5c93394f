"""ipywidgets panels of dali-gallery, built on :mod:`pipelines`."""
