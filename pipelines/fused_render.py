"""Many one-draw renders in one DALI pipeline: the gallery's rows without a pipeline each.

The gallery renders ~50 operators at 4 values each: on an H200, ~85 pipelines of a few
operators, loaded one after another (~25 ms a row warm, most of it loading and launching).
One pipeline with 24 operators side by side loaded in 11 ms and ran in 12 ms where the 24
pipelines took 20-29 ms to load and 82-130 ms to run. A fused pipeline takes the images once
and runs each preset's generated chain (:mod:`pipelines.codegen`, the module the engine builds
for it alone) as a branch of its own, with that chain's fed values under the branch's own names
and the chain's own explicit seeds: branch ``j``'s output is what ``PreviewEngine.render`` of
preset ``j`` gives, bit for bit (``tests/pipelines/test_fused_render.py`` checks every catalog
operator). Only chains that need none of what a pipeline is built for as a whole are fused: no
conditionals (``enable_conditionals`` is per pipeline), no Python operators (not serializable),
no labels, and every operator checkpointable (the RNG state is restored for the next render).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .budget import LEDGER, current
from .codegen import Chain
from .device import Device
from .fed_values import PREFIX, fed_nodes, feed, run_fed
from .kept_pipelines import KeptPipelines, OwnPipelines
from .origin_trace import lean_traces
from .pipeline_cache import load_or_build
from .preset import Preset
from .preview_pipeline import EXECUTOR, fed_arrays
from .render_budget import check_plan, hold_render, plan_render
from .render_result import Render, read_outputs
from .step_error import StepError, clean_message

if TYPE_CHECKING:
    from .engine import PreviewEngine

GRAPH = "fused-2"
"""In the cache key: how :func:`build_fused` lays the graph out (a change must not load an
entry of an older layout)."""
MAX_KEPT = 2
"""Fused pipelines kept built per engine (a gallery renders its rows in a few chunks)."""


class FusedError(StepError):
    """A fused render failed in DALI (building or running); ``ops`` are the operators of its
    presets. Each preset rendered alone names its own failing step."""

    def __init__(self, message: str, ops: Sequence[str]) -> None:
        super().__init__(message)
        self.ops = tuple(ops)


def branch_prefix(j: int) -> str:
    """Branch ``j``'s fed inputs: ``b<j>_fed_<value name>``."""
    return f"b{j}_{PREFIX}"


def fusible(chain: Chain) -> bool:
    """Whether a chain without Python operators can be a branch of a fused pipeline (see the
    module docstring)."""
    return not chain.conditionals and chain.checkpoints and chain.labels is None


def build_fused(modules: Sequence[ModuleType], seed: int, batch: int, device: Device,
                threads: int) -> Any:
    """The (unbuilt) pipeline running each module's ``augment`` on the same fed images;
    its outputs are, branch after branch, the branch's images then its records. On the GPU
    the images come back to the host inside the pipeline (``.cpu()``, DALI's dynamic
    executor): one ``as_cpu()`` a branch cost 0.85 ms on an H200, 155 ms for a gallery."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(enable_conditionals=False)
    def fused():
        fed = fn.external_source(name="images", layout="HWC", dtype=types.UINT8, no_copy=True)
        images = fed.gpu() if device == "gpu" else fed
        source = fed.shape() if any(getattr(m, "SOURCE", False) for m in modules) else None
        outputs = []
        for j, module in enumerate(modules):
            fed_nodes(module, branch_prefix(j))  # read by the augment call right after
            extra = {"source": source} if getattr(module, "SOURCE", False) else {}
            out, records = module.augment(images, seed, **extra)
            outputs += [out.cpu() if device == "gpu" else out, *records]
        return tuple(outputs)

    with lean_traces():
        return fused(batch_size=batch, num_threads=threads,
                     device_id=0 if device == "gpu" else None, seed=seed,
                     prefetch_queue_depth=1, enable_checkpointing=True, **EXECUTOR)


@dataclass
class _Fused:
    pipe: Any
    checkpoint: bytes | None
    reset: Future[None] | None = None
    """The restore of the first draw scheduled after the last render (:mod:`.rng_reset`)."""
    pixels: int = 0  # its latest render's footprint (kept_pipelines)
    busy: bool = False  # a render is using it (kept_pipelines)

    @property
    def restorable(self) -> bool:
        """Always, once built: every member's operators are checkpointed (``fusible``)."""
        return self.checkpoint is not None


@dataclass
class _Member:
    preset: Preset
    key: str | None
    code: str
    chain: Chain


class FusedRenders:
    """An engine's fused pipelines (built or loaded from its pipeline cache) and their
    renders; :meth:`PreviewEngine.render_fused` is the way in."""

    def __init__(self, engine: PreviewEngine, pool: KeptPipelines | None) -> None:
        self._own = OwnPipelines(MAX_KEPT, "fused", engine.device, engine.num_threads,
                                 engine._reset, pool, str(engine.cache.folder))

    @staticmethod
    def member(engine: PreviewEngine, source: Preset | dict | str) -> _Member | None:
        """The preset validated, with its chain; None when the chain cannot be fused."""
        preset, key = engine._memo.preset(source, engine.catalog)
        if engine._labels is not None or any(
                engine.catalog[s.op].custom or engine.catalog[s.op].unavailable_on(engine.device)
                for _, s in preset.active_ops()):
            return None
        code, chain = engine._module(preset, False, None, key)
        return _Member(preset, key, code, chain) if fusible(chain) else None

    def members(self, engine: PreviewEngine, presets: Sequence[Preset | dict | str]
                ) -> list[_Member]:
        """Every preset as a member; one that cannot be fused is refused."""
        out = []
        for source in presets:
            m = self.member(engine, source)
            if m is None:
                raise ValueError(f"{source!r} cannot be fused: it needs conditionals, a Python "
                                 "operator, labels or an operator DALI cannot checkpoint, or "
                                 "one this device cannot run")
            out.append(m)
        seeds = {m.preset.seed for m in out}
        if len(seeds) > 1:
            raise ValueError(f"fused presets must share one seed, got {sorted(seeds)}")
        return out

    def render(self, engine: PreviewEngine, presets: Sequence[Preset | dict | str],
               images: Sequence[int] | None) -> list[Render]:
        members = self.members(engine, presets)
        if not members:
            return []
        arrays = engine._arrays if images is None else [engine._arrays[i] for i in images]
        if not arrays:
            raise StepError("no images to render; add images first")
        n = len(arrays)
        pixels = self._check_budgets(engine, members, arrays)  # each, before any DALI work
        t0 = time.perf_counter()
        ops = [s.op for m in members for s in m.preset.steps]
        try:
            built, was_built = self._pipeline(engine, members, n)
        except Exception as e:  # DALI raises RuntimeError/TypeError/ValueError
            raise FusedError(f"building one pipeline of {len(members)} chains failed: "
                             f"{clean_message(str(e))}", ops) from e
        built.pixels = pixels
        feeds = dict(engine._batches.feeds(arrays, None, None if images is None
                                           else tuple(images), n))
        for j, m in enumerate(members):
            fed = engine._memo.derived(  # the same memo entry as engine.render's
                None if m.key is None else ("fed", m.key, n, tuple(m.chain.feeds)),
                lambda m=m: fed_arrays(m.preset, m.chain.feeds, n))
            feeds.update({branch_prefix(j) + name[len(PREFIX):]: t for name, t in fed.items()})
        try:
            engine._reset.before_run(built, False)
            feed(built.pipe, feeds)
            outputs = run_fed(built.pipe)
            parts, at = [], 0
            for m in members:
                width = 1 + len(m.chain.records)
                # host outputs (``build_fused``), which DALI reuses: copied as the CPU's are
                parts.append(read_outputs(outputs[at:at + width], m.chain, n, 1, "cpu"))
                at += width
            engine._reset.after_render(built, False)
            built.busy = False
        except Exception as e:
            self._own.discard(built)
            raise FusedError(f"running one pipeline of {len(members)} chains failed: "
                             f"{clean_message(str(e))}", ops) from e
        engine.renders += 1
        share = (time.perf_counter() - t0) * 1000 / len(members)
        return [Render(tiles, records, n, 1, engine.device, was_built, share)
                for tiles, records in parts]

    def close(self) -> None:
        """Let the pipelines go (to the process's pool: :mod:`.kept_pipelines`)."""
        self._own.close()

    # ---- internals ----------------------------------------------------------------------------

    @staticmethod
    def _check_budgets(engine: PreviewEngine, members: list[_Member], arrays: list[Any]) -> int:
        """Each member's plan against the budgets, the members before it counted as held
        (their outputs live together); the sum becomes the engine's render in the ledger."""
        budget = current()
        held = LEDGER.held(excluding=engine)
        shapes = tuple(a.shape for a in arrays)
        total, work = 0, 0.0
        for m in members:
            plan = engine._memo.derived(
                None if m.key is None else ("plan", m.key, shapes, 1, False),
                lambda m=m: plan_render(m.preset, [s[:2] for s in shapes], 1,
                                        catalog=engine.catalog))
            check_plan(plan, budget, held=held + total, device=engine.device,
                       work_before=work)
            assert plan.passed is not None
            total += plan.passed[1]
            work += plan.work
        hold_render(engine, total, held, budget)  # kept pipelines make room
        return total

    def _pipeline(self, engine: PreviewEngine, members: list[_Member],
                  batch: int) -> tuple[_Fused, bool]:
        seed = members[0].preset.seed
        codes = tuple(m.code for m in members)
        key = (codes, seed, batch)
        found = self._own.get(key)
        if found is not None:
            engine.kept_hits += found[1]
            return found[0], False
        cache_key = (engine.cache.key(GRAPH, codes, seed, batch, engine.device)
                     if engine.cache.enabled else None)
        pipe, checkpoint, loaded = load_or_build(
            engine.cache, cache_key, engine.device, engine.num_threads,
            lambda: build_fused([engine._modules.load(code)[0] for code in codes], seed, batch,
                                engine.device, engine.num_threads), True)
        engine.cache_hits += loaded
        engine.builds += 1
        built = _Fused(pipe, checkpoint)
        self._own.add(key, built)
        return built, True
