"""The live preview engine: one real DALI pipeline per chain structure, fed by name.

Built for sliders. The chain is generated in preview mode, so every run-time value is an
``external_source`` feed: moving such a slider feeds new numbers into the same built pipeline.
Its random nodes all have explicit seeds and the pipeline's RNG state is restored from a
checkpoint taken right after the build before every render, so a render shows the same draw
until the seed changes: moving one slider changes only that operator's effect.

A render of N images x K draws is one batch of N*K samples; sample ``d*N + i`` is draw ``d`` of
image ``i``, so draw 0 is exactly the first batch of the exported pipeline on the same images.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import re
import shutil
import sys
import tempfile
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .catalog import CATALOG, Catalog
from .codegen import Chain, Feed, preview_module
from .device import Device, resolve
from .pipeline_cache import PipelineCache
from .preset import Preset, Step, Uniform, load

MAX_BATCH = 256
_CACHE_SIZE = 3
_EXECUTOR = {"exec_pipelined": True, "exec_async": True, "exec_dynamic": True}
"""DALI's executor for every preview pipeline, traced or loaded from the cache alike (a loaded
pipeline otherwise gets the old executor, whose RNG state cannot be restored after a run)."""
_log = logging.getLogger(__name__)


class StepError(RuntimeError):
    """A render failed; ``step``/``op`` name the step that caused it when that is known."""

    def __init__(self, message: str, step: int | None = None, op: str | None = None) -> None:
        self.step = step
        self.op = op
        self.detail = message
        where = f"step {step} ({op}): " if step is not None else ""
        super().__init__(where + message)


@dataclass
class SampleRecord:
    """What happened to one output sample, read from the pipeline's own outputs."""

    image: int
    draw: int
    fired: dict[int, bool] = field(default_factory=dict)
    values: dict[int, dict[str, float | int]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "image": self.image,
            "draw": self.draw,
            "fired": {str(k): v for k, v in self.fired.items()},
            "values": {str(k): v for k, v in self.values.items()},
        }


@dataclass
class Render:
    """The outputs of one render: ``images[d * n_images + i]`` is draw d of image i."""

    images: list[np.ndarray]
    records: list[SampleRecord]
    n_images: int
    draws: int
    device: Device
    built: bool
    ms: float
    encoded: list[bytes] | None = None
    encode_ms: float = 0.0

    def tile(self, image: int, draw: int) -> np.ndarray:
        return self.images[draw * self.n_images + image]

    def record(self, image: int, draw: int) -> SampleRecord:
        return self.records[draw * self.n_images + image]

    def first_draw(self) -> list[np.ndarray]:
        return self.images[: self.n_images]


@dataclass
class _Built:
    pipe: Any
    checkpoint: bytes | None
    chain: Chain
    module_path: Path
    step_of_line: list[tuple[int, int]]
    runs: int = 0


class PreviewEngine:
    """Renders presets on a set of images through real DALI pipelines.

    ``device``: "auto" (GPU when DALI sees one), "cpu" (``device_id=None``, CPU operators) or
    "gpu" (mixed decoding and GPU operators; outputs are copied to host at the end only).
    ``cache``: where built pipelines are kept between kernels (default: ``PipelineCache.default``,
    see :mod:`pipelines.pipeline_cache`). ``builds`` counts pipelines made, ``cache_hits`` those
    of them loaded from the cache instead of traced.
    """

    def __init__(self, device: str = "auto", num_threads: int | None = None,
                 catalog: Catalog = CATALOG, cache: PipelineCache | None = None) -> None:
        self.device: Device = resolve(device)
        self.num_threads = num_threads or max(1, min(os.cpu_count() or 1, 8))
        self.catalog = catalog
        self.cache = cache if cache is not None else PipelineCache.default()
        self.builds = 0
        self.cache_hits = 0
        self.renders = 0
        self.names: list[str] = []
        self._arrays: list[np.ndarray] = []
        self._pipes: OrderedDict[tuple[Any, ...], _Built] = OrderedDict()
        self._modules: dict[str, tuple[ModuleType, Path]] = {}
        self._dir = Path(tempfile.mkdtemp(prefix="dali-gallery-"))

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
            arrays = _decode_mixed([g.data for g in good], arrays, max_side, self.num_threads)
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

    @property
    def images(self) -> list[np.ndarray]:
        return list(self._arrays)

    # ---- rendering ----------------------------------------------------------------------------

    def render(self, preset: Preset | dict | str, draws: int = 1, *, tail: bool = False,
               images: Sequence[int] | None = None, encode: str | None = None,
               quality: int = 85, _override: dict[str, np.ndarray] | None = None) -> Render:
        """Render ``draws`` independent draws of every image (or of the chosen ones).

        ``encode="jpeg"`` (or ``"png"``) also returns each tile as encoded bytes for display:
        on the GPU nvImageCodec encodes straight from device memory (no host round trip)."""
        preset = preset if isinstance(preset, Preset) else load(preset, self.catalog)
        arrays = self._arrays if images is None else [self._arrays[i] for i in images]
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
        t0 = time.perf_counter()
        built, was_built = self._pipeline(preset, batch, tail)
        if built.checkpoint is None and built.runs > 0:  # no checkpoint: fresh RNG state
            self._discard(built)
            built, was_built = self._pipeline(preset, batch, tail)
        built.runs += 1
        feeds = _feed_values(preset, built.chain.feeds, batch)
        for name, vals in (_override or {}).items():
            feeds[name] = vals.astype(feeds[name].dtype)
        feeds["images"] = [arrays[j % n] for j in range(batch)]
        try:
            if built.checkpoint is not None:
                built.pipe._pipe.RestoreFromSerializedCheckpoint(built.checkpoint)
            outputs = built.pipe.run(**feeds)
            result = self._collect(outputs, built.chain, n, draws)
            t_enc = time.perf_counter()
            encoded = _encode(outputs[0], result[0], encode, quality) if encode else None
            encode_ms = (time.perf_counter() - t_enc) * 1000
        except Exception as e:  # DALI raises RuntimeError/TypeError/ValueError: name the step
            self._discard(built)
            raise self._step_error(e, built, preset) from e
        self.renders += 1
        ms = (time.perf_counter() - t0) * 1000
        images_out, records = result
        return Render(images_out, records, n, draws, self.device, was_built, ms, encoded,
                      encode_ms)

    def render_sweep(self, step: Step, param: str, values: Sequence[Any], *, seed: int = 42,
                     images: Sequence[int] | None = None) -> Render:
        """One step at several values of one parameter: ``tile(i, k)`` is image i at
        ``values[k]``. A run-time parameter is fed per sample into one pipeline (one run for
        the whole row); a build-time one costs one pipeline per value."""
        spec = self.catalog[step.op]
        p = spec.param(param)
        base = Step(step.op, dict(step.params), 1.0, True)
        if not p.runtime or p.kind not in ("float", "int", "bool"):
            parts = []
            for v in values:
                base.params[param] = v
                parts.append(self.render(Preset([base], seed=seed), images=images))
            return _stack_renders(parts)
        base.params[param] = values[0]
        preset = Preset([base], seed=seed)
        arrays = self._arrays if images is None else [self._arrays[i] for i in images]
        n, k = len(arrays), len(values)
        per_sample = np.repeat(np.asarray(values, dtype=np.float64), n)
        return self.render(preset, draws=k, images=images,
                           _override={f"s0_{param}": per_sample})

    def code(self, preset: Preset, tail: bool = False) -> str:
        """The preview module source (what the engine builds; handy for debugging)."""
        return preview_module(preset, tail=tail, catalog=self.catalog)[0]

    def close(self) -> None:
        """Release pipelines (and the GPU memory pools DALI keeps) and temporary files."""
        self._pipes.clear()
        if self.device == "gpu":
            from nvidia.dali import backend

            backend.ReleaseUnusedMemory()
        for name in [m for m in sys.modules if m.startswith("dali_gallery_chain_")]:
            del sys.modules[name]
        self._modules.clear()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __del__(self) -> None:
        shutil.rmtree(getattr(self, "_dir", ""), ignore_errors=True)

    # ---- internals ----------------------------------------------------------------------------

    def _check_devices(self, preset: Preset) -> None:
        for i, step in preset.active_steps():
            spec = self.catalog[step.op]
            if self.device not in spec.devices:
                why = spec.gpu_reason or f"DALI implements it only on {sorted(spec.devices)}"
                raise StepError(f"unavailable on this machine's {self.device.upper()}: {why}; "
                                "it is kept in the pipeline and exported, but cannot be "
                                "previewed here (disable it to preview the rest)", i, step.op)

    def _pipeline(self, preset: Preset, batch: int, tail: bool) -> tuple[_Built, bool]:
        code, chain = preview_module(preset, tail=tail and preset.output is not None,
                                     catalog=self.catalog)
        key = (code, preset.seed, batch, tail)
        if key in self._pipes:
            self._pipes.move_to_end(key)
            return self._pipes[key], False
        module, path = self._module(code)
        try:
            pipe, checkpoint = self._build_fresh(module, preset, batch, tail, chain, code)
        except Exception as e:  # a build failure names the step it came from
            raise self._step_error(e, _Built(None, b"", chain, path, _step_lines(code)),
                                   preset) from e
        self.builds += 1
        built = _Built(pipe, checkpoint, chain, path, _step_lines(code))
        self._pipes[key] = built
        while len(self._pipes) > _CACHE_SIZE:
            self._pipes.popitem(last=False)
        return built, True

    def _build_fresh(self, module: ModuleType, preset: Preset, batch: int, tail: bool,
                     chain: Chain, code: str) -> tuple[Any, bytes | None]:
        """Load the pipeline from the cache or trace it, and checkpoint it. A few operators
        (clahe) cannot be checkpointed: the engine then rebuilds before each render instead of
        restoring the RNG state. Custom Python operators cannot be serialized, so chains with
        one are always traced."""
        tail = tail and preset.output is not None
        custom = any(self.catalog[s.op].custom for _, s in preset.active_steps())
        key = None
        if self.cache.enabled and not custom:
            key = self.cache.key(code, preset.seed, batch, self.device, tail, chain.conditionals)
            loaded = self._from_cache(key)
            if loaded is not None:
                return loaded
        try:
            pipe = _build(module, preset.seed, batch, self.device, self.num_threads, tail, True,
                          chain.conditionals)
            pipe.build()
            checkpoint = pipe.checkpoint()
        except RuntimeError as e:
            if "Checkpointing is not implemented" not in str(e):
                raise
            pipe = _build(module, preset.seed, batch, self.device, self.num_threads, tail, False,
                          chain.conditionals)
            pipe.build()
            checkpoint = None
        if key is not None:
            self.cache.store(key, pipe.serialize(), checkpoint is not None)
        return pipe, checkpoint

    def _from_cache(self, key: str) -> tuple[Any, bytes | None] | None:
        entry = self.cache.load(key)
        if entry is None:
            return None
        from nvidia.dali import Pipeline

        blob, checkpointing = entry
        try:
            pipe = Pipeline.deserialize(
                serialized_pipeline=blob, device_id=0 if self.device == "gpu" else None,
                num_threads=self.num_threads, prefetch_queue_depth=1,
                enable_checkpointing=checkpointing, **_EXECUTOR)
            pipe.build()
            checkpoint = pipe.checkpoint() if checkpointing else None
        except RuntimeError as e:  # a damaged or foreign entry: trace the pipeline instead
            _log.warning("pipeline cache: entry %s could not be loaded (%s); rebuilding", key,
                         str(e).splitlines()[0] if str(e) else type(e).__name__)
            self.cache.discard(key)
            return None
        self.cache_hits += 1
        return pipe, checkpoint

    def _module(self, code: str) -> tuple[ModuleType, Path]:
        digest = hashlib.sha1(code.encode()).hexdigest()[:16]
        if digest in self._modules:
            return self._modules[digest]
        name = f"dali_gallery_chain_{digest}"
        path = self._dir / f"{name}.py"
        path.write_text(code, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # autograph needs to find the source
        spec.loader.exec_module(module)
        self._modules[digest] = (module, path)
        return module, path

    def _discard(self, built: _Built) -> None:
        for key, value in list(self._pipes.items()):
            if value is built:
                del self._pipes[key]

    def _collect(self, outputs: Any, chain: Chain, n: int, draws: int) -> tuple[
            list[np.ndarray], list[SampleRecord]]:
        images = outputs[0]
        if self.device == "gpu":
            images = images.as_cpu()
        arrays = _host_copies(images)
        recs = [SampleRecord(j % n, j // n) for j in range(n * draws)]
        for r, out in zip(chain.records, outputs[1:], strict=True):
            vals = np.array(out.as_array()).reshape(n * draws, -1)[:, 0].tolist()
            for j, v in enumerate(vals):
                if r.param == "fired":
                    recs[j].fired[r.step] = bool(v)
                else:
                    recs[j].values.setdefault(r.step, {})[r.param] = v
        return arrays, recs

    def _step_error(self, e: BaseException, built: _Built, preset: Preset) -> StepError:
        text = str(e)
        step = None
        path = re.escape(built.module_path.name)
        for m in re.finditer(path + r'", line (\d+)', text):
            step = _line_to_step(built.step_of_line, int(m.group(1)))
        op = preset.steps[step].op if step is not None else None
        return StepError(_clean(text), step, op)


def _host_copies(tl: Any) -> list[np.ndarray]:
    """Own copies of every sample (DALI reuses its output buffers on the next run); one copy
    for a batch of equal shapes, else one per sample."""
    if tl.is_dense_tensor():
        return list(np.array(tl.as_array()))
    return [np.array(tl[j]) for j in range(len(tl))]


def _encode(raw: Any, arrays: list[np.ndarray], fmt: str, quality: int) -> list[bytes]:
    """Display bytes of each tile: nvImageCodec on GPU outputs, Pillow on host arrays."""
    if fmt not in ("jpeg", "png"):
        raise ValueError(f"encode {fmt!r} is not allowed; expected 'jpeg' or 'png'")
    from nvidia.dali.backend import TensorListGPU

    hwc_uint8 = bool(arrays) and arrays[0].ndim == 3 and arrays[0].shape[-1] == 3 \
        and arrays[0].dtype == np.uint8
    if isinstance(raw, TensorListGPU) and hwc_uint8 and _nvimgcodec() is not None:
        nvimgcodec = _nvimgcodec()
        imgs = [nvimgcodec.as_image(raw[j]) for j in range(len(raw))]
        params = nvimgcodec.EncodeParams(quality_value=quality) if fmt == "jpeg" else None
        out = _encoder().encode(imgs, fmt, params=params)
        if all(o is not None for o in out):
            return [bytes(o) for o in out]
    from io import BytesIO

    from PIL import Image

    from .grid import to_display

    result = []
    for a in arrays:
        buf = BytesIO()
        img = Image.fromarray(to_display(a))
        if fmt == "jpeg":
            img.save(buf, "JPEG", quality=quality)
        else:
            img.save(buf, "PNG", compress_level=1)
        result.append(buf.getvalue())
    return result


_CODEC: dict[str, Any] = {}


def _nvimgcodec() -> Any:
    if "module" not in _CODEC:
        try:
            from nvidia import nvimgcodec
        except ImportError:
            nvimgcodec = None
        _CODEC["module"] = nvimgcodec
    return _CODEC["module"]


def _encoder() -> Any:
    if "encoder" not in _CODEC:
        _CODEC["encoder"] = _nvimgcodec().Encoder()
    return _CODEC["encoder"]


def _stack_renders(parts: list[Render]) -> Render:
    """Renders of one draw each, as the draws of one render."""
    first = parts[0]
    images = [img for r in parts for img in r.images]
    records = []
    for d, r in enumerate(parts):
        for rec in r.records:
            records.append(SampleRecord(rec.image, d, rec.fired, rec.values))
    return Render(images, records, first.n_images, len(parts), first.device,
                  any(r.built for r in parts), sum(r.ms for r in parts))


def _build(module: ModuleType, seed: int, batch: int, device: Device, threads: int,
           tail: bool, checkpointing: bool, conditionals: bool) -> Any:
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(enable_conditionals=conditionals)
    def preview():
        images = fn.external_source(name="images", layout="HWC", dtype=types.UINT8)
        if device == "gpu":
            images = images.gpu()
        images, records = module.augment(images, seed)
        if tail:
            images = module.finish(images, seed)
        return (images, *records)

    return preview(
        batch_size=batch,
        num_threads=threads,
        device_id=0 if device == "gpu" else None,
        seed=seed,
        prefetch_queue_depth=1,
        enable_checkpointing=checkpointing,
        **_EXECUTOR,
    )


def _feed_values(preset: Preset, feeds: list[Feed], batch: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in feeds:
        step = preset.steps[f.step]
        dtype = np.float32 if f.dtype == "FLOAT" else np.int32
        if f.kind == "probability":
            out[f.name] = np.full(batch, step.probability, dtype=np.float32)
        elif f.kind == "range":
            u = step.params[f.param]
            assert isinstance(u, Uniform)
            out[f.name] = np.tile(np.array([u.lo, u.hi], dtype=np.float32), (batch, 1))
        else:
            out[f.name] = np.full(batch, step.params[f.param], dtype=dtype)
    return out


def _step_lines(code: str) -> list[tuple[int, int]]:
    """(first line, step index) of each step block in the generated module."""
    marks = []
    for lineno, line in enumerate(code.splitlines(), start=1):
        m = re.match(r"\s*# step (\d+):", line)
        if m:
            marks.append((lineno, int(m.group(1))))
    return marks


def _line_to_step(marks: list[tuple[int, int]], line: int) -> int | None:
    step = None
    for start, i in marks:
        if line >= start:
            step = i
    return step


_NOISE = re.compile(r"(Current pipeline object is no longer valid\.|C\+\+ context: \[[^\]]*\]\s*)")


def _clean(text: str) -> str:
    """DALI's message without the C++ context and the generated file's traceback."""
    m = re.search(r"encountered:\s*(.*)", text, re.S)
    msg = m.group(1) if m else text
    msg = _NOISE.sub("", msg)
    msg = re.sub(r"\s+", " ", msg).strip()
    return msg[:600]


def _decode_mixed(data: list[bytes], cpu_arrays: list[np.ndarray], max_side: int | None,
                  threads: int) -> list[np.ndarray]:
    """Decode again with the GPU ("mixed") decoder, as the exported GPU pipeline does, so the
    GPU preview starts from the same pixels as training. Sizes follow the CPU decode."""
    if not data:
        return []
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=1, num_threads=threads, device_id=0, prefetch_queue_depth=1)
    def decode_gpu():
        enc = fn.external_source(name="enc", dtype=types.UINT8)
        img = fn.decoders.image(enc, device="mixed", output_type=types.RGB)
        size = fn.external_source(name="size", dtype=types.FLOAT)
        return img, fn.resize(img, size=size, antialias=True)

    pipe = decode_gpu()
    pipe.build()
    out = []
    for raw, ref in zip(data, cpu_arrays, strict=True):
        size = np.array([ref.shape[0], ref.shape[1]], dtype=np.float32)
        img, small = pipe.run(enc=[np.frombuffer(raw, dtype=np.uint8)], size=[size])
        full = np.array(img.as_cpu()[0])
        out.append(full if full.shape == ref.shape else np.array(small.as_cpu()[0]))
    del pipe
    return out
