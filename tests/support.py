"""Shared test helpers: run an exported module in-process, build one-step presets."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from dali_gallery.pipelines.catalog import CATALOG, OpSpec
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.generated_module import import_source
from dali_gallery.pipelines.params import RANGE
from dali_gallery.pipelines.preset import Preset, load

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "gallery" / "samples"
_counter = itertools.count()


def preset_dict(steps: list[dict[str, Any]], seed: int = 7, output: Any = None) -> dict[str, Any]:
    return {"format": "dali-gallery/preset", "version": 1, "seed": seed, "steps": steps,
            "output": output}


def run_python(*args: str) -> subprocess.CompletedProcess:
    """``python ARGS`` in a child process (a script or ``-m module``), output captured."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=300)


def preset_and_script(preset: dict[str, Any], tmp: Path) -> dict[str, Path]:
    """The preset's JSON and its exported module written to ``tmp``, for the CLI tests that
    compare ``dali-gallery render`` with the exported script."""
    (tmp / "preset.json").write_text(json.dumps(preset))
    (tmp / "augment.py").write_text(export_code(load(preset)))
    return {"preset": tmp / "preset.json", "script": tmp / "augment.py", "tmp": tmp}


def import_export(preset: Preset | dict, tmp: Path) -> Any:
    """Write the exported module to ``tmp`` and import it (as a user's training script would)."""
    return import_source(export_code(preset), tmp, f"exported_{next(_counter)}")


def first_batch(preset: Preset | dict, folder: Path, n: int, tmp: Path,
                device_id: int | None = None) -> list[np.ndarray]:
    """The exported pipeline's first batch, in file order."""
    module = import_export(preset, tmp)
    pipe = module.create_pipeline(str(folder), n, num_threads=2, device_id=device_id,
                                  random_shuffle=False)
    pipe.build()
    images, _ = pipe.run()
    if device_id is not None:
        images = images.as_cpu()
    out = [np.array(images[i]) for i in range(n)]
    del pipe
    return out


def random_value(spec: OpSpec) -> dict[str, Any]:
    """Params that draw the magnitude parameter per sample, when the op allows it."""
    if spec.magnitude is None:
        return {}
    p = spec.param(spec.magnitude)
    if RANGE not in p.modes:
        return {}
    lo, hi = p.random_default or p.slider or p.bounds
    return {p.name: {"uniform": [lo, hi]}}


def one_step(op: str, probability: float = 1.0, seed: int = 7, **params: Any) -> Preset:
    return load(preset_dict([{"op": op, "probability": probability, "params": params}], seed))


CPU_OPS = [name for name, spec in CATALOG.items() if spec.cpu]
GPU_ONLY_OPS = [name for name, spec in CATALOG.items() if not spec.cpu]


def check_checkpoints_declaration(op: str, device: str, folder: Path) -> None:
    """Build ``op``'s one-step preview pipeline with ``enable_checkpointing`` on ``device``: DALI
    must accept it exactly when the catalog declares ``checkpoints``."""
    import pytest

    from dali_gallery.pipelines.codegen import preview_module
    from dali_gallery.pipelines.preset import new_step
    from dali_gallery.pipelines.preview_pipeline import ChainModules, build_pipeline

    preset = Preset([new_step(op)], seed=3)
    code, chain = preview_module(preset)
    modules = ChainModules(folder)
    module, _ = modules.load(code)
    pipe = build_pipeline(module, preset.seed, 1, device, 1, False, True, chain.conditionals)
    try:
        if CATALOG[op].checkpoints:
            pipe.build()
            assert pipe.checkpoint()
        else:
            with pytest.raises(RuntimeError, match="[Cc]heckpoint"):
                pipe.build()
    finally:
        del pipe
        modules.clear()


def write_notebook(path: Path, *sources: str) -> Path:
    """A notebook of one code cell per source, with the python3 kernelspec Voilà and
    nbclient look for, written to ``path``."""
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    nb = new_notebook(cells=[new_code_cell(s) for s in sources])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, path)
    return path


def sample_arrays(count: int, max_side: int | None = None) -> list[np.ndarray]:
    """The first ``count`` bundled samples, decoded by a CPU engine (``max_side``: smaller)."""
    from dali_gallery.pipelines.engine import PreviewEngine
    from dali_gallery.pipelines.pipeline_cache import PipelineCache

    eng = PreviewEngine("cpu", num_threads=2, cache=PipelineCache(None))
    eng.set_images(SAMPLES, max_side=max_side)
    out = eng.images[:count]
    eng.close()
    return out


def sample_engine(count: int) -> Any:
    """A 2-thread CPU engine on the first ``count`` bundled samples (default pipeline cache)."""
    from dali_gallery.pipelines.engine import PreviewEngine

    eng = PreviewEngine("cpu", num_threads=2)
    assert eng.set_images(SAMPLES) == []
    eng.set_arrays(eng.images[:count], eng.names[:count])
    return eng


def cpu_engine(arrays: list[np.ndarray], cache: Any) -> Any:
    """A 2-thread CPU engine on ``arrays`` with this pipeline cache."""
    from dali_gallery.pipelines.engine import PreviewEngine

    eng = PreviewEngine("cpu", num_threads=2, cache=cache)
    eng.set_arrays(arrays)
    return eng
