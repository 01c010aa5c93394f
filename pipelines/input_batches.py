"""The images and labels a render feeds, made into DALI batches once per image set.

Feeding a Python list of arrays costs DALI a conversion per sample on every run (on the H100,
~0.2 ms per fed input of 8 samples, and a labelled render feeds four); a slider drag renders
the same images and labels again and again. The engine asks this memo for its batches, keyed
by which images a render shows and its batch size, and clears it whenever its images or
labels change.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from .label_render import SampleLabels, label_feeds

MAX_KEPT = 8
"""Batches kept (a render's picks and batch size: the builder, the inspector's draws, a
gallery row use a few)."""


class InputBatches:
    """DALI ``TensorListCPU`` batches of the engine's current images and labels."""

    def __init__(self) -> None:
        self._memo: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()

    def clear(self) -> None:
        """The images or labels changed: every batch is stale."""
        self._memo.clear()

    def feeds(self, arrays: Sequence[np.ndarray], labels: Sequence[SampleLabels] | None,
              picks: tuple[int, ...] | None, batch: int,
              names: tuple[str, ...] = ()) -> dict[str, Any]:
        """The ``images`` batch (sample j is ``arrays[j % len(arrays)]``), and the label
        batches of ``names`` (those the chain's graph reads) when ``labels`` are given;
        ``picks``: which of the engine's images ``arrays`` are (None: all), for the key."""
        key = (picks, batch, labels is not None, names)
        if key in self._memo:
            self._memo.move_to_end(key)
            return self._memo[key]
        from nvidia.dali.tensors import TensorListCPU

        n = len(arrays)
        out = {"images": TensorListCPU([arrays[j % n] for j in range(batch)], "HWC")}
        if labels is not None:
            for name, samples in label_feeds(labels, batch, names).items():
                out[name] = TensorListCPU(samples, "HWC" if name == "masks" else "")
        self._memo[key] = out
        while len(self._memo) > MAX_KEPT:
            self._memo.popitem(last=False)
        return out
