"""``dali-gallery bench --only decode`` (GPU): what exact decoding costs in training.

The exported pipeline decodes with ``hw_decoder_load=1.0`` by default so that every file decodes
to the preview's pixels whatever the batch size (``pipelines.device.HW_DECODER_LOAD``). DALI's own
default, 0.65, splits each batch between the hardware JPEG decoder and the CUDA decoder. This
section measures the exported training pipeline (standard chain and ImageNet tail, batch 64, 800x600
JPEGs) with 1.0, 0.65 and 0.0, interleaved in one run, so the README can say what the choice costs.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from .bench_inputs import bench_images, standard_preset

LOADS = (1.0, 0.65, 0.0)
TAIL = {"resize_shorter": 256, "crop": [224, 224], "mean": [0.485, 0.456, 0.406],
        "std": [0.229, 0.224, 0.225], "mirror_probability": 0.5}


def _write_photos(folder: Path, n: int) -> None:
    """n 800x600 JPEGs (quality 90) tiled from the bundled sample photos."""
    from PIL import Image

    tiles = bench_images(640, 8)
    for i in range(n):
        a, b = tiles[i % 8], tiles[(i + 3) % 8]
        img = np.concatenate([a, b], axis=1)[:600, :800]
        Image.fromarray(np.ascontiguousarray(img)).save(folder / f"img_{i:04d}.jpg", quality=90)


def bench_decode(device: str, quick: bool) -> dict[str, Any]:
    if device != "gpu":
        return {"skipped": "hw_decoder_load only matters for GPU (mixed) decoding"}
    from dali_gallery.pipelines.export import export_code
    from dali_gallery.pipelines.preset import validate_preset

    batch, n = 64, (256 if quick else 1024)
    threads = min(8, os.cpu_count() or 2)
    preset = standard_preset()
    preset = validate_preset({**preset.to_dict(), "output": TAIL})
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "data").mkdir()
        _write_photos(root / "data", n)
        (root / "exported_decode.py").write_text(export_code(preset))
        sys.path.insert(0, tmp)
        try:
            import exported_decode  # type: ignore[import-not-found]
        finally:
            sys.path.remove(tmp)
        pipes = {}
        for load in LOADS:
            pipes[load] = exported_decode.create_pipeline(
                str(root / "data"), batch, num_threads=threads, device_id=0,
                hw_decoder_load=load)
            pipes[load].build()
        iters = n // batch
        rates: dict[float, list[float]] = {load: [] for load in LOADS}
        for _ in range(2 if quick else 6):
            for load, pipe in pipes.items():
                t = time.perf_counter()
                for _ in range(iters):
                    out = pipe.run()
                out[0].as_cpu()  # waits for the GPU
                rates[load].append(iters * batch / (time.perf_counter() - t))
        del pipes
    med = {load: statistics.median(r[1:] or r) for load, r in rates.items()}
    return {"images": n, "batch": batch, "image_size": "800x600", "threads": threads,
            "images_per_s": {f"hw_decoder_load={load}": round(v, 1) for load, v in med.items()},
            "exact_over_dali_default": round(med[1.0] / med[0.65], 3)}
