"""What every ``dali-gallery bench`` section renders: the standard chain and square images.

Both come from the bundled samples folder: the chain is the preset ``bench_chain.json`` (so no
operator is named in code here), the images are cut from the sample photos, decoded by DALI.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import Preset, load_file

SAMPLES = Path(__file__).parent / "samples"
STANDARD_CHAIN = SAMPLES / "bench_chain.json"


def standard_preset(seed: int = 42) -> Preset:
    """The standard chain (``samples/bench_chain.json``) with ``seed``."""
    preset = load_file(STANDARD_CHAIN)
    preset.seed = seed
    return preset


def bench_images(size: int, n: int = 8) -> list[np.ndarray]:
    """n RGB images of size x size cut from the bundled samples (decoded by DALI)."""
    eng = PreviewEngine("cpu")
    eng.set_images(SAMPLES)
    out = []
    for i in range(n):
        src = eng.images[i % len(eng.images)]
        reps = (size // min(src.shape[:2])) + 1
        big = np.tile(src, (reps, reps, 1))
        out.append(np.ascontiguousarray(big[:size, :size]))
    eng.close()
    return out
