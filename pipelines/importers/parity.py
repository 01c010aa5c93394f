"""The parity report: each imported step beside the original library, on the user's images.

For every transform with a fixed-parameter case the original library (on the CPU) and DALI
(through the project's :class:`~dali_gallery.pipelines.engine.PreviewEngine`) run with the
same values; the report gives the pixel difference (max, mean, a diff image), checks the
rule's claimed verdict against it, and times each step and the whole pipeline in both
libraries in the same run (DALI on the CPU and, where there is one, the GPU).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..engine import PreviewEngine, StepError
from ..preset import FORMAT, VERSION, load
from .convert import Imported, ImportResult
from .parity_timing import Timing, devices_of, timings
from .reference import missing
from .rules import Refused, Verdict

MAX_IMAGES = 8
DIFF_GAIN = 8
"""The diff image shows |original - DALI| x 8 (one grey level is visible)."""


@dataclass
class Comparison:
    """One transform's fixed case on every image, and whether its verdict holds."""

    item: Imported
    label: str = ""
    skipped: str = ""
    max_diff: float = 0.0
    mean_diff: float = 0.0
    within: float = 1.0
    """Share of pixel values within the verdict's levels (all images)."""
    noise_std: tuple[float, float] | None = None
    """(original, DALI) standard deviation of the added noise, for noise verdicts."""
    holds: bool | None = None
    sizes: str = ""
    samples: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(
        default_factory=list)
    """(input, original library, DALI, diff image) for the first images."""

    @property
    def verdict(self) -> Verdict:
        return self.item.verdict

    def measured(self) -> str:
        if self.skipped:
            return f"not compared: {self.skipped}"
        if self.sizes:
            return f"output sizes differ ({self.sizes})"
        if self.noise_std is not None:
            a, b = self.noise_std
            return f"noise std {a:.1f} (original) vs {b:.1f} (DALI) levels"
        if self.max_diff == 0:
            return "bit-identical"
        return (f"max {self.max_diff:.4g}, mean {self.mean_diff:.3g} levels; "
                f"{self.within * 100:.2f}% within {self.verdict.levels:g}")

    def to_dict(self) -> dict[str, Any]:
        return {"transform": self.item.call.name, "line": self.item.call.line,
                "fixed": self.label, "verdict": self.verdict.line(), "measured": self.measured(),
                "holds": self.holds, "max_diff": self.max_diff, "mean_diff": self.mean_diff,
                "within": self.within, "skipped": self.skipped or None}


@dataclass
class ParityReport:
    result: ImportResult
    comparisons: list[Comparison]
    timings: list[Timing]
    pipeline: Timing
    n_images: int
    sizes: list[tuple[int, int]]
    install: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def all_hold(self) -> bool:
        return all(c.holds is not False for c in self.comparisons)

    def to_dict(self) -> dict[str, Any]:
        return {"summary": self.result.summary(), "images": self.n_images,
                "sizes": [list(s) for s in self.sizes], "install": self.install,
                "notes": self.notes, "comparisons": [c.to_dict() for c in self.comparisons],
                "timings": [t.to_dict() for t in self.timings],
                "pipeline": self.pipeline.to_dict()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)


def parity_report(result: ImportResult, images: Sequence[np.ndarray], *,
                  devices: Sequence[str] | None = None, repeats: int = 3,
                  samples: int = 2, timing: bool = True,
                  engines: dict[str, PreviewEngine] | None = None) -> ParityReport:
    """Compare every imported transform on ``images`` (HWC uint8 RGB; at most 8 are used)."""
    images = [np.ascontiguousarray(a) for a in images[:MAX_IMAGES]]
    if not images:
        raise ValueError("the parity report needs at least one image")
    libraries = sorted({t.call.library for t in result.transforms} - {"custom"})
    install = "; ".join(h for h in (missing(lib) for lib in libraries) if h) or None
    own = engines is None
    engines = engines or _engines(devices)
    for e in engines.values():
        e.set_arrays(images)
    try:
        comparisons = [_compare(t, images, _engine_for(t, result, engines), install, samples)
                       for t in result.transforms if t.status in ("imported", "tail")]
        steps: list[Timing] = []
        pipeline = Timing("whole pipeline")
        notes: list[str] = []
        if timing:
            steps, pipeline, notes = timings(result, images, engines, repeats, install)
    finally:
        if own:
            for e in engines.values():
                e.close()
    return ParityReport(result, comparisons, steps, pipeline, len(images),
                        [(a.shape[0], a.shape[1]) for a in images], install, notes)


def _engine_for(item: Imported, result: ImportResult,
                engines: dict[str, PreviewEngine]) -> PreviewEngine:
    """The CPU engine, or the GPU one for a step DALI implements only there (median blur)."""
    devices = set.intersection(*[set(devices_of(result.preset.steps[i])) for i in item.steps]) \
        if item.steps else {"cpu", "gpu"}
    if "cpu" not in devices and "gpu" in engines:
        return engines["gpu"]
    return engines.get("cpu") or next(iter(engines.values()))


def _engines(devices: Sequence[str] | None) -> dict[str, PreviewEngine]:
    from ..device import gpu_count

    wanted = list(devices) if devices is not None else (
        ["cpu", "gpu"] if gpu_count() > 0 else ["cpu"])
    return {d: PreviewEngine(d) for d in wanted}


# ---- comparisons ------------------------------------------------------------------------------


def _compare(item: Imported, images: list[np.ndarray], engine: PreviewEngine,
             install: str | None, samples: int) -> Comparison:
    comp = Comparison(item)
    rule = item.rule
    if rule is None or rule.fixed is None or item.args is None:
        comp.skipped = "no fixed-parameter case for this transform"
        return comp
    if install and missing(item.call.library):
        comp.skipped = f"{item.call.library} is not installed ({missing(item.call.library)})"
        return comp
    cases = []
    try:
        for img in images:
            fixed = rule.fixed(item.args, img.shape)
            if fixed is None:
                comp.skipped = "the transform changes nothing"
                return comp
            cases.append(fixed)
    except Refused as e:
        comp.skipped = e.reason
        return comp
    comp.label = cases[0].label
    outputs = _render_cases(cases, engine)
    if isinstance(outputs, str):
        comp.skipped = outputs
        return comp
    diffs, noise = [], []
    for k, (img, case, dali) in enumerate(zip(images, cases, outputs, strict=True)):
        try:
            ref = np.asarray(case.reference(img))
        except (TypeError, ValueError, RuntimeError, AttributeError, ImportError) as e:
            comp.skipped = f"the original library failed: {type(e).__name__}: {e}"[:300]
            return comp
        ref, dali = _common(ref, dali, item.verdict.size_slack)
        if ref.shape != dali.shape:
            comp.sizes = f"{_shape(ref)} vs {_shape(dali)}"
            comp.holds = item.verdict.kind not in ("identical", "equivalent")
            return comp
        diff = np.abs(ref.astype(np.float64) - dali.astype(np.float64))
        if case.tail is not None:
            diff *= np.asarray(case.tail["std"], dtype=np.float64) * 255
        diffs.append(diff)
        if item.verdict.measure == "noise_std":
            base = img.astype(np.float64)
            noise.append(((ref - base).std(), (dali.astype(np.float64) - base).std()))
        if k < samples:
            comp.samples.append((img, _display(ref, case), _display(dali, case),
                                 _diff_image(diff)))
    flat = np.concatenate([d.ravel() for d in diffs])
    comp.max_diff = float(flat.max())
    comp.mean_diff = float(flat.mean())
    v = item.verdict
    comp.within = float((flat <= v.levels + 1e-9).mean())
    if noise:
        comp.noise_std = (float(np.mean([a for a, _ in noise])),
                          float(np.mean([b for _, b in noise])))
    comp.holds = _holds(v, comp)
    return comp


def _holds(v: Verdict, comp: Comparison) -> bool | None:
    if v.kind == "identical":
        return comp.max_diff == 0
    if v.kind != "equivalent":
        return None
    if v.measure == "noise_std" and comp.noise_std is not None:
        return abs(comp.noise_std[0] - comp.noise_std[1]) <= v.levels
    return comp.within >= v.share


def _render_cases(cases: list[Any], engine: PreviewEngine) -> list[np.ndarray] | str:
    """DALI's output for each image's fixed case; images with the same case share a render."""
    groups: dict[str, list[int]] = {}
    for i, case in enumerate(cases):
        key = json.dumps([case.steps, case.tail], sort_keys=True)
        groups.setdefault(key, []).append(i)
    out: list[np.ndarray | None] = [None] * len(cases)
    for idx in groups.values():
        case = cases[idx[0]]
        output = None
        if case.tail is not None:
            output = {"layout": "HWC", "dtype": "float32", **case.tail}
        preset = load({"format": FORMAT, "version": VERSION, "seed": 42, "steps": case.steps,
                       "output": output})
        try:
            render = engine.render(preset, images=idx, tail=output is not None)
        except StepError as e:
            return e.detail if e.detail else str(e)
        for j, i in enumerate(idx):
            out[i] = render.images[j]
    return [o for o in out if o is not None]


def _common(a: np.ndarray, b: np.ndarray, slack: int) -> tuple[np.ndarray, np.ndarray]:
    """Both cut to their common size when the verdict allows sizes ``slack`` px apart."""
    if a.shape == b.shape or a.ndim != b.ndim or any(
            abs(x - y) > slack for x, y in zip(a.shape, b.shape, strict=True)):
        return a, b
    h, w = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
    return a[:h, :w], b[:h, :w]


def _display(a: np.ndarray, case: Any) -> np.ndarray:
    """A float (normalised) output back to 0-255 for display."""
    if case.tail is None:
        return a
    std = np.asarray(case.tail["std"], dtype=np.float32) * 255
    mean = np.asarray(case.tail["mean"], dtype=np.float32) * 255
    return np.clip(a * std + mean, 0, 255).astype(np.uint8)


def _diff_image(diff: np.ndarray) -> np.ndarray:
    d = diff.max(axis=2) if diff.ndim == 3 else diff
    g = np.clip(d * DIFF_GAIN, 0, 255).astype(np.uint8)
    return np.repeat(g[:, :, None], 3, axis=2)


def _shape(a: np.ndarray) -> str:
    return "x".join(str(s) for s in a.shape)
