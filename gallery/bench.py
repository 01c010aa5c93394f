"""``dali-gallery bench``: the engine and the exported pipeline against bare DALI, side by side.

Every figure is a ratio against a hand-written DALI pipeline measured in the same run and
interleaved with it (A, B, A, B...), so machine noise hits both sides alike.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.generated_module import import_source
from dali_gallery.pipelines.timing import median_ms, p95_ms

from .bench_inputs import bench_images, images_per_s, standard_preset, to_host
from .bench_reference import bare_pipeline, torchvision_chain, training_pipeline

__all__ = ["SECTIONS", "bench_images", "run_bench", "sections", "standard_preset"]

SECTIONS = ("engine", "encode", "scrub", "memory", "export", "decode", "torchvision",
            "albumentations", "widget", "gallery", "distribution", "browser", "labels", "detection")


def bench_engine(device: str, quick: bool) -> dict[str, Any]:
    """Median ms per render: engine vs the bare pipeline, 8 images at 256^2 and 512^2,
    alternating; the work a render leaves to a worker (the RNG restore, as between a
    person's edits) ends before the bare run is timed."""
    reps = 5 if quick else 100
    threads = os.cpu_count() or 2
    preset = standard_preset()
    result = {}
    for size in (256, 512):
        imgs = bench_images(size)
        eng = PreviewEngine(device, num_threads=threads)
        eng.set_arrays(imgs)
        bare = bare_pipeline(len(imgs), device, threads)
        eng.render(preset)
        to_host(bare.run(images=imgs)[0], device)
        e_t, b_t = [], []
        for _ in range(reps):
            t = time.perf_counter()
            eng.render(preset)
            e_t.append(time.perf_counter() - t)
            eng.settle()  # the RNG restore it left to a worker: not beside the bare run
            t = time.perf_counter()
            to_host(bare.run(images=imgs)[0], device)
            b_t.append(time.perf_counter() - t)
        e, b = median_ms(e_t), median_ms(b_t)
        result[f"{size}x{size}"] = {"engine_ms": e, "bare_dali_ms": b,
                                    "ratio": round(e / b, 3), "engine_p95_ms": p95_ms(e_t)}
        eng.close()
        del bare
    return result


def bench_scrub(device: str, quick: bool) -> dict[str, Any]:
    """A 50-step drag of a run-time slider (rotate angle) and of the probability slider: how
    many pipeline builds it causes (the first render builds once)."""
    preset = standard_preset()
    preset.steps[0].params["angle"] = 0.0
    preset.steps[0].probability = 0.5
    eng = PreviewEngine(device)
    eng.set_arrays(bench_images(256))
    eng.render(preset)
    before = eng.builds
    times = []
    for k in range(50):
        preset.steps[0].params["angle"] = -45.0 + 90.0 * k / 49
        preset.steps[0].probability = 0.1 + 0.8 * k / 49
        t = time.perf_counter()
        eng.render(preset)
        times.append(time.perf_counter() - t)
    builds = eng.builds - before
    eng.close()
    return {"steps": 50, "builds": builds, "median_ms": median_ms(times),
            "p95_ms": p95_ms(times)}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() / 2**20


def bench_memory(device: str, quick: bool) -> dict[str, Any]:
    """RSS growth over many renders with parameter changes (after a warm-up of 50)."""
    n = 200 if quick else 1000
    preset = standard_preset()
    preset.steps[0].params["angle"] = 0.0
    eng = PreviewEngine(device)
    eng.set_arrays(bench_images(128))
    for k in range(50):
        preset.steps[0].params["angle"] = float(k % 90)
        eng.render(preset)
    gc.collect()
    start = _rss_mb()
    for k in range(n):
        preset.steps[0].params["angle"] = float(k % 90)
        eng.render(preset)
    gc.collect()
    end = _rss_mb()
    eng.close()
    return {"renders": n, "rss_start_mb": round(start, 1), "rss_end_mb": round(end, 1),
            "growth_mb": round(end - start, 1)}


def _write_dataset(folder: Path, n: int, size: int) -> None:
    from PIL import Image

    for i, img in enumerate(bench_images(size, n)):
        Image.fromarray(img).save(folder / f"img_{i:04d}.jpg", quality=90)


def bench_export(device: str, quick: bool) -> dict[str, Any]:
    """Exported training pipeline vs a hand-written one (reader + decoder + same chain):
    images/s over the same folder, interleaved epochs."""
    from dali_gallery.pipelines.export import export_code

    batch, n = 32, (64 if quick else 256)
    threads = os.cpu_count() or 2
    device_id = 0 if device == "gpu" else None
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "data").mkdir()
        _write_dataset(root / "data", n, 256)
        exported_bench = import_source(export_code(standard_preset()), root, "exported_bench")
        exported = exported_bench.create_pipeline(str(root / "data"), batch,
                                                  num_threads=threads, device_id=device_id)
        files = exported_bench.flat_folder_files(str(root / "data"))
        handmade = training_pipeline(root / "data", files, batch, threads, device)
        exported.build()
        handmade.build()
        # one pass over the folder takes ~15 ms on a GPU: several passes per timing, many
        # interleaved rounds, so that one scheduling hiccup does not decide the ratio
        iters = (n // batch) * (4 if device == "gpu" else 1)
        rates: dict[str, list[float]] = {"exported": [], "hand_written": []}
        for _ in range(2 if quick else 10):
            for name, pipe in (("exported", exported), ("hand_written", handmade)):
                rates[name].append(images_per_s(pipe, iters, batch, device))
        del exported, handmade
        e = statistics.median(rates["exported"][1:] or rates["exported"])
        h = statistics.median(rates["hand_written"][1:] or rates["hand_written"])
        return {"images": n, "batch": batch, "image_size": "256x256",
                "exported_images_per_s": round(e, 1), "hand_written_images_per_s": round(h, 1),
                "ratio": round(e / h, 3)}


def bench_encode(device: str, quick: bool) -> dict[str, Any]:
    """Render + the JPEG bytes a preview displays (GPU: one nvImageCodec batch, CPU codecs)."""
    reps = 5 if quick else 100
    preset = standard_preset()
    eng = PreviewEngine(device)
    eng.set_arrays(bench_images(256))
    eng.render(preset, encode="jpeg")
    total, enc, plain = [], [], []
    for _ in range(reps):
        t = time.perf_counter()
        r = eng.render(preset, encode="jpeg")
        total.append(time.perf_counter() - t)
        enc.append(r.encode_ms / 1000)
        t = time.perf_counter()
        eng.render(preset)
        plain.append(time.perf_counter() - t)
    eng.close()
    return {"images": "8x256x256", "render_ms": median_ms(plain),
            "render_plus_jpeg_ms": median_ms(total), "jpeg_encode_ms": median_ms(enc)}


def bench_torchvision(device: str, quick: bool) -> dict[str, Any]:
    """The exported DALI pipeline against torchvision.transforms.v2 + DataLoader workers on an
    equivalent chain over the same JPEG folder (images/s)."""
    try:
        import torch
        import torchvision
    except ImportError as e:
        return {"skipped": f"torchvision is not installed ({e.name})"}
    from dali_gallery.pipelines.export import export_code

    batch, n = 64, (256 if quick else 1024)
    workers = min(16, os.cpu_count() or 2)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        root.mkdir()
        _write_dataset(root, n, 256)
        files = sorted(root.iterdir())
        exported_tv = import_source(export_code(standard_preset()), Path(tmp), "exported_tv")
        pipe = exported_tv.create_pipeline(str(root), batch, num_threads=workers,
                                           device_id=0 if device == "gpu" else None)
        pipe.build()
        pipe.run()
        dali_rate = images_per_s(pipe, n // batch, batch, device)
        del pipe

        chain = torchvision_chain()

        class Folder(torch.utils.data.Dataset):
            def __len__(self) -> int:
                return len(files)

            def __getitem__(self, i: int) -> Any:
                data = torchvision.io.read_file(str(files[i]))
                return chain(torchvision.io.decode_jpeg(data))

        loader = torch.utils.data.DataLoader(Folder(), batch_size=batch, num_workers=workers)
        for _ in loader:  # warm-up epoch (worker start-up)
            break
        t = time.perf_counter()
        count = sum(len(b) for b in loader)
        tv_rate = count / (time.perf_counter() - t)
        return {"images": n, "batch": batch, "workers": workers,
                "dali_exported_images_per_s": round(dali_rate, 1),
                "torchvision_v2_images_per_s": round(tv_rate, 1),
                "dali_over_torchvision": round(dali_rate / tv_rate, 2)}


BUILTIN = {"engine": bench_engine, "encode": bench_encode, "scrub": bench_scrub,
           "memory": bench_memory, "export": bench_export, "torchvision": bench_torchvision}


def sections() -> dict[str, Callable[[str, bool], dict[str, Any]]]:
    """Every section by name: the built-in ones, and those living with the layer or the
    feature they measure (imported here, at the top layer, only when the bench runs)."""
    from dali_gallery.widgets.bench import bench_widget

    from .browser_bench import bench_browser
    from .decode_bench import bench_decode
    from .detection_bench import bench_detection
    from .distribution_bench import bench_distribution
    from .gallery_bench import bench_gallery
    from .labels_bench import bench_labels
    from .library_bench import bench_albumentations

    return {**BUILTIN, "decode": bench_decode, "widget": bench_widget, "gallery": bench_gallery,
            "albumentations": bench_albumentations, "distribution": bench_distribution,
            "browser": bench_browser, "labels": bench_labels,
            "detection": bench_detection}


def run_bench(device: str = "cpu", as_json: bool = False, quick: bool = False,
              only: list[str] | None = None) -> int:
    from dali_gallery.pipelines.device import resolve

    known = sections()
    dev = resolve(device)
    chosen = only or [s for s in SECTIONS if s in known]
    report: dict[str, Any] = {"device": dev, "cpu_cores": os.cpu_count(),
                              "date": time.strftime("%Y-%m-%d"), "quick": quick}
    for name in chosen:
        fn_ = known.get(name)
        if fn_ is None:
            print(f"unknown bench section {name!r}; choose from {', '.join(SECTIONS)}",
                  file=sys.stderr)
            return 2
        t = time.perf_counter()
        report[name] = fn_(dev, quick)
        report[name]["section_s"] = round(time.perf_counter() - t, 1)
        if not as_json:
            print(f"{name}: {json.dumps(report[name])}", flush=True)
    if as_json:
        print(json.dumps(report, indent=2))
    return 0
