"""What a labelled moving step costs, taken apart: one-step chains of the bench's detection
preset (random resized crop, rotate, flip) on 8 images of 256x256 with 8 boxes and their
keypoints each, the engine's own pipeline run bare, and the same module with its label step
replaced by less and less (labels passed through by DALI operators; a Python step that does
nothing, with and without the images' shapes and the matrix as inputs; the real step with
constant shapes). Timed interleaved, best of three medians of 40 runs. A measurement for the
README, not a test:

    python scripts/label_step_costs.py [cpu|gpu] [threads]
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from dali_gallery.gallery.bench_inputs import bench_images
from dali_gallery.gallery.labels_bench import DETECTION_CHAIN, synthetic_labels
from dali_gallery.pipelines import fed_values, preview_pipeline
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.generated_module import import_source
from dali_gallery.pipelines.label_code import LabelSet
from dali_gallery.pipelines.pipeline_cache import PipelineCache
from dali_gallery.pipelines.preset import load_file
from dali_gallery.pipelines.timing import calls_median_ms

DEVICE = sys.argv[1] if len(sys.argv) > 1 else "gpu"
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 4
_SIGNATURE = ('def _move_labels(boxes, classes, keypoints, m, shape_in, shape_out, min_kept, '
              'frame="pixels"):\n')
_NOOP = ("@do_not_convert\ndef _noop(b, c, k, *rest):\n"
         "    return b, c, k, [x[:, 0] for x in b]\n\n\n")
_PYTHON = ("    return fn.python_function({inputs}, num_outputs=4, device=\"cpu\", "
           "batch_processing=True, function={function})\n")
VARIANTS = {
    "pass": _SIGNATURE + "    return boxes, classes, keypoints, boxes[:, 0] * 0.0 + 1.0\n",
    "py_noop": _NOOP + _SIGNATURE + _PYTHON.format(
        inputs="boxes, classes, keypoints, m, shape_in, shape_out", function="_noop"),
    "py_noop_noshape": _NOOP + _SIGNATURE + _PYTHON.format(
        inputs="boxes, classes, keypoints, m", function="_noop"),
    "py_noop_nom": _NOOP + _SIGNATURE + _PYTHON.format(
        inputs="boxes, classes, keypoints", function="_noop"),
    "py_real_cpushapes": _SIGNATURE + _PYTHON.format(
        inputs="boxes, classes, keypoints, m, fn.constant(idata=[256, 256, 3]), "
               "fn.constant(idata=[256, 256, 3])", function="_moved_batch(min_kept, frame)"),
}
"""The label step's replacements, appended to the generated module (the last definition of
``_move_labels`` wins)."""


def bare(pipe: Any, feeds: dict[str, Any]) -> Callable[[], Any]:
    def run() -> None:
        out = pipe.run(**feeds)
        if DEVICE == "gpu":
            out[0].as_cpu()
    return run


def step_runs(index: int, name: str, images: list[np.ndarray],
              boxes: list[Any]) -> dict[str, Callable[[], Any]]:
    """The timed runs of one step: engine and bare, without and with labels, and variants."""
    runs: dict[str, Callable[[], Any]] = {}
    preset = load_file(DETECTION_CHAIN)
    preset.steps = preset.steps[index:index + 1]
    for labels in (None, boxes):
        eng = PreviewEngine(DEVICE, cache=PipelineCache(None), num_threads=THREADS)
        eng.labels_after_run = False  # this probe measures the graph's own label step
        eng.set_arrays(images)
        eng.set_labels(labels)
        eng.render(preset)
        tag = "none" if labels is None else "boxes"
        runs[f"{name}/engine_{tag}"] = lambda eng=eng: eng.render(preset)
        built = list(eng._pipes.values())[-1]
        values = preview_pipeline.feed_values(preset, built.chain.feeds, len(images))
        feeds = fed_values.pack(values, fed_values.layout(built.chain.feeds), len(images))
        names = built.chain.labels.graph_names if built.chain.labels else ()
        feeds.update(eng._batches.feeds(images, labels, None, len(images), names))
        runs[f"{name}/bare_{tag}"] = bare(built.pipe, feeds)
        source = built.module_path.read_text(encoding="utf-8")
        if labels is None or "_move_labels(" not in source:
            continue
        if "import do_not_convert" not in source:
            source = "from nvidia.dali.pipeline import do_not_convert\n" + source
        for variant, code in VARIANTS.items():
            module = import_source(source + "\n\n" + code, eng._dir, f"var_{variant}_{index}")
            pipe = preview_pipeline.build_pipeline(module, preset.seed, len(images), DEVICE,
                                                   THREADS, False, True,
                                                   built.chain.conditionals, LabelSet())
            pipe.build()
            runs[f"{name}/{variant}"] = bare(pipe, feeds)
    return runs


def main() -> None:
    images = bench_images(256, 8)
    boxes = [dataclasses.replace(x, mask=None) for x in synthetic_labels(images)]
    runs: dict[str, Callable[[], Any]] = {}
    for index, name in ((0, "random_resized_crop"), (2, "rotate"), (1, "flip")):
        runs.update(step_runs(index, name, images, boxes))
    for run in runs.values():
        run()
        run()
    best: dict[str, list[float]] = {}
    for _ in range(3):
        for key, run in runs.items():
            best.setdefault(key, []).append(calls_median_ms(run))
    print(json.dumps({k: round(min(v), 3) for k, v in best.items()}, indent=1))


if __name__ == "__main__":
    main()
