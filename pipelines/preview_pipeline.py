"""The DALI side of the preview: the generated chain as an importable module, the pipeline built
around it, and the values fed into it by name.

The preview pipeline reads the images from ``external_source("images")``, runs the module's
``augment`` (and ``finish`` for the training tail) and returns the images plus one output per
record of the chain (what each sample drew and whether each step fired).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .autograph_scope import convert_only_branching
from .codec_extensions import all_codecs
from .codegen import Feed
from .dali_errors import DALI_LOCK
from .device import HW_DECODER_LOAD, Device
from .fed_values import fed_nodes, layout, tensors
from .generated_module import import_source
from .image_decode import drop_kept_pipeline, kept_pipeline
from .label_code import LabelSet
from .origin_trace import lean_traces
from .preset import Group, Preset, Step, Uniform

EXECUTOR = {"exec_pipelined": True, "exec_async": True, "exec_dynamic": True}
"""DALI's executor for every preview pipeline, traced or loaded from the cache alike (a loaded
pipeline otherwise gets the old executor, whose RNG state cannot be restored after a run)."""
MODULE_PREFIX = "dali_gallery_chain_"


class ChainModules:
    """Generated chain modules written to ``folder`` and imported once per source text."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._modules: dict[str, tuple[ModuleType, Path]] = {}

    def load(self, code: str) -> tuple[ModuleType, Path]:
        digest = hashlib.sha1(code.encode()).hexdigest()[:16]
        if digest in self._modules:
            return self._modules[digest]
        name = f"{MODULE_PREFIX}{digest}"
        module = import_source(code, self.folder, name)
        self._modules[digest] = (module, self.folder / f"{name}.py")
        return self._modules[digest]

    def clear(self) -> None:
        for name in [m for m in sys.modules if m.startswith(MODULE_PREFIX)]:
            del sys.modules[name]
        self._modules.clear()


def build_pipeline(module: ModuleType, seed: int, batch: int, device: Device, threads: int,
                   tail: bool, checkpointing: bool, conditionals: bool,
                   labels: LabelSet | None = None, trace_only: bool = False) -> Any:
    """The (unbuilt) preview pipeline around ``module.augment``; with ``labels`` it also
    feeds each image's boxes, classes, keypoints (and masks) and returns them moved, then each
    moving step's kept fractions; after the run (``labels.after_run``) only the masks are fed
    and returned, then what moves the rest (:func:`label_render.read_labels`).
    ``trace_only``: made to be serialized, never built, so it
    names no GPU (DALI serializes a GPU graph without one; whoever loads it gives the device)."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(enable_conditionals=conditionals)
    def preview():
        # no_copy: the engine's input batches (pipelines.input_batches) outlive the render, so
        # DALI can read them in place (a copy cost 0.13 ms a render of 8 x 256x256 on 2 cores)
        fed = fn.external_source(name="images", layout="HWC", dtype=types.UINT8, no_copy=True)
        images = fed.gpu() if device == "gpu" else fed
        fed_nodes(module)  # the run-time values, an input each (pipelines.fed_values)
        # no annotated assignments here: autograph rewrites this function
        moved, kept = (), []
        # the first step's size from the host's batch, not from the images on the GPU
        source = {"source": fed.shape()} if getattr(module, "SOURCE", False) else {}
        if labels is None:
            images, records = module.augment(images, seed, **source)
        else:
            images, moved, records, kept = module.augment(
                images, seed, _label_inputs(labels, device), **source)
        if tail and labels is None:
            images = module.finish(images, seed)
        elif tail:  # the tail moves the labels too; its crop's kept fractions come last
            images, moved, tail_kept = module.finish(images, seed, moved)
            kept = [*kept, *tail_kept]
        return (images, *records, *moved, *kept)

    if conditionals:  # autograph rewrites only the auto_aug code that branches on data
        convert_only_branching()
    with lean_traces():  # the graph is traced here; operators record no DALI-internal frames
        return preview(
            batch_size=batch,
            num_threads=threads,
            device_id=0 if device == "gpu" and not trace_only else None,
            seed=seed,
            prefetch_queue_depth=1,
            enable_checkpointing=checkpointing,
            **EXECUTOR,
        )


LABEL_INPUTS = "masks-fed-fitted"
"""How :func:`_label_inputs` feeds labels (part of a labelled pipeline's cache key: graphs cached
when the masks were resized in every render are not loaded for these)."""


def _label_inputs(labels: LabelSet, device: Device) -> tuple[Any, ...]:
    """The fed labels the graph carries (``labels.graph_names``); masks, at their images'
    size already (:mod:`.mask_fit`), on the images' device."""
    from nvidia.dali import fn, types

    out = []
    if not labels.after_run:
        out += [fn.external_source(name="boxes", dtype=types.FLOAT, no_copy=True),
                fn.external_source(name="classes", dtype=types.INT32, no_copy=True),
                fn.external_source(name="keypoints", dtype=types.FLOAT, no_copy=True)]
    if not labels.masks:
        return tuple(out)
    masks = fn.external_source(name="masks", dtype=types.UINT8, layout="HWC", no_copy=True)
    return (*out, masks.gpu() if device == "gpu" else masks)


def feed_values(preset: Preset, feeds: list[Feed], batch: int) -> dict[str, Any]:
    """One array per fed name: every sample of the batch gets the step's current value."""
    out: dict[str, Any] = {}
    for f in feeds:
        owner = preset.steps[f.step]
        dtype = np.float32 if f.dtype == "FLOAT" else np.int32
        if isinstance(owner, Group) and f.kind in ("weights", "key_scale"):
            out[f.name] = _group_feed(owner, f, batch)
            continue
        step = owner.children[f.child] if isinstance(owner, Group) and f.child is not None \
            else owner
        if f.kind == "probability":
            out[f.name] = np.full(batch, step.probability, dtype=np.float32)
            continue
        assert isinstance(step, Step)
        if f.kind == "range":
            u = step.params[f.param]
            assert isinstance(u, Uniform)
            out[f.name] = np.tile(np.array([u.lo, u.hi], dtype=np.float32), (batch, 1))
        else:
            out[f.name] = np.full(batch, step.params[f.param], dtype=dtype)
    return out


def fed_arrays(preset: Preset, feeds: list[Feed], batch: int,
               overrides: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
    """What a render feeds its fed inputs: :func:`feed_values` (``overrides`` in place, by
    name) as the tensors :func:`fed_values.feed` hands DALI. DALI copies what it is fed, so
    the engine feeds the same tensors to every render of a document."""
    values = feed_values(preset, feeds, batch)
    for name, vals in (overrides or {}).items():
        values[name] = vals.astype(values[name].dtype)
    return tensors(values, layout(feeds), batch)


def _group_feed(group: Group, f: Feed, batch: int) -> np.ndarray:
    """A group's fed draw: its enabled children's normalised weights (one child picked), or
    the factor on child ``f.child``'s log-key (several picked); as the export writes them."""
    if f.kind == "weights":
        weights = np.array(group.normalised_weights(), dtype=np.float32)
        return np.tile(weights, (batch, 1))
    assert f.child is not None
    return np.full(batch, group.key_scales()[f.child], dtype=np.float32)


def decode_mixed(data: list[bytes], cpu_arrays: list[np.ndarray], max_side: int | None,
                 threads: int) -> list[np.ndarray]:
    """Decode again with the GPU ("mixed") decoder, as the exported GPU pipeline does, so the
    GPU preview starts from the same pixels as training. Sizes follow the CPU decode. The
    pipeline is built once a process (:func:`image_decode.kept_pipeline`): a build cost
    0.6 s on an H100 host, the GIL held, at every load of images."""
    if not data:
        return []
    out = []
    key = ("mixed", 1, threads)
    with DALI_LOCK:
        pipe: Any = kept_pipeline(key, lambda: _mixed_decoder(threads))
        try:
            for raw, ref in zip(data, cpu_arrays, strict=True):
                size = np.array([ref.shape[0], ref.shape[1]], dtype=np.float32)
                img, small = pipe.run(enc=[np.frombuffer(raw, dtype=np.uint8)], size=[size])
                full = np.array(img.as_cpu()[0])
                out.append(full if full.shape == ref.shape else np.array(small.as_cpu()[0]))
        except BaseException:  # a run that failed may leave it unusable: built anew next time
            drop_kept_pipeline(key)
            raise
    return out


def _mixed_decoder(threads: int) -> Any:
    """The built pipeline of :func:`decode_mixed` (every nvImageCodec extension loaded)."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=1, num_threads=threads, device_id=0, prefetch_queue_depth=1)
    def decode_gpu():
        enc = fn.external_source(name="enc", dtype=types.UINT8)
        img = fn.decoders.image(enc, device="mixed", output_type=types.RGB,
                                hw_decoder_load=HW_DECODER_LOAD)
        size = fn.external_source(name="size", dtype=types.FLOAT)
        return img, fn.resize(img, size=size, antialias=True)

    with all_codecs():
        pipe = decode_gpu()
        pipe.build()
    return pipe
