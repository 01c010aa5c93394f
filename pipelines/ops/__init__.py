"""Catalog entries, one module per category. Each module exposes ``OPS``."""

from __future__ import annotations

from ..opspec import OpSpec
from . import auto_aug, color, custom, distortion, filters, geometry, masks, noise


def all_ops() -> list[OpSpec]:
    """Every shipped entry, in the order the picker and the gallery list them."""
    ops: list[OpSpec] = []
    for module in (geometry, color, filters, noise, masks, distortion, auto_aug, custom):
        ops.extend(module.OPS)
    return ops
