"""``dali-gallery bench --only albumentations``: the standard chain, decode included, in DALI's
exported pipeline and in Albumentations (one process, then one process per core), same JPEGs,
same run.

This is the honest CPU figure for people coming from Albumentations: OpenCV on one core
against DALI's CPU operators on all of them. DALI's gain is on the GPU (run it with
``--device gpu`` on a GPU machine: the DALI side then decodes and augments there).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .bench_inputs import bench_images, standard_preset


def albumentations_chain() -> Any:
    """The standard chain (``samples/bench_chain.json``) as Albumentations writes it."""
    import albumentations as A

    return A.Compose([
        A.Rotate(limit=15, border_mode=0, p=1.0),
        A.RandomBrightnessContrast(brightness_limit=0.2, contrast_limit=0.2, p=1.0),
        A.HueSaturationValue(hue_shift_limit=5, sat_shift_limit=25, val_shift_limit=0, p=1.0),
        A.GaussianBlur(sigma_limit=(0.1, 1.5), p=1.0),
        A.HorizontalFlip(p=0.5),
        A.GaussNoise(std_range=(8 / 255, 8 / 255), p=1.0),
    ])


def _albumentations_worker(files: list[str]) -> int:
    """Decode (OpenCV) and augment every file; returns how many were done."""
    import cv2
    import numpy as np

    cv2.setNumThreads(1)
    chain = albumentations_chain()
    for f in files:
        data = np.fromfile(f, dtype=np.uint8)
        img = cv2.cvtColor(cv2.imdecode(data, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        chain(image=img)
    return len(files)


def _albumentations_rate(files: list[str], processes: int) -> float:
    if processes == 1:
        _albumentations_worker(files[:8])  # warm-up (imports, OpenCV)
        t = time.perf_counter()
        n = _albumentations_worker(files)
        return n / (time.perf_counter() - t)
    chunks = [files[k::processes] for k in range(processes)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(processes) as pool:
        pool.map(_albumentations_worker, [c[:8] for c in chunks])  # start-up and warm-up
        t = time.perf_counter()
        n = sum(pool.map(_albumentations_worker, chunks))
        return n / (time.perf_counter() - t)


def _dali_rate(root: Path, tmp: str, n: int, batch: int, device: str, threads: int) -> float:
    from dali_gallery.pipelines.export import export_code

    mod = Path(tmp) / "exported_albu_bench.py"
    mod.write_text(export_code(standard_preset()), encoding="utf-8")
    sys.path.insert(0, tmp)
    try:
        import exported_albu_bench  # type: ignore[import-not-found]
    finally:
        sys.path.remove(tmp)
    pipe = exported_albu_bench.create_pipeline(str(root), batch, num_threads=threads,
                                               device_id=0 if device == "gpu" else None,
                                               random_shuffle=False)
    pipe.build()
    pipe.run()
    iters = n // batch
    t = time.perf_counter()
    for _ in range(iters):
        out = pipe.run()
        if device == "gpu":
            out[0].as_cpu()
    rate = iters * batch / (time.perf_counter() - t)
    del pipe
    return rate


def bench_albumentations(device: str, quick: bool) -> dict[str, Any]:
    os.environ.setdefault("NO_ALBUMENTATIONS_UPDATE", "1")  # no network call from a bench
    try:
        import albumentations  # noqa: F401
        import cv2  # noqa: F401
    except ImportError as e:
        return {"skipped": f"albumentations is not installed ({e.name}): pip install "
                           "albumentations"}
    from PIL import Image

    cores = os.cpu_count() or 1
    n, batch = (128, 32) if quick else (512, 64)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        root.mkdir()
        for i, img in enumerate(bench_images(256, n)):
            Image.fromarray(img).save(root / f"img_{i:04d}.jpg", quality=90)
        files = [str(p) for p in sorted(root.iterdir())]
        dali = _dali_rate(root, tmp, n, batch, device, cores)
        one = _albumentations_rate(files, 1)
        many = _albumentations_rate(files, cores) if cores > 1 else one
    return {"images": n, "size": "256x256 JPEG, decode included", "cores": cores,
            "dali_device": device, "dali_images_per_s": round(dali, 1),
            "albumentations_1_process_images_per_s": round(one, 1),
            f"albumentations_{cores}_processes_images_per_s": round(many, 1),
            "albumentations_1_process_over_dali": round(one / dali, 2),
            f"albumentations_{cores}_processes_over_dali": round(many / dali, 2)}
