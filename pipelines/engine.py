"""The live preview engine: one real DALI pipeline per chain structure, fed by name.

Built for sliders. The chain is generated in preview mode, so every run-time value is an
``external_source`` feed: moving such a slider feeds new numbers into the same built pipeline.
Its random nodes all have explicit seeds and the pipeline's RNG state is restored from a
checkpoint taken right after the build before every render (on a worker as soon as the last
render is done: :mod:`pipelines.rng_reset`), so a render shows the same draw until the seed
changes: moving one slider changes only that operator's effect.

A render of N images x K draws is one batch of N*K samples; sample ``d*N + i`` is draw ``d`` of
image ``i``, so draw 0 is exactly the first batch of the exported pipeline on the same images.
The pipeline itself is made in :mod:`pipelines.preview_pipeline`, its outputs are read in
:mod:`pipelines.render_result`, and a failure names its step (:mod:`pipelines.step_error`).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .catalog import CATALOG, Catalog
from .codegen import Chain, preview_module
from .custom_budget import check_custom_time
from .custom_probe import warm_custom
from .device import Device, resolve
from .display import encode_tiles
from .fed_values import feed, run_fed
from .fused_render import FusedRenders
from .input_batches import InputBatches
from .kept_pipelines import KEPT, OwnPipelines
from .label_code import LabelSet, refusals
from .label_render import SampleLabels, label_set, read_labels
from .labels import DEFAULT_MIN_KEPT
from .mask_fit import fit_masks
from .pipeline_cache import PipelineCache, load_or_build
from .preset import Preset, Step
from .preview_pipeline import LABEL_INPUTS, ChainModules, build_pipeline, decode_mixed, fed_arrays
from .render_budget import check_render, plan_render
from .render_memo import RenderMemo
from .render_result import Render, SampleRecord, read_outputs
from .rng_reset import RngReset
from .step_error import StepError, name_step
from .sweep_render import render_sweep
from .trace_ahead import TraceAhead, trace_jobs, trace_keys

__all__ = ["MAX_BATCH", "PreviewEngine", "Render", "SampleRecord", "StepError"]

MAX_BATCH = 256
_CACHE_SIZE = 3
_log = logging.getLogger(__name__)


@dataclass
class _Built:
    pipe: Any
    checkpoint: bytes | None
    chain: Chain
    module_path: Path
    runs: int = 0
    reset: Future[None] | None = None
    """The restore of the first draw scheduled after the last render (:mod:`.rng_reset`)."""
    pixels: int = 0  # its latest render's footprint (kept_pipelines)
    busy: bool = False  # a render is using it (kept_pipelines)

    @property
    def restorable(self) -> bool:
        """Whether its next render can start from the first draw: a checkpoint to restore, or
        no random draws at all (else it is built again, and never kept)."""
        return self.checkpoint is not None or not self.chain.random


class PreviewEngine:
    """Renders presets on a set of images through real DALI pipelines.

    ``device``: "auto" (GPU when DALI sees one), "cpu" (``device_id=None``, CPU operators) or
    "gpu" (mixed decoding and GPU operators; outputs are copied to host at the end only).
    ``cache``: where built pipelines are kept between kernels (default: ``PipelineCache.default``,
    see :mod:`pipelines.pipeline_cache`). ``builds`` counts pipelines made, ``cache_hits`` those
    of them loaded from the cache instead of traced; ``kept_hits`` pipelines taken built from
    the process's pool (:mod:`pipelines.kept_pipelines`), which ``keep=False`` leaves alone.
    """

    def __init__(self, device: str = "auto", num_threads: int | None = None,
                 catalog: Catalog = CATALOG, cache: PipelineCache | None = None,
                 keep: bool = True) -> None:
        self.device: Device = resolve(device)
        self.num_threads = num_threads or max(1, min(os.cpu_count() or 1, 8))
        self.catalog = catalog
        self.cache = cache if cache is not None else PipelineCache.default()
        self.builds = 0
        self.cache_hits = 0
        self.kept_hits = 0
        self.renders = 0
        self.names: list[str] = []
        self._arrays: list[np.ndarray] = []
        self._labels: list[SampleLabels] | None = None
        self.min_kept = DEFAULT_MIN_KEPT
        self.labels_after_run = True  # boxes move after the run where they can (codegen)
        """Boxes keeping less of their area than this after a moving step are dropped."""
        self._dir = Path(tempfile.mkdtemp(prefix="dali-gallery-"))
        self._modules = ChainModules(self._dir)
        self._memo = RenderMemo()
        self._batches = InputBatches()
        self._ahead: TraceAhead | None = None
        self._reset = RngReset()
        pool = KEPT if keep else None
        self._own = OwnPipelines(_CACHE_SIZE, "chain", self.device, self.num_threads,
                                 self._reset, pool, str(self.cache.folder))
        self._fused = FusedRenders(self, pool)

    # ---- images -------------------------------------------------------------------------------

    def set_images(self, sources: Any, *, max_side: int | None = None,
                   root: Path | None = None) -> list[Any]:
        """Load images (folder, paths or bytes), decoded by DALI; returns the problems found
        (bad files are skipped, the rest are kept)."""
        from .images import collect, decode

        encoded, problems = collect(sources, root=root)
        arrays, good, bad = decode(encoded, max_side=max_side, num_threads=self.num_threads)
        problems = list(problems) + list(bad)
        if self.device == "gpu":
            arrays = decode_mixed([g.data for g in good], arrays, max_side, self.num_threads)
        self.set_arrays(arrays, [g.name for g in good])
        return problems

    def set_arrays(self, arrays: Sequence[np.ndarray], names: Sequence[str] | None = None) -> None:
        """Use already decoded HWC uint8 RGB images (e.g. from a previous engine)."""
        for i, a in enumerate(arrays):
            if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
                raise ValueError(f"image {i}: expected an HxWx3 uint8 array, got "
                                 f"{a.dtype} {a.shape}")
        self._arrays = [np.ascontiguousarray(a) for a in arrays]
        self.names = list(names) if names is not None else [f"image {i}" for i in
                                                            range(len(arrays))]
        self._labels = None
        self._batches.clear()

    def set_labels(self, labels: Sequence[SampleLabels] | None) -> None:
        """The labels of the current images, one entry per image in order (None: none).
        Renders then move them with the pixels and return them (``Render.labels``)."""
        if labels is not None and len(labels) != len(self._arrays):
            raise ValueError(f"{len(labels)} label sets for {len(self._arrays)} images")
        # masks at their images' size: renders feed them as they are (pipelines.mask_fit)
        self._labels = None if labels is None else fit_masks(
            [a.shape for a in self._arrays], labels, self.num_threads)
        self._batches.clear()

    @property
    def labels(self) -> list[SampleLabels] | None:
        return list(self._labels) if self._labels is not None else None

    @property
    def images(self) -> list[np.ndarray]:
        return list(self._arrays)

    # ---- rendering ----------------------------------------------------------------------------

    def render(self, preset: Preset | dict | str, draws: int = 1, *, tail: bool = False,
               images: Sequence[int] | None = None, encode: str | None = None,
               quality: int = 85, advance: bool = False, stream: bool = False,
               _override: dict[str, np.ndarray] | None = None) -> Render:
        """Render ``draws`` independent draws of every image (or of the chosen ones).

        ``encode="jpeg"`` (or ``"png"``) also returns each tile as encoded bytes for display:
        on the GPU one nvImageCodec batch of the host copies (its CPU codecs, :mod:`.display`).
        ``advance=True`` goes on from the random state the pipeline's previous render left
        instead of restarting it: the next batch of the same stream, from the same build
        (the distribution view collects hundreds of draws this way); the render before it
        passes ``stream=True`` to keep that state (others restore the first draw when done)."""
        # validates a Preset built in code too (once per document: see render_memo)
        preset, key = self._memo.preset(preset, self.catalog)
        arrays = self._arrays if images is None else [self._arrays[i] for i in images]
        labels = None
        if self._labels is not None:
            labels = self._labels if images is None else [self._labels[i] for i in images]
        if not arrays:
            raise StepError("no images to render; add images first")
        if not 1 <= draws <= MAX_BATCH:
            raise StepError(f"draws {draws} is not allowed; expected 1 to {MAX_BATCH}")
        n = len(arrays)
        batch = n * draws
        if batch > MAX_BATCH:
            raise StepError(f"{n} images x {draws} draws = {batch} samples; at most "
                            f"{MAX_BATCH} per render")
        self._check_devices(preset)
        chain_labels = None
        if labels is not None:
            for refused in refusals(preset, self.catalog)[:1]:
                raise StepError(refused.detail, refused.step, refused.op)
            chain_labels = label_set(labels, self.min_kept)
        sized = None if key is None or _override else (key, tuple(a.shape for a in arrays),
                                                         draws, tail)
        self._memo.derived(  # Python operators' time, before DALI runs
            None if sized is None else ("custom time", *sized),
            lambda: check_custom_time(preset, arrays, draws, overrides=_override,
                                      catalog=self.catalog))
        plan = self._memo.derived(
            None if sized is None else ("plan", *sized),
            lambda: plan_render(preset, [a.shape[:2] for a in arrays], draws,
                                tail=tail, overrides=_override, catalog=self.catalog))
        check_render(self, preset, arrays, draws, tail=tail, overrides=_override,
                     catalog=self.catalog, plan=plan)  # pixel budgets, before any DALI work
        t0 = time.perf_counter()
        built, was_built = self._pipeline(preset, batch, tail, chain_labels, key)
        if not built.restorable and built.runs > 0 and not advance:  # fresh RNG: built again
            self._own.discard(built)
            built, was_built = self._pipeline(preset, batch, tail, chain_labels, key)
        built.pixels = plan.passed[1]  # check_render set it
        try:  # refused before DALI runs it: the pipeline is as it was, free to keep
            feeds: dict[str, Any] = dict(self._memo.derived(  # once per document and batch
                None if sized is None else ("fed", key, batch, tuple(built.chain.feeds)),
                lambda: fed_arrays(preset, built.chain.feeds, batch, _override)))
            graph = built.chain.labels  # the labels the graph reads (after the run: masks)
            feeds.update(self._batches.feeds(  # made once per image set (input_batches)
                arrays, labels if graph is not None else None,
                None if images is None else tuple(images), batch,
                graph.graph_names if graph else ()))
            if advance:
                self._reset.check_advance(built)
        except BaseException:
            built.busy = False
            raise
        built.runs += 1
        try:
            self._reset.before_run(built, advance)
            feed(built.pipe, feeds)
            outputs = run_fed(built.pipe)
            moved = None  # the labels first: their Python may overlap the GPU's work
            if labels is not None and chain_labels is not None:
                moved = read_labels(outputs, built.chain, 1 + len(built.chain.records), labels,
                                    chain_labels.min_kept)
            result = read_outputs(outputs, built.chain, n, draws, self.device)
            t_enc = time.perf_counter()
            encoded = (encode_tiles(result[0], encode, quality, batch=self.device == "gpu")
                       if encode else None)
            encode_ms = (time.perf_counter() - t_enc) * 1000
            self._reset.after_render(built, stream)
            built.busy = False
        except Exception as e:  # DALI raises RuntimeError/TypeError/ValueError: name the step
            self._own.discard(built)
            raise name_step(e, built.module_path, built.chain, preset) from e
        self.renders += 1
        ms = (time.perf_counter() - t0) * 1000
        images_out, records = result
        return Render(images_out, records, n, draws, self.device, was_built, ms, encoded,
                      encode_ms, moved)

    def render_sweep(self, step: Step, param: str, values: Sequence[Any], *, seed: int = 42,
                     images: Sequence[int] | None = None) -> Render:
        """One step at several values of one parameter: ``tile(i, k)`` is image i at
        ``values[k]`` (:func:`.sweep_render.render_sweep`)."""
        return render_sweep(self, step, param, values, seed, images)

    def render_fused(self, presets: Sequence[Preset | dict | str], *,
                     images: Sequence[int] | None = None) -> list[Render]:
        """The first draw of each preset, as :meth:`render` gives it, from one DALI pipeline
        that runs their chains side by side (:mod:`.fused_render`: no conditionals, Python
        operators or labels). A DALI failure raises ``FusedError``: render them alone."""
        return self._fused.render(self, presets, images)

    def fusible(self, preset: Preset | dict | str) -> bool:
        """Whether ``preset`` can be one of :meth:`render_fused`'s presets here."""
        return self._fused.member(self, preset) is not None

    def trace_ahead(self, renders: Sequence[tuple[Preset, int]],
                    workers: int | None = None) -> int:
        """Start tracing, in worker processes, the pipelines of these future renders
        (``(preset, draws)`` on all current images) whose tracing is slow (DALI's
        conditionals: the auto_aug policies) and that the cache lacks; a later render of one
        waits for its worker and loads it from the cache (:mod:`.trace_ahead`). Chains with
        Python operators or labels are not cached, so not traced ahead. Returns how many
        were started."""
        if not (jobs := trace_jobs(self, renders)):
            return 0
        self._ahead = self._ahead or TraceAhead(workers)
        return self._ahead.start(jobs)

    def tracing(self, renders: Sequence[tuple[Preset, int]]) -> bool:
        """Whether a worker is still tracing a pipeline of these renders (see
        :meth:`trace_ahead`): rendering one now would wait for it."""
        return self._ahead is not None and any(
            map(self._ahead.pending, trace_keys(self, renders)))

    def warm_custom(self, ops: Sequence[str]) -> list[str]:
        """Warm these custom operators' CuPy kernels (:func:`.custom_probe.warm_custom`)."""
        return warm_custom(self.device, [self.catalog[op] for op in ops])

    def code(self, preset: Preset, tail: bool = False) -> str:
        """The preview module source (what the engine builds; handy for debugging)."""
        return preview_module(preset, tail=tail, catalog=self.catalog)[0]

    def settle(self) -> None:
        """Wait for the work the last renders left to a worker (:mod:`.rng_reset`)."""
        self._reset.settle()

    def close(self) -> None:
        """Release pipelines (and the GPU memory pools DALI keeps) and temporary files."""
        self._fused.close()  # to the process's pool where they may go (kept_pipelines)
        self._own.close()
        self._reset.close()
        if self._ahead is not None:
            self._ahead.close()
        if self.device == "gpu":
            from nvidia.dali import backend

            backend.ReleaseUnusedMemory()
        self._modules.clear()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __del__(self) -> None:
        shutil.rmtree(getattr(self, "_dir", ""), ignore_errors=True)

    # ---- internals ----------------------------------------------------------------------------

    def _check_devices(self, preset: Preset) -> None:
        for i, step in preset.active_ops():
            why = self.catalog[step.op].unavailable_on(self.device)
            if why is not None:
                raise StepError(f"{why}: it is kept in the pipeline and exported, but cannot be "
                                "previewed here (disable it to preview the rest)", i, step.op)

    def _module(self, preset: Preset, tail: bool, labels: LabelSet | None,
                doc_key: str | None) -> tuple[str, Chain]:
        """The preview module's source and chain, once per preset document (``doc_key``)."""
        after_run = self.labels_after_run
        return self._memo.derived(
            None if doc_key is None else ("module", doc_key, tail, labels, after_run),
            lambda: preview_module(preset, tail=tail and preset.output is not None,
                                   catalog=self.catalog, labels=labels, after_run=after_run))

    def _cache_key(self, code: str, preset: Preset, batch: int, tail: bool,
                   chain: Chain) -> str | None:
        """The cache's key; None with a Python operator (custom, labels' step): not saved."""
        if not self.cache.enabled or self._python_ops(preset, chain):
            return None
        labels = chain.labels
        return self.cache.key(code, preset.seed, batch, self.device, tail and preset.output
                              is not None, chain.conditionals,
                              *([labels, LABEL_INPUTS] if labels else []))

    def _python_ops(self, preset: Preset, chain: Chain) -> bool:
        """Whether the pipeline runs Python (custom operators, labels moved in the graph):
        DALI cannot serialize it (the pipeline cache cannot keep it)."""
        labels = chain.labels
        return (any(self.catalog[s.op].custom for _, s in preset.active_ops())
                or (labels is not None and not labels.after_run))

    def _pipeline(self, preset: Preset, batch: int, tail: bool,
                  labels: LabelSet | None = None,
                  doc_key: str | None = None) -> tuple[_Built, bool]:
        code, chain = self._module(preset, tail, labels, doc_key)
        key = (code, preset.seed, batch, tail)
        found = self._own.get(key)
        if found is not None:
            built, taken = found
            if taken:  # built by another engine: this one's chain (the same code)
                built.chain = chain
                self.kept_hits += 1
            return built, False
        module, path = self._modules.load(code)
        try:
            pipe, checkpoint = self._build_fresh(module, preset, batch, tail, chain, code)
        except Exception as e:  # a build failure names the step it came from
            raise name_step(e, path, chain, preset) from e
        self.builds += 1
        built = _Built(pipe, checkpoint, chain, path)
        self._own.add(key, built)  # kept when restorable (Python operators too: the module,
        # the key's code, carries their functions' source)
        return built, True

    def _build_fresh(self, module: Any, preset: Preset, batch: int, tail: bool,
                     chain: Chain, code: str) -> tuple[Any, bytes | None]:
        """Load the pipeline from the cache or trace it, and checkpoint it. A chain with an
        operator DALI cannot checkpoint (``OpSpec.checkpoints``) is built without: the engine
        then rebuilds before each render instead of restoring the RNG state. Custom Python
        operators cannot be serialized, so chains with one are always traced."""
        key = self._cache_key(code, preset, batch, tail, chain)
        tail = tail and preset.output is not None
        if key is not None and self._ahead is not None:  # a worker tracing it: wait for it
            self._ahead.wait(key)
        pipe, checkpoint, loaded = load_or_build(
            self.cache, key, self.device, self.num_threads,
            lambda: build_pipeline(module, preset.seed, batch, self.device, self.num_threads,
                                   tail, chain.checkpoints, chain.conditionals, chain.labels),
            chain.checkpoints)
        self.cache_hits += loaded
        return pipe, checkpoint

