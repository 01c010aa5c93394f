"""The gallery's images: kept encoded, so that a size change decodes them again (with DALI).

Arrays handed in (``GalleryView.set_arrays``) are kept as PNG for the same reason. Decoding
takes the first ``max_images`` files DALI can decode and reports the others.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dali_gallery.pipelines.display import encode_image
from dali_gallery.pipelines.images import EncodedImage, ImageProblem, decode


def encode_arrays(arrays: Sequence[np.ndarray],
                  names: Sequence[str] | None = None) -> list[EncodedImage]:
    """HWC uint8 RGB arrays as lossless PNG files (named ``image <i>`` unless named)."""
    encoded = []
    for i, a in enumerate(arrays):
        if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
            raise ValueError(f"image {i}: expected an HxWx3 uint8 array, got "
                             f"{a.dtype} {a.shape}")
        name = names[i] if names is not None else f"image {i}"
        encoded.append(EncodedImage(name, encode_image(a, "png")))
    return encoded


def decode_first(images: Sequence[EncodedImage], count: int, max_side: int,
                 threads: int) -> tuple[list[np.ndarray], list[str], list[ImageProblem]]:
    """The first ``count`` images that decode, at most ``max_side`` on a side: arrays, names,
    and the problems of the files that did not decode on the way."""
    arrays: list[np.ndarray] = []
    names: list[str] = []
    problems: list[ImageProblem] = []
    pending = list(images)
    while pending and len(arrays) < count:
        room = count - len(arrays)
        take, pending = pending[:room], pending[room:]
        got, good, bad = decode(take, max_side=max_side, num_threads=threads)
        arrays += got
        names += [g.name for g in good]
        problems += bad
    return arrays, names, problems


def problem_text(problems: Sequence[ImageProblem], shown: int = 5) -> str:
    """`` — skipped: a; b (+N more)`` for the status line ("" without problems)."""
    if not problems:
        return ""
    text = "; ".join(p.message for p in problems[:shown])
    more = f" (+{len(problems) - shown} more)" if len(problems) > shown else ""
    return f" — skipped: {text}{more}"
