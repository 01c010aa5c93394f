"""Helpers of the annotation tests: small JPEGs, COCO RLE encoding (as pycocotools writes it)
and DALI's own ``fn.readers.coco``, whose outputs are the truth the loaders must match."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from nvidia.dali import fn, pipeline_def
from PIL import Image

from dali_gallery.pipelines.annotations import Annotations


def jpeg(folder: Path, name: str, width: int, height: int) -> Path:
    """A small JPEG of ``width`` x ``height`` (a gradient, so it is a real photo-like file)."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    ramp = np.linspace(0, 255, width * height * 3).reshape(height, width, 3).astype(np.uint8)
    Image.fromarray(ramp).save(path, quality=90)
    return path


def write_json(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def rle_runs(mask: np.ndarray) -> list[int]:
    """COCO's uncompressed RLE counts of a 2D mask: column-major runs, starting with zeros."""
    flat = np.asarray(mask, bool).T.reshape(-1)
    edges = np.flatnonzero(np.diff(flat.astype(np.int8))) + 1
    bounds = np.concatenate(([0], edges, [flat.size]))
    runs = np.diff(bounds).tolist()
    return ([0] + runs) if flat[0] else runs


def rle_string(runs: list[int]) -> str:
    """pycocotools' ``rleToString``: each count (a delta to the one two before, from the
    third on) in 5-bit groups, 0x20 meaning "more", offset by 48."""
    out = []
    for i, count in enumerate(runs):
        x = count - runs[i - 2] if i > 2 else count
        more = True
        while more:
            c = x & 0x1F
            x >>= 5
            more = x != -1 if c & 0x10 else x != 0
            out.append(chr((c | 0x20 if more else c) + 48))
    return "".join(out)


def reader(annotations_file: Path, images_dir: Path, count: int, *, pixelwise: bool = False,
           **kwargs: object) -> list[dict]:
    """The first ``count`` samples of the real ``fn.readers.coco`` (CPU), with the arguments
    the engine uses: boxes, labels, image id (and the mask)."""

    @pipeline_def(batch_size=count, num_threads=1, device_id=None, prefetch_queue_depth=1)
    def pipe():  # type: ignore[no-untyped-def]
        outs = fn.readers.coco(file_root=str(images_dir), annotations_file=str(annotations_file),
                               ltrb=True, ratio=True, avoid_class_remapping=True,
                               skip_empty=False, image_ids=True, pixelwise_masks=pixelwise,
                               **kwargs)
        return tuple(outs[1:])

    p = pipe()
    p.build()
    outs = p.run()
    samples = []
    for i in range(count):
        sample = {"boxes": np.array(outs[0][i]), "classes": np.array(outs[1][i]),
                  "image_id": int(np.array(outs[-1][i]).reshape(-1)[0])}
        if pixelwise:
            sample["mask"] = np.array(outs[2][i])
        samples.append(sample)
    del p
    return samples


def bits(array: np.ndarray) -> bytes:
    """The exact bytes, so that equality is bit-identity (NaN == NaN, -0.0 != 0.0)."""
    return np.ascontiguousarray(array).tobytes()


def assert_matches_reader(ann: Annotations, clean: Path, images_dir: Path, *,
                          pixelwise: bool = False) -> list[dict]:
    """The reader's boxes, classes and image order equal the loader's, bit for bit."""
    samples = reader(clean, images_dir, len(ann.images), pixelwise=pixelwise)
    assert [s["image_id"] for s in samples] == [img.image_id for img in ann.images]
    for sample, img in zip(samples, ann.images, strict=True):
        boxes, classes = sample["boxes"], sample["classes"]
        assert boxes.dtype == img.boxes.dtype == np.float32
        assert classes.dtype == img.classes.dtype == np.int32
        assert boxes.reshape(-1, 4).shape == img.boxes.shape, img.file
        assert bits(boxes) == bits(img.boxes), img.file
        assert bits(classes) == bits(img.classes), img.file
    return samples
