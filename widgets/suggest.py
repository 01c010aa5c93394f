"""What a step added from the picker starts with: an augmentation, not a no-op.

A newly picked operator draws its magnitude parameter per sample over the catalog's
``random_default`` range (e.g. rotate by -15 to 15 deg), when DALI can take that parameter
per sample; otherwise it starts at the catalog defaults. ``Builder.add_step`` (the API) always
starts from the plain defaults.
"""

from __future__ import annotations

from typing import Any

from dali_gallery.pipelines.catalog import OpSpec
from dali_gallery.pipelines.preset import Uniform

from .param_values import RANGE


def suggested_params(spec: OpSpec) -> dict[str, Any]:
    """Parameter overrides for a step added interactively."""
    if spec.magnitude is None:
        return {}
    p = spec.param(spec.magnitude)
    if p.random_default is None or RANGE not in p.modes:
        return {}
    lo, hi = p.random_default
    if p.check(p.coerce(lo)) or p.check(p.coerce(hi)) or not lo < hi:
        return {}
    return {p.name: Uniform(p.coerce(lo), p.coerce(hi))}
