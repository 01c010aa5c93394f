"""Galleries of the "custom" category on their own catalog, for the gallery's tests: one with
an operator that fails past its default (``custom.explodes``), rendered and idle."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dali_gallery.gallery.view import GalleryView
from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.params import Param


def _explodes(image, strength):
    if float(strength) > 0.5:  # past the default: registration's trial run passes
        raise ValueError(f"strength {float(strength)} exploded")
    return image


def explodes_catalog() -> Catalog:
    """The catalog with ``custom.explodes`` added (strength 0..1; it raises above 0.5)."""
    catalog = Catalog(list(CATALOG.values()))
    custom_op("custom.explodes", "Fails on purpose.", magnitude="strength", catalog=catalog,
              params=(Param("strength", "float", 0.5, "How hard", bounds=(0, 1),
                            slider=(0, 1), step=0.1, neutral=0.0, runtime=True),))(_explodes)
    return catalog


def custom_gallery(catalog: Catalog, images: Sequence[np.ndarray]) -> GalleryView:
    """A CPU gallery of ``catalog``'s custom category on ``images``, rendered (closed if it
    did not finish within 60 s)."""
    view = GalleryView(device="cpu", size=128, max_images=1, catalog=catalog,
                       engine=PreviewEngine("cpu", catalog=catalog))
    view.category.value = "custom"
    view.set_arrays(list(images))
    if not view.wait_idle(60):
        view.close()
        raise AssertionError("the gallery did not finish within 60 s")
    return view
