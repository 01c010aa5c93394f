"""What a preview render returns: the tiles and, per sample, what the pipeline drew and fired.

A render of N images x K draws is one batch of N*K samples; sample ``d*N + i`` is draw ``d`` of
image ``i``. The records are read from the pipeline's own extra outputs, never recomputed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .codegen import Chain
from .device import Device


@dataclass
class SampleRecord:
    """What happened to one output sample, read from the pipeline's own outputs."""

    image: int
    draw: int
    fired: dict[int, bool] = field(default_factory=dict)
    values: dict[int, dict[str, float | int]] = field(default_factory=dict)
    children: dict[int, dict[int, bool]] = field(default_factory=dict)
    """Group step -> child -> whether that child ran on this sample (picked, and its own coin
    said so). A child missing here always runs when its group fires."""
    child_values: dict[int, dict[int, dict[str, float | int]]] = field(default_factory=dict)
    """Group step -> child -> what the child drew (drawn for every sample, applied where it
    ran)."""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "image": self.image,
            "draw": self.draw,
            "fired": {str(k): v for k, v in self.fired.items()},
            "values": {str(k): v for k, v in self.values.items()},
        }
        if self.children or self.child_values:
            d["children"] = {str(k): {str(j): v for j, v in c.items()}
                             for k, c in self.children.items()}
            d["child_values"] = {str(k): {str(j): v for j, v in c.items()}
                                 for k, c in self.child_values.items()}
        return d

    def child_ran(self, step: int, child: int) -> bool:
        """Whether child ``child`` of the group at ``step`` ran on this sample."""
        return self.fired.get(step, True) and self.children.get(step, {}).get(child, True)


@dataclass
class Render:
    """The outputs of one render: ``images[d * n_images + i]`` is draw d of image i."""

    images: list[np.ndarray]
    records: list[SampleRecord]
    n_images: int
    draws: int
    device: Device
    built: bool
    ms: float
    encoded: list[bytes] | None = None
    encode_ms: float = 0.0
    labels: list[Any] | None = None
    """Per sample (same order as ``images``), what the chain did to its labels: a
    :class:`~.label_render.LabelOutput` each; None when the images have no labels."""

    def tile(self, image: int, draw: int) -> np.ndarray:
        return self.images[draw * self.n_images + image]

    def record(self, image: int, draw: int) -> SampleRecord:
        return self.records[draw * self.n_images + image]

    def first_draw(self) -> list[np.ndarray]:
        return self.images[: self.n_images]


def read_outputs(outputs: Any, chain: Chain, n: int, draws: int,
                 device: Device) -> tuple[list[np.ndarray], list[SampleRecord]]:
    """Host copies of the images and the per-sample records of one run."""
    images = outputs[0]
    arrays = owned_views(images.as_cpu()) if device == "gpu" else host_copies(images)
    recs = [SampleRecord(j % n, j // n) for j in range(n * draws)]
    for r, out in zip(chain.records, outputs[1:1 + len(chain.records)], strict=True):
        vals = np.array(out.as_array()).reshape(n * draws, -1)[:, 0].tolist()
        for j, v in enumerate(vals):
            rec = recs[j]
            if r.child is not None and r.param == "fired":
                rec.children.setdefault(r.step, {})[r.child] = bool(v)
            elif r.child is not None:
                rec.child_values.setdefault(r.step, {}).setdefault(r.child, {})[r.param] = v
            elif r.param == "fired":
                rec.fired[r.step] = bool(v)
            else:
                rec.values.setdefault(r.step, {})[r.param] = v
    return arrays, recs


def owned_views(tl: Any) -> list[np.ndarray]:
    """Every sample of a host copy this render owns (``as_cpu()`` of GPU outputs: DALI
    never reuses it), without copying again: the arrays are views that keep the copy alive
    (the buffer protocol). A second host copy of 8 x 256x256 images cost ~0.5 ms of a
    ~3 ms GPU render."""
    if tl.is_dense_tensor():
        return list(np.asarray(tl.as_tensor()))
    return [np.asarray(tl[j]) for j in range(len(tl))]


def host_copies(tl: Any) -> list[np.ndarray]:
    """Own copies of every sample (DALI reuses its output buffers on the next run); one copy
    for a batch of equal shapes, else one per sample."""
    if tl.is_dense_tensor():
        return list(np.array(tl.as_array()))
    return [np.array(tl[j]) for j in range(len(tl))]


def stack_renders(parts: list[Render]) -> Render:
    """Renders of one draw each, as the draws of one render (their labels too, when moved)."""
    first = parts[0]
    images = [img for r in parts for img in r.images]
    records = []
    for d, r in enumerate(parts):
        for rec in r.records:
            records.append(SampleRecord(rec.image, d, rec.fired, rec.values, rec.children,
                                        rec.child_values))
    labels = None  # the moved labels follow their samples (all parts have them, or none)
    if all(r.labels is not None for r in parts):
        labels = [out for r in parts for out in r.labels or ()]
    return Render(images, records, first.n_images, len(parts), first.device,
                  any(r.built for r in parts), sum(r.ms for r in parts), labels=labels)
