"""The parity report's timings: each step and the whole pipeline in the original library (on
the CPU, every transform fed the previous one's output) and in DALI (CPU and GPU engines), in
the same run."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..engine import PreviewEngine, StepError
from ..preset import Group, Preset
from .convert import ImportResult
from .instantiate import NotBuilt, build_pipeline


@dataclass
class Timing:
    """Milliseconds for all the report's images: original (CPU), DALI CPU, DALI GPU."""

    name: str
    original_ms: float | None = None
    dali_cpu_ms: float | None = None
    dali_gpu_ms: float | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.name, "original_ms": _r(self.original_ms),
                "dali_cpu_ms": _r(self.dali_cpu_ms), "dali_gpu_ms": _r(self.dali_gpu_ms),
                "note": self.note or None}



def timings(result: ImportResult, images: list[np.ndarray], engines: dict[str, PreviewEngine],
             repeats: int, install: str | None) -> tuple[list[Timing], Timing, list[str]]:
    notes: list[str] = []
    original, names, whole_original = _original_times(result, images, repeats, install, notes)
    preset = result.preset
    timings = []
    for k, name in enumerate(names):
        timings.append(Timing(name, original[k] if original else None))
    by_name = {t.name: t for t in timings}
    for i, s in enumerate(preset.steps):
        label = _step_label(result, i)
        t = by_name.get(label)
        if t is None:
            t = Timing(label)
            timings.append(t)
            by_name[label] = t
        single = preset.copy()
        single.steps = [s]
        single.output = None
        for device, engine in engines.items():
            ms = _dali_ms(engine, single, repeats, tail=False)
            _add(t, device, ms)
    whole = Timing("whole pipeline", whole_original)
    for device, engine in engines.items():
        p = preset.copy()
        skipped = []
        for _, s in p.active_ops():  # a group's child alone: the group picks among the rest
            if device not in devices_of(s):
                s.enabled = False
                skipped.append(s.op)
        for s in p.steps:
            if isinstance(s, Group) and not s.active_children():
                s.enabled = False
        if skipped:
            notes.append(f"DALI {device.upper()} timed without {', '.join(skipped)} (GPU only)")
        _add(whole, device, _dali_ms(engine, p, repeats, tail=p.output is not None))
    return timings, whole, notes


def devices_of(step: Any) -> frozenset[str]:
    """Where DALI runs a step: a group only where all its enabled children run."""
    from ..catalog import CATALOG

    if isinstance(step, Group):
        return frozenset({"cpu", "gpu"}).intersection(
            *[devices_of(c) for _, c in step.active_children()])
    op = getattr(step, "op", None)
    return CATALOG[op].devices if op in CATALOG else frozenset({"cpu", "gpu"})


def _add(t: Timing, device: str, ms: float | str | None) -> None:
    if isinstance(ms, str):
        t.note = (t.note + "; " if t.note else "") + f"DALI {device.upper()}: {ms}"
        return
    if device == "cpu":
        t.dali_cpu_ms = ms
    else:
        t.dali_gpu_ms = ms


def _step_label(result: ImportResult, index: int) -> str:
    owners = [t.call.name for t in result.transforms if index in t.steps]
    return " + ".join(dict.fromkeys(owners)) or f"step {index}"


def _dali_ms(engine: PreviewEngine, preset: Preset, repeats: int, tail: bool) -> float | str:
    try:
        engine.render(preset, tail=tail)  # build (or load) and warm up
        times = [engine.render(preset, tail=tail).ms for _ in range(max(1, repeats))]
    except StepError as e:
        return e.detail[:160]
    return statistics.median(times)


def _original_times(result: ImportResult, images: list[np.ndarray], repeats: int,
                    install: str | None, notes: list[str]) -> tuple[list[float], list[str],
                                                                    float | None]:
    """Per top-level transform and whole-pipeline milliseconds of the original library,
    each transform fed the previous one's output (the real data flow)."""
    if install:
        notes.append(f"original library not timed: {install}")
        return [], [], None
    try:
        compose, left_out = build_pipeline(result.parsed.root)
    except (NotBuilt, ImportError, TypeError, ValueError) as e:
        notes.append(f"original pipeline not built: {e}")
        return [], [], None
    if left_out:
        notes.append("original pipeline timed without " + "; ".join(left_out))
    steps = list(compose.transforms)
    names = [type(t).__name__ for t in steps]
    run = _runner(result.library, names)
    per_round = []
    try:
        for _ in range(max(1, repeats) + 1):
            totals = [0.0] * len(steps)
            for img in images:
                x = run.prepare(img)
                for k, t in enumerate(steps):
                    t0 = time.perf_counter()
                    x = run.call(t, x)
                    totals[k] += (time.perf_counter() - t0) * 1000
            per_round.append(totals)
    except (TypeError, ValueError, RuntimeError) as e:  # the library refused our input
        notes.append(f"original pipeline not timed: {type(e).__name__}: {e}"[:300])
        return [], [], None
    per_round = per_round[1:]  # the first round warms caches up
    medians = [statistics.median(r[k] for r in per_round) for k in range(len(steps))]
    return medians, names, sum(medians)


@dataclass
class _Runner:
    prepare: Callable[[np.ndarray], Any]
    call: Callable[[Any, Any], Any]


_PIL_CONVERSIONS = ("ToTensor", "PILToTensor", "ToImage")


def _runner(library: str, names: list[str]) -> _Runner:
    """How the original pipeline is fed: NumPy for Albumentations; for torchvision a PIL
    image when the pipeline converts one (ToTensor...), else a uint8 CHW tensor (v2)."""
    if library == "albumentations":
        return _Runner(lambda img: img, lambda t, x: t(image=x)["image"])

    def pil(img: np.ndarray) -> Any:
        from PIL import Image

        return Image.fromarray(img)

    def tensor(img: np.ndarray) -> Any:
        from .reference import to_tensor

        return to_tensor(img)

    prepare = pil if any(n in _PIL_CONVERSIONS for n in names) else tensor
    return _Runner(prepare, lambda t, x: t(x))


def _r(x: float | None) -> float | None:
    return None if x is None else round(x, 2)
