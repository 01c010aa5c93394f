"""Catalog entries, one module per category. Each module exposes ``OPS``."""

from __future__ import annotations

from ..catalog import OpSpec


def all_ops() -> list[OpSpec]:
    from . import auto_aug, color, distortion, filters, geometry, masks, noise

    ops: list[OpSpec] = []
    for module in (geometry, color, filters, noise, masks, distortion, auto_aug):
        ops.extend(module.OPS)
    return ops
