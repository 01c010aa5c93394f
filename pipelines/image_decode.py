"""Decoding the user's images with DALI for previews, within the pixel budgets.

Why this module is careful (see dali-2.4-notes.md, section 5):

* DALI has no "skip corrupt" option: one bad image fails the whole batch, so a failed batch is
  decoded again one image at a time to name the culprit.
* A JPEG with damaged entropy-coded data decodes "successfully" into garbage; stderr is
  captured around each run to catch libjpeg's warning (:mod:`pipelines.dali_errors`).
* ``output_type=types.ANY_DATA`` kills the process on grayscale JPEGs: only ``types.RGB`` is used.
* Nothing is decoded before its size is known to fit: the header check
  (:mod:`pipelines.image_headers`) and ``fn.peek_image_shape`` run first, and the images of one
  load must fit in what the kernel's pixel budget leaves (:mod:`pipelines.budget`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .budget import LEDGER, Budget, current, mp
from .codec_extensions import cpu_codecs
from .dali_errors import (
    DALI_LOCK,
    Captured,
    captured_stderr,
    decode_failure_reason,
    garbage_reason,
    garbage_warning,
)
from .image_collect import EncodedImage, ImageProblem
from .image_headers import check_size, pixel_limit_reason

PREVIEW_SIZES: tuple[int, ...] = (128, 192, 256, 384, 512)
"""The longest sides (px) a preview may shrink images to before augmenting them; the one
declaration the builder's size menu and the gallery's use."""
ORIGINAL_SIZE = 0
"""The preview size that keeps images as decoded (exact parity with the exported pipeline)."""

HUGE_PIXELS = 24_000_000
"""Images above this are decoded alone, in a pipeline that is dropped afterwards."""

BATCH_PIXELS = 48_000_000
"""Pixel budget of one decode batch, which bounds the memory of batched decoding."""

BATCH_SIZE = 8

_PIPES: dict[tuple[str, int, int], object] = {}
"""Built pipelines by (kind, batch_size, num_threads): building one that reads images cost
0.55-0.63 s on an H100 host with every nvImageCodec extension loaded (:mod:`.codec_extensions`),
reuse is free."""


def clear_pipeline_cache() -> None:
    """Drops the cached decode pipelines and the buffers they keep (e.g. after a big batch)."""
    with DALI_LOCK:
        _PIPES.clear()


def kept_pipeline(key: tuple[str, int, int], build: Callable[[], object], *,
                  fresh: bool = False) -> object:
    """The process's built pipeline under ``key`` (kind, batch size, threads), built by
    ``build`` the first time (or again when ``fresh``); callers hold :data:`DALI_LOCK` while
    they use it. :func:`clear_pipeline_cache` drops them all."""
    if fresh or key not in _PIPES:
        _PIPES.pop(key, None)
        _PIPES[key] = build()
    return _PIPES[key]


def drop_kept_pipeline(key: tuple[str, int, int]) -> None:
    """Forget the pipeline under ``key`` (a run of it failed); callers hold :data:`DALI_LOCK`."""
    _PIPES.pop(key, None)


def _build(kind: str, batch_size: int, num_threads: int) -> object:
    """A CPU pipeline fed with encoded bytes: 'peek' (shapes), 'decode' or 'resize', its image
    operators loading only nvImageCodec's CPU extensions."""
    with cpu_codecs():
        return _define(kind, batch_size, num_threads)


def _define(kind: str, batch_size: int, num_threads: int) -> object:
    import nvidia.dali.math as dmath
    from nvidia.dali import fn, types
    from nvidia.dali.pipeline import Pipeline

    pipe = Pipeline(
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=None,
        prefetch_queue_depth=1,
    )
    with pipe:
        enc = fn.external_source(name="enc", dtype=types.UINT8, ndim=1)
        if kind == "peek":
            pipe.set_outputs(fn.peek_image_shape(enc))
        else:
            img = fn.decoders.image(enc, device="cpu", output_type=types.RGB)
            if kind == "resize":
                limit = fn.external_source(name="max_side", dtype=types.FLOAT, ndim=0)
                shape = img.shape(dtype=types.FLOAT)
                h, w = shape[0], shape[1]
                scale = dmath.min(1.0, limit / dmath.max(h, w))  # never upscale
                size = fn.stack(
                    dmath.max(1.0, dmath.floor(h * scale + 0.5)),
                    dmath.max(1.0, dmath.floor(w * scale + 0.5)),
                )
                img = fn.resize(img, size=size, antialias=True)
            pipe.set_outputs(img)
    pipe.build()
    return pipe


def _pipe(kind: str, batch_size: int, num_threads: int, *, fresh: bool = False) -> object:
    return kept_pipeline((kind, batch_size, num_threads),
                         lambda: _build(kind, batch_size, num_threads), fresh=fresh)


def _feed(datas: list[bytes], max_side: int | None) -> dict[str, list[np.ndarray]]:
    inputs = {"enc": [np.frombuffer(d, dtype=np.uint8) for d in datas]}
    if max_side is not None:
        inputs["max_side"] = [np.float32(max_side) for _ in datas]
    return inputs


class _DecodeFailure(Exception):
    def __init__(self, err: BaseException, stderr_text: str) -> None:
        super().__init__(str(err))
        self.err = err
        self.stderr_text = stderr_text


def _run_or_fail(pipe: object, inputs: dict[str, list[np.ndarray]]) -> tuple[list, str]:
    cap = Captured()
    try:
        with captured_stderr() as cap:
            (out,) = pipe.run(**inputs)  # type: ignore[attr-defined]
            arrays = [np.array(out[i]) for i in range(len(out))]
    except Exception as err:  # DALI raises RuntimeError; anything else is reported the same way
        raise _DecodeFailure(err, cap.text) from err
    return arrays, cap.text


def peek_shapes(
    datas: list[bytes], *, num_threads: int = 2
) -> list[tuple[int, int, int] | None]:
    """(H, W, C) after EXIF orientation via ``fn.peek_image_shape``; None where the header fails.

    Only headers are parsed, so this is cheap and allocates no pixels.
    """
    shapes: list[tuple[int, int, int] | None] = [None] * len(datas)
    for start in range(0, len(datas), BATCH_SIZE):
        chunk = datas[start : start + BATCH_SIZE]
        try:
            arrays, _ = _run_or_fail(_pipe("peek", BATCH_SIZE, num_threads), _feed(chunk, None))
        except _DecodeFailure:
            arrays = []
            for one in chunk:
                try:
                    arrays.append(_run_or_fail(_pipe("peek", BATCH_SIZE, num_threads),
                                               _feed([one], None))[0][0])
                except _DecodeFailure:
                    arrays.append(None)
        for i, a in enumerate(arrays):
            if a is not None and a.size >= 2:
                c = int(a[2]) if a.size > 2 else 1
                shapes[start + i] = (int(a[0]), int(a[1]), c)
    return shapes


def decoded_size(h: int, w: int, max_side: int | None) -> tuple[int, int]:
    """The size an ``h`` x ``w`` image decodes to with ``max_side`` (the resize pipeline's
    rounding: never enlarged, aspect kept, at least 1 px)."""
    if max_side is None or max(h, w) <= max_side:
        return h, w
    scale = max_side / max(h, w)
    return max(1, math.floor(h * scale + 0.5)), max(1, math.floor(w * scale + 0.5))


def decode(
    images: list[EncodedImage],
    *,
    max_side: int | None = None,
    num_threads: int = 2,
    max_pixels: int | None = None,
    budget: Budget | None = None,
) -> tuple[list[np.ndarray], list[EncodedImage], list[ImageProblem]]:
    """Decodes with DALI on CPU to HWC uint8 RGB; bad images become problems, not exceptions.

    EXIF orientation is applied; gray, CMYK, RGBA, 16-bit and palette images come out as 3-channel
    uint8. With ``max_side`` every image is shrunk (``fn.resize``, aspect kept, never enlarged)
    so its longer side is at most ``max_side``. Images are checked from their headers first
    (our header reader, then ``fn.peek_image_shape``): over ``max_pixels`` (default: the
    budget's image pixels) is a problem, and so is an image that would take the kernel past its
    pixel budget once decoded (images still held elsewhere count). Small images are decoded in
    batches bounded by :data:`BATCH_PIXELS`; huge ones one at a time in a throwaway pipeline.
    A batch that fails or prints a libjpeg corruption warning is decoded again one image at a
    time to name the culprits. Returned lists keep the input order; the arrays are recorded in
    the kernel's ledger (:data:`pipelines.budget.LEDGER`) for as long as they live.
    """
    if max_side is not None and max_side < 1:
        raise ValueError(f"max_side must be >= 1, got {max_side}")
    budget = budget or current()
    limit = budget.image_pixels if max_pixels is None else max_pixels
    kind = "decode" if max_side is None else "resize"
    results: dict[int, np.ndarray] = {}
    problems: dict[int, ImageProblem] = {}
    with DALI_LOCK:
        candidates: list[int] = []
        for i, img in enumerate(images):
            if not img.data:
                problems[i] = ImageProblem(img.name, "empty (0 bytes)")
                continue
            why = check_size(img.data, limit).problem
            if why is not None:
                problems[i] = ImageProblem(img.name, why)
                continue
            candidates.append(i)
        shapes = peek_shapes([images[i].data for i in candidates], num_threads=num_threads)
        batches: list[list[int]] = []
        alone: list[int] = []
        current_batch: list[int] = []
        batch_px = 0
        held = LEDGER.held()
        for i, shape in zip(candidates, shapes, strict=True):
            if shape is None:
                alone.append(i)  # the header fails; decoding it alone gives the reason
                continue
            px = shape[0] * shape[1]
            out_h, out_w = decoded_size(shape[0], shape[1], max_side)
            if px > limit:
                problems[i] = ImageProblem(
                    images[i].name, pixel_limit_reason(shape[1], shape[0], limit)
                )
                continue
            if held + out_h * out_w > budget.kernel_pixels:
                problems[i] = ImageProblem(images[i].name, _kernel_reason(
                    out_w, out_h, held, budget.kernel_pixels, max_side))
                continue
            held += out_h * out_w
            if px > HUGE_PIXELS:
                alone.append(i)
            else:
                if current_batch and (len(current_batch) == BATCH_SIZE
                                      or batch_px + px > BATCH_PIXELS):
                    batches.append(current_batch)
                    current_batch, batch_px = [], 0
                current_batch.append(i)
                batch_px += px
        if current_batch:
            batches.append(current_batch)

        for batch in batches:
            pipe = _pipe(kind, BATCH_SIZE, num_threads)
            try:
                arrays, text = _run_or_fail(pipe, _feed([images[i].data for i in batch], max_side))
            except _DecodeFailure:
                arrays, text = [], "failed"
            if arrays and garbage_warning(text) is None:
                results.update(zip(batch, arrays, strict=True))
                continue
            for i in batch:
                _decode_one(images, i, kind, max_side, num_threads, results, problems)
        shape_of = dict(zip(candidates, shapes, strict=True))
        for i in alone:
            shape = shape_of[i]
            huge = shape is not None and shape[0] * shape[1] > HUGE_PIXELS
            _decode_one(images, i, kind, max_side, num_threads, results, problems, throwaway=huge)
        for i in [i for i in alone if shape_of[i] is None and i in results]:
            # Neither header reader could tell its size, yet it decoded: count it now.
            a = results[i]
            if held + a.shape[0] * a.shape[1] > budget.kernel_pixels:
                del results[i]
                problems[i] = ImageProblem(images[i].name, _kernel_reason(
                    a.shape[1], a.shape[0], held, budget.kernel_pixels, max_side))
            else:
                held += a.shape[0] * a.shape[1]

    order = sorted(results)
    arrays_out = [results[i] for i in order]
    LEDGER.hold_images(arrays_out)
    return (
        arrays_out,
        [images[i] for i in order],
        [problems[i] for i in sorted(problems)],
    )


def _kernel_reason(w: int, h: int, held: int, limit: int, max_side: int | None) -> str:
    size = "at its full size" if max_side is None else f"at {max_side} px"
    return (f"not loaded: it needs {mp(w * h)} ({w}x{h}) {size} while this kernel already "
            f"holds {mp(held)} in images and renders, and at most {mp(limit)} per kernel is "
            "allowed; choose a smaller preview size or fewer images")


def _decode_one(
    images: list[EncodedImage],
    i: int,
    kind: str,
    max_side: int | None,
    num_threads: int,
    results: dict[int, np.ndarray],
    problems: dict[int, ImageProblem],
    *,
    throwaway: bool = False,
) -> None:
    """Decodes image ``i`` alone; retries once on a rebuilt pipeline before blaming the image."""
    inputs = _feed([images[i].data], max_side)
    failure: _DecodeFailure | None = None
    for attempt in range(2):
        if throwaway:
            pipe = _build(kind, 1, num_threads)
        else:
            pipe = _pipe(kind, BATCH_SIZE, num_threads, fresh=attempt > 0)
        try:
            arrays, text = _run_or_fail(pipe, inputs)
        except _DecodeFailure as err:
            failure = err
            continue
        finally:
            if throwaway:
                del pipe  # frees the huge buffers now
        warning = garbage_warning(text)
        if warning is not None:
            problems[i] = ImageProblem(images[i].name, garbage_reason(warning))
        else:
            results[i] = arrays[0]
        return
    assert failure is not None
    problems[i] = ImageProblem(
        images[i].name, decode_failure_reason(failure.err, failure.stderr_text)
    )
