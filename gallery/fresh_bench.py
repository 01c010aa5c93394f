"""The gallery as a new kernel meets it: a fresh Python process, beside plain DALI in one.

The ``gallery`` bench's cold and warm figures are taken in the bench's own process, after its
imports, and the warm one after the cold one has already used the GPU. Every Voilà page that is
not served from the pool of pre-started kernels gets a new process instead: it imports the
package, makes its first GPU pipeline, and loads every graph from the pipeline cache. This
module times that in a child process (``python -m dali_gallery.gallery.fresh_bench``), and, in
another, plain DALI doing the same DALI work in a fresh process (:class:`DaliWork` saved and
replayed: the graphs deserialized, built, fed, run and copied to the host, nothing traced).
Each child reports its imports and its work from its own start, as one JSON line.

:func:`new_kernel_cold` is the very first page instead: a fresh process and an empty pipeline
cache, so every pipeline is traced; once with the policies' trace worker (and CuPy's warm-up)
started before the imports, as the served notebook does (:func:`pipelines.trace_ahead.prestart`),
once with them started by the gallery view, as in a notebook that makes a gallery in a new
kernel.
"""

from __future__ import annotations

import time

_START = time.perf_counter()  # before this module's imports: the child's clock

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

TIMEOUT_S = 300


def _child(*args: str) -> dict[str, Any]:
    """Run this module in a fresh interpreter; its last stdout line is its JSON report."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "dali_gallery.gallery.fresh_bench", *args],
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return {"error": f"{args[0]} child did not finish within {TIMEOUT_S} s"}
    wall = time.perf_counter() - t0
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"{args[0]} child exited {done.returncode}: {tail}"}
    try:
        report = json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": f"{args[0]} child's last line is not its report: {lines[-1][:200]}"}
    report["process_s"] = round(wall, 2)  # interpreter start and exit included
    return report


def new_kernel(device: str, cache_folder: str | Path, work_file: str | Path) -> dict[str, Any]:
    """The gallery in a fresh process on the filled pipeline cache, and plain DALI doing the
    recorded work in another; ``over_plain_dali`` compares the two after their imports."""
    gallery = _child("gallery", device, str(cache_folder))
    plain = _child("plain", str(work_file))
    out: dict[str, Any] = {"gallery": gallery, "plain_dali": plain}
    if "error" not in gallery and "error" not in plain:
        out["over_plain_dali"] = round(gallery["gallery_s"] / plain["dali_s"], 2)
    return out


def new_kernel_cold(device: str) -> dict[str, Any]:
    """The gallery in a fresh process with an empty cache: the trace worker started ahead of
    the imports, then with the view (see the module docstring)."""
    return {"worker_ahead": _child("cold", device, "ahead"),
            "worker_with_view": _child("cold", device, "with_view")}


def _cold(device: str, when: str) -> dict[str, Any]:
    import tempfile

    from dali_gallery.pipelines import trace_ahead

    if when == "ahead":
        trace_ahead.prestart()
    with tempfile.TemporaryDirectory(prefix="dali-gallery-cold-") as folder:
        result = _gallery(device, folder)
    return {**result, "pipelines_traced_in_kernel": result.pop("pipelines_built") - result.pop(
        "pipelines_from_cache"), "trace_worker": trace_ahead.ahead_report()}


def _gallery(device: str, folder: str) -> dict[str, Any]:
    from dali_gallery.pipelines.pipeline_cache import PipelineCache

    from .bench_inputs import bench_images
    from .gallery_run import render_gallery
    from .view import GalleryView  # noqa: F401  (imported here: timed with the imports)

    images = bench_images(256, 4)
    imports = time.perf_counter() - _START
    result = render_gallery(device, images, PipelineCache(folder))
    if "error" in result:
        raise RuntimeError(result["error"])
    return {"imports_s": round(imports, 2), "gallery_s": result["total_s"],
            "first_row_s": result["first_row_s"], "pipelines_built": result["pipelines_built"],
            "pipelines_from_cache": result["pipelines_from_cache"],
            "operators_rendered": result["operators_rendered"]}


def _plain(work_file: str) -> dict[str, Any]:
    import nvidia.dali  # noqa: F401  (the import is timed apart from the work)

    from dali_gallery.pipelines.dali_record import DaliWork, replay

    imports = time.perf_counter() - _START
    work = DaliWork.load(work_file)
    read = time.perf_counter() - _START - imports
    seconds = replay(work)
    return {"imports_s": round(imports, 2), "read_work_s": round(read, 2),
            "dali_s": round(seconds, 2), "pipelines": len(work.pipelines)}


def main(argv: list[str]) -> int:
    if argv[0] == "cold":
        report = _cold(argv[1], argv[2])
    elif argv[0] == "gallery":
        report = _gallery(argv[1], argv[2])
    else:
        report = _plain(argv[1])
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
