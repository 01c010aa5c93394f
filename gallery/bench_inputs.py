"""What every ``dali-gallery bench`` section renders, and how the sections time pipelines:
the standard chain and square images, images/s and host copies of outputs.

Both come from the bundled samples folder: the chain is the preset ``bench_chain.json`` (so no
operator is named in code here), the images are cut from the sample photos, decoded by DALI.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

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


def to_host(out: Any, device: str) -> list[np.ndarray]:
    """Host copies of every sample of one pipeline output."""
    tl = out.as_cpu() if device == "gpu" else out
    return [np.array(tl[i]) for i in range(len(tl))]


def images_per_s(pipe: Any, iters: int, batch: int, device: str) -> float:
    """Images per second over ``iters`` runs (GPU outputs copied to the host, as training
    would use them); the sections that time pipelines share it."""
    t = time.perf_counter()
    for _ in range(iters):
        out = pipe.run()
        if device == "gpu":
            out[0].as_cpu()
    return iters * batch / (time.perf_counter() - t)
