"""The references ``dali-gallery bench`` measures against: the standard chain written by hand.

``samples/bench_chain.json`` is the chain as a preset; here it is written the way DALI's (and
torchvision's) docs write such a chain, without the catalog, the code generator or the engine.
It is the one module outside the catalog that calls DALI operators by name, on purpose: a
reference built from the catalog would share the mistakes it is there to catch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def standard_chain(x: Any) -> Any:
    """The standard chain on a DALI node of HWC uint8 images."""
    from nvidia.dali import fn, types

    x = fn.rotate(x, angle=fn.random.uniform(range=[-15, 15]), keep_size=True, fill_value=0.0)
    x = fn.brightness_contrast(x, brightness=fn.random.uniform(range=[0.8, 1.2]),
                               contrast=fn.random.uniform(range=[0.8, 1.2]))
    x = fn.hsv(x, hue=fn.random.uniform(range=[-10, 10]),
               saturation=fn.random.uniform(range=[0.8, 1.2]))
    x = fn.gaussian_blur(x, sigma=fn.random.uniform(range=[0.1, 1.5]))
    x = fn.flip(x, horizontal=fn.random.coin_flip(dtype=types.INT32))
    return fn.noise.gaussian(x, stddev=8.0)


def bare_pipeline(batch: int, device: str, threads: int) -> Any:
    """The standard chain fed images from ``external_source("images")`` (built)."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0 if device == "gpu" else None,
                  seed=42, prefetch_queue_depth=1)
    def bare():
        x = fn.external_source(name="images", layout="HWC", dtype=types.UINT8)
        if device == "gpu":
            x = x.gpu()
        return standard_chain(x)

    pipe = bare()
    pipe.build()
    return pipe


def labelled_pipeline(batch: int, device: str, threads: int, boxes: bool,
                      masks: bool) -> Any:
    """``samples/bench_detection.json`` (random resized crop, flip, rotation, colour) on fed
    ``images`` (and ``masks``), its labels moved as DALI's docs move them: box corners and
    keypoints (fed ``points``, relative; the images' ``wh`` and ``shape``) through the crop
    window's ``fn.transforms`` matrix, ``fn.coord_flip`` and the rotation's matrix
    (``fn.coord_transform``), masks through the images' own operators with nearest neighbour.
    No tight boxes, clipping or dropping (DALI has no operator that drops rows): the floor of
    what carrying labels costs DALI itself. Returns the images, the six drawn values (the
    preview returns them too) and the labels (built)."""
    from nvidia.dali import fn, pipeline_def, types

    nearest = {"interp_type": types.INTERP_NN}

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0 if device == "gpu" else None,
                  prefetch_queue_depth=1, exec_dynamic=True)
    def labelled():
        x = fn.external_source(name="images", layout="HWC", device=device)
        m = fn.external_source(name="masks", layout="HWC", device=device) if masks else None
        anchor, shape = fn.random_crop_generator(fn.external_source(name="shape"),
                                                 random_area=[0.3, 1.0], seed=1)
        start, extent = fn.cast(anchor, dtype=types.FLOAT), fn.cast(shape, dtype=types.FLOAT)
        end = start + extent
        x = fn.resize(x, size=[224, 224], roi_start=start, roi_end=end)
        coin = fn.random.coin_flip(seed=2, dtype=types.INT32)
        angle = fn.random.uniform(range=[-15, 15], seed=3)
        x = fn.rotate(fn.flip(x, horizontal=coin), angle=angle, keep_size=True, fill_value=0)
        drawn = [coin, angle] + [fn.random.uniform(range=r, seed=4 + k) for k, r in
                                 enumerate([[0.8, 1.2], [0.8, 1.2], [-10, 10], [0.8, 1.2]])]
        x = fn.brightness_contrast(x, brightness=drawn[2], contrast=drawn[3])
        out = [fn.hsv(x, hue=drawn[4], saturation=drawn[5]), *drawn]
        if boxes:
            wh = fn.cast(fn.external_source(name="wh"), dtype=types.FLOAT)
            window = fn.transforms.crop(from_start=start[1::-1] / wh, from_end=end[1::-1] / wh)
            turn = fn.transforms.rotation(angle=-angle, center=[0.5, 0.5])
            points = fn.coord_transform(fn.external_source(name="points"), MT=window)
            points = fn.coord_flip(points, layout="xy", flip_x=coin)
            out.append(fn.coord_transform(points, MT=turn))
        if masks:
            m = fn.resize(m, size=[224, 224], roi_start=start, roi_end=end, antialias=False,
                          **nearest)
            out.append(fn.rotate(fn.flip(m, horizontal=coin), angle=angle, keep_size=True,
                                 fill_value=0, **nearest))
        return tuple(out)

    pipe = labelled()
    pipe.build()
    return pipe


def training_pipeline(root: Path, files: list[str] | None, batch: int, threads: int,
                      device: str) -> Any:
    """Reader + decoder + the standard chain over a folder, as a training script would (not
    built)."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=batch, num_threads=threads,
                  device_id=0 if device == "gpu" else None, seed=42)
    def hand():
        jpegs, labels = fn.readers.file(file_root=str(root), files=files, random_shuffle=True,
                                        dont_use_mmap=True)
        x = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu",
                              output_type=types.RGB)
        return standard_chain(x), labels

    return hand()


def torchvision_chain() -> Any:
    """The closest torchvision.transforms.v2 chain (uint8 CHW tensor in, float out)."""
    import torch
    from torchvision.transforms import v2

    return v2.Compose([
        v2.RandomRotation(15),
        v2.ColorJitter(brightness=0.2, contrast=0.2, saturation=0.2, hue=10 / 360),
        v2.GaussianBlur(5, sigma=(0.1, 1.5)),
        v2.RandomHorizontalFlip(),
        v2.ToDtype(torch.float32, scale=True),
        v2.GaussianNoise(sigma=8 / 255),
    ])
