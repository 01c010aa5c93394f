"""``dali-gallery bench --only detection``: the exported detection pipeline, labels moved with
the pixels, against the same pipeline written by hand in DALI and against torchvision v2
(``tv_tensors.BoundingBoxes``, DataLoader workers), over one COCO dataset, in the same run.

The chain is the bundled preset ``samples/bench_detection_export.json`` (SSD crop, flip,
colour, resize, normalise), exported with labels: it reads ``fn.readers.coco``, moves boxes
and drops those cut below the threshold. The hand-written DALI pipeline is what the DALI
documentation's detection example does with the same operators (``random_bbox_crop`` with
its own box outputs, ``bb_flip``); torchvision's is ``RandomIoUCrop``, ``RandomHorizontalFlip``,
``ColorJitter``, ``Resize``, ``SanitizeBoundingBoxes``, ``Normalize`` on the COCO file read
as ``wrap_dataset_for_transforms_v2(CocoDetection)`` gives it (:class:`Coco`). The dataset is
the annotated sample images (``samples/instances.json``), copied to make an epoch.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from dali_gallery.pipelines.codegen import seed_slot
from dali_gallery.pipelines.device import HW_DECODER_LOAD
from dali_gallery.pipelines.generated_module import import_source
from dali_gallery.pipelines.graph_helpers import _op_seed
from dali_gallery.pipelines.preset import load_file

from .bench_inputs import SAMPLES, images_per_s, to_host

CHAIN = SAMPLES / "bench_detection_export.json"
ANNOTATIONS = SAMPLES / "instances.json"
MEAN, STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


def write_dataset(root: Path, copies: int) -> tuple[Path, Path]:
    """``copies`` copies of each annotated sample image and their COCO file."""
    doc = json.loads(ANNOTATIONS.read_text())
    images, annotations = [], []
    for k in range(copies):
        for img in doc["images"]:
            name = f"c{k:03d}_{img['file_name']}"
            shutil.copyfile(SAMPLES / img["file_name"], root / name)
            new_id = len(images) + 1
            images.append({**img, "id": new_id, "file_name": name})
            for ann in doc["annotations"]:
                if ann["image_id"] == img["id"]:
                    annotations.append({**ann, "id": len(annotations) + 1, "image_id": new_id})
    path = root / "instances.json"
    path.write_text(json.dumps({**doc, "images": images, "annotations": annotations}))
    return root, path


def _seed(step: int, k: int) -> int:
    """The seed the exported module gives the k-th random node of a step (its chain seed
    is the preset's): the hand-written pipeline uses the same, so both draw the same windows
    and values, do the same work, and their images can be compared."""
    return _op_seed(load_file(CHAIN).seed, seed_slot(step, k))


def hand_written(root: Path, annotations: Path, batch: int, threads: int, device: str) -> Any:
    """The same chain as DALI's detection example writes it (``random_bbox_crop`` with its
    own box outputs, pruning boxes that keep less than a quarter of their area, ``bb_flip``),
    decoding with the export's hardware-decoder share (on a GPU, nvJPEG's hardware and CUDA
    decoders differ by a few grey levels, so any other share gives other pixels)."""
    from nvidia.dali import fn, pipeline_def, types

    @pipeline_def(batch_size=batch, num_threads=threads,
                  device_id=0 if device == "gpu" else None, seed=42)
    def detection():
        jpegs, boxes, labels = fn.readers.coco(
            file_root=str(root), annotations_file=str(annotations), ltrb=True, ratio=True,
            skip_empty=False, random_shuffle=False, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed" if device == "gpu" else "cpu",
                                   output_type=types.RGB, hw_decoder_load=HW_DECODER_LOAD)
        anchor, shape, boxes, labels = fn.random_bbox_crop(
            boxes, labels, bbox_layout="xyXY", thresholds=[0.3], scaling=[0.3, 1.0],
            aspect_ratio=[0.5, 2.0], bbox_prune_threshold=0.25, seed=_seed(0, 99))
        images = fn.slice(images, anchor, shape, normalized_anchor=True,
                          normalized_shape=True, axis_names="WH")
        flip = fn.random.uniform(values=[1, 0], dtype=types.INT32, seed=_seed(1, 1))
        images = fn.flip(images, horizontal=flip)
        boxes = fn.bb_flip(boxes, ltrb=True, horizontal=flip)
        images = fn.hsv(images, hue=fn.random.uniform(range=[-10.0, 10.0], seed=_seed(2, 1)),
                        saturation=fn.random.uniform(range=[0.8, 1.2], seed=_seed(2, 2)))
        images = fn.resize(images, resize_shorter=224.0)
        images = fn.crop_mirror_normalize(
            images, mean=[m * 255 for m in MEAN], std=[s * 255 for s in STD],
            dtype=types.FLOAT, output_layout="CHW")
        return images, boxes, labels

    return detection()


def same_output(ours: Any, plain: Any, device: str) -> dict[str, Any]:
    """One batch of each, compared: the images bit for bit, the boxes within 1e-5 (DALI
    crops relative boxes, the export moves pixel coordinates) and the labels exactly."""
    import numpy as np

    def batch(pipe: Any) -> list[list[np.ndarray]]:  # images, boxes, labels
        images, boxes, labels = pipe.run()
        return [to_host(images, device), to_host(boxes, "cpu"), to_host(labels, "cpu")]

    (images, boxes, labels), (images_b, boxes_b, labels_b) = batch(ours), batch(plain)
    diff = max(float(np.abs(x - y).max()) if x.shape == y.shape else float("inf")
               for x, y in zip(images, images_b, strict=True))
    return {"images_identical": diff == 0.0, "images_max_abs_diff": diff,
            "boxes_within_1e-5": all(x.shape == y.shape and np.allclose(x, y, atol=1e-5)
                                      for x, y in zip(boxes, boxes_b, strict=True)),
            "labels_identical": all(np.array_equal(x, y)
                                    for x, y in zip(labels, labels_b, strict=True))}


def exported(root: Path, annotations: Path, batch: int, threads: int, device: str,
             folder: Path) -> Any:
    """The bundled chain exported with labels (no masks), as a detector's training script
    builds it: images, boxes, labels."""
    from dali_gallery.pipelines.export import export_code
    from dali_gallery.pipelines.label_code import LabelSet

    module = import_source(export_code(load_file(CHAIN), labels=LabelSet()), folder,
                           "exported_detection")
    return module.create_pipeline(str(root), str(annotations), batch, num_threads=threads,
                                  device_id=0 if device == "gpu" else None,
                                  random_shuffle=False, label_outputs=("boxes", "labels"))


def torchvision_rate(root: Path, annotations: Path, batch: int, workers: int) -> dict[str, Any]:
    """Images/s of torchvision v2 over one epoch (after a warm-up epoch)."""
    try:
        import torch
        from torchvision.transforms import v2 as T
    except ImportError as e:
        return {"skipped": f"torchvision is not installed ({e.name})"}
    chain = T.Compose([
        T.RandomIoUCrop(min_scale=0.3, max_scale=1.0, min_aspect_ratio=0.5,
                        max_aspect_ratio=2.0, sampler_options=[0.3]),
        T.RandomHorizontalFlip(),
        T.ColorJitter(saturation=(0.8, 1.2), hue=(-10 / 360, 10 / 360)),
        T.Resize(224),
        T.SanitizeBoundingBoxes(),
        T.ToDtype(torch.float32, scale=True),
        T.Normalize(MEAN, STD),
    ])
    loader = torch.utils.data.DataLoader(Coco(root, annotations, chain), batch_size=batch,
                                         num_workers=workers, collate_fn=_collate)
    for _ in loader:  # warm-up epoch: worker start-up
        pass
    t = time.perf_counter()
    count = sum(len(images) for images, _ in loader)
    return {"images_per_s": round(count / (time.perf_counter() - t), 1), "workers": workers}


class Coco:
    """A COCO detection dataset for torchvision v2 (what ``CocoDetection`` +
    ``wrap_dataset_for_transforms_v2`` give, without pycocotools): the decoded image, and
    ``tv_tensors.BoundingBoxes`` (XYXY) with the category ids."""

    def __init__(self, root: Path, annotations: Path, transforms: Any) -> None:
        doc = json.loads(annotations.read_text())
        self.root, self.transforms = root, transforms
        self.images = sorted(doc["images"], key=lambda i: i["id"])
        self.boxes: dict[int, list[Any]] = {}
        for a in doc["annotations"]:
            self.boxes.setdefault(a["image_id"], []).append(a)

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> Any:
        import torch
        from torchvision import io, tv_tensors

        info = self.images[i]
        image = io.decode_jpeg(io.read_file(str(self.root / info["file_name"])))
        anns = self.boxes.get(info["id"], [])
        xyxy = [[x, y, x + w, y + h] for x, y, w, h in (a["bbox"] for a in anns)]
        boxes = tv_tensors.BoundingBoxes(torch.tensor(xyxy, dtype=torch.float32).reshape(-1, 4),
                                         format="XYXY", canvas_size=tuple(image.shape[-2:]))
        target = {"boxes": boxes, "labels": torch.tensor([a["category_id"] for a in anns])}
        return self.transforms(image, target)


def _collate(samples: list[Any]) -> tuple[list[Any], list[Any]]:
    """Detection batches keep one tensor per image (sizes and box counts differ)."""
    return [s[0] for s in samples], [s[1] for s in samples]


def bench_detection(device: str, quick: bool) -> dict[str, Any]:
    batch, copies = 16, (4 if quick else 16)
    threads = os.cpu_count() or 2
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "data"
        root.mkdir()
        root, annotations = write_dataset(root, copies)
        n = 4 * copies
        ours = exported(root, annotations, batch, threads, device, Path(tmp))
        plain = hand_written(root, annotations, batch, threads, device)
        for pipe in (ours, plain):
            pipe.build()
        checks = same_output(ours, plain, device)  # the first batch of each
        for pipe in (ours, plain):
            images_per_s(pipe, 2, batch, device)  # warm-up
        # each rate over about half a second (at least two epochs): a few ms on a GPU is noise
        per_batch = batch / images_per_s(plain, 4, batch, device)
        iters = max(8, 2 * n // batch, int(0.5 / per_batch))
        rates: dict[str, list[float]] = {"exported": [], "hand_written": []}
        for _ in range(2 if quick else 6):  # interleaved epochs: the same machine load
            for name, pipe in (("exported", ours), ("hand_written", plain)):
                rates[name].append(images_per_s(pipe, iters, batch, device))
        del ours, plain
        e = statistics.median(rates["exported"][1:] or rates["exported"])
        h = statistics.median(rates["hand_written"][1:] or rates["hand_written"])
        tv = torchvision_rate(root, annotations, batch, min(16, threads))
    out = {"images": n, "batch": batch, "device": device,
           "exported_images_per_s": round(e, 1), "hand_written_images_per_s": round(h, 1),
           "exported_over_hand_written": round(e / h, 3), "target": ">= 0.95",
           "torchvision_v2": tv, **checks}
    if "images_per_s" in tv:
        out["exported_over_torchvision"] = round(e / tv["images_per_s"], 2)
    return out
