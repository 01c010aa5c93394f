"""Multi-GPU proof: the exported pipeline under PyTorch DDP, one process per GPU.

    torchrun --nproc_per_node 2 scripts/ddp_proof.py --images DIR --out OUT
    torchrun --nproc_per_node 2 scripts/ddp_proof.py --device cpu --out OUT   # gloo, no GPU

Each rank builds the exported module of a fixed preset (random rotate, hsv and flip, then the
training tail) as the documented recipe does (shard_id=rank, num_shards=world, the same seed,
random_shuffle=False), wraps it in DALI's PyTorch iterator and trains a tiny model with DDP for
a few steps. It checks that:

* every rank's first batch equals, bit for bit, the preview of its shard (PreviewEngine on the
  rank's device, the shard's first files, seed shard_seed(seed, rank), training tail applied);
* the ranks read different files and draw different augmentation parameters (the preview's
  per-sample records, gathered from every rank);
* the loss is finite.

It measures images/s of the loader per GPU and in total, beside the same pipeline on one GPU
alone (rank 0, before the others start), and training images/s. Rank 0 writes
OUT/ddp_proof.json with the figures and the checks; the exit status is non-zero when a check
fails. On GPUs each process sees only its own GPU (CUDA_VISIBLE_DEVICES = LOCAL_RANK, set
before CUDA starts), so device_id 0 inside the process is GPU <LOCAL_RANK>, for the exported
pipeline, the preview engine and torch alike.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

LOCAL_RANK = int(os.environ.get("LOCAL_RANK", "0"))
_VISIBLE = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
os.environ["CUDA_VISIBLE_DEVICES"] = (_VISIBLE[LOCAL_RANK] if len(_VISIBLE) > LOCAL_RANK
                                      else str(LOCAL_RANK))  # this rank's GPU only

import numpy as np  # noqa: E402  (after CUDA_VISIBLE_DEVICES)
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy  # noqa: E402

from dali_gallery.pipelines.engine import PreviewEngine  # noqa: E402
from dali_gallery.pipelines.export import export_code  # noqa: E402
from dali_gallery.pipelines.generated_module import import_source  # noqa: E402
from dali_gallery.pipelines.preset import load  # noqa: E402
from dali_gallery.pipelines.replay import shard_preview  # noqa: E402
from dali_gallery.pipelines.shards import shard_seed  # noqa: E402

PRESET = {
    "format": "dali-gallery/preset", "version": 1, "seed": 2024, "name": "ddp proof",
    "steps": [
        {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
        {"op": "hsv", "params": {"hue": {"uniform": [-30, 30]},
                                 "saturation": {"uniform": [0.7, 1.3]}}},
        {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
    ],
    "output": {"resize_shorter": 128, "crop": [112, 112], "mean": [0.485, 0.456, 0.406],
               "std": [0.229, 0.224, 0.225], "layout": "CHW", "dtype": "float32",
               "mirror_probability": 0.5},
}
SAMPLES = Path(__file__).resolve().parents[1] / "gallery" / "samples"


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", help="image folder (default: --make-images JPEGs in OUT)")
    p.add_argument("--make-images", type=int, default=256,
                   help="without --images: write this many JPEGs cut from the samples")
    p.add_argument("--out", required=True, help="folder for ddp_proof.json")
    p.add_argument("--device", choices=["gpu", "cpu"], default="gpu")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--steps", type=int, default=20, help="training steps per rank")
    p.add_argument("--bench-batches", type=int, default=50, help="batches per loader timing")
    p.add_argument("--threads", type=int, default=4, help="DALI threads per rank")
    return p.parse_args()


def make_images(folder: Path, count: int) -> None:
    """Varied JPEGs (crops of the bundled samples at several sizes), named in reader order."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    photos = [Image.open(f).convert("RGB") for f in sorted(SAMPLES.glob("*.jpg"))]
    for i in range(count):
        img = photos[i % len(photos)]
        w, h = 160 + (i * 37) % 160, 140 + (i * 53) % 140
        x, y = (i * 13) % (img.width - 100), (i * 7) % (img.height - 100)
        img.crop((x, y, x + 100, y + 100)).resize((w, h)).save(folder / f"img_{i:05d}.jpg",
                                                               quality=90)


def to_numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def loader(module, images: str, args, shard: int, shards: int, device_id: int | None):
    pipe = module.create_pipeline(images, args.batch_size, num_threads=args.threads,
                                  device_id=device_id, shard_id=shard, num_shards=shards,
                                  random_shuffle=False)
    return DALIGenericIterator(pipe, ["images", "labels"], reader_name="Reader",
                               last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True)


def next_batch(it) -> tuple[torch.Tensor, torch.Tensor]:
    try:
        out = next(it)
    except StopIteration:  # end of the shard's epoch: auto_reset starts the next
        out = next(it)
    return out[0]["images"], out[0]["labels"].reshape(-1).long()


def loader_rate(it, batches: int, device: str) -> float:
    """Images/s of the loader alone (every batch consumed as a torch tensor)."""
    for _ in range(3):  # warm up: threads started, files in the page cache
        next_batch(it)
    n, t0 = 0, time.perf_counter()
    for _ in range(batches):
        images, _ = next_batch(it)
        n += images.shape[0]
    if device == "gpu":
        torch.cuda.synchronize()
    return n / (time.perf_counter() - t0)


def main() -> int:
    args = parse_args()
    gpu = args.device == "gpu"
    dist.init_process_group("nccl" if gpu else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device_id = 0 if gpu else None
    if gpu:
        torch.cuda.set_device(0)
    out = Path(args.out)
    images = Path(args.images) if args.images else out / "images"
    if rank == 0:
        out.mkdir(parents=True, exist_ok=True)
        if not args.images:
            make_images(images, args.make_images)
    dist.barrier()

    preset = load(PRESET)
    with tempfile.TemporaryDirectory() as tmp:
        module = import_source(export_code(preset), Path(tmp), f"ddp_proof_rank{rank}")
        report = run(module, preset, str(images), args, rank, world, device_id)
    gathered: list = [None] * world
    dist.all_gather_object(gathered, report)
    ok = True
    if rank == 0:
        summary = summarise(gathered, args, world)
        (out / "ddp_proof.json").write_text(json.dumps(summary, indent=1))
        ok = all(v is not False for v in summary["checks"].values())
        print(json.dumps({"checks": summary["checks"], "throughput": summary["throughput"]},
                         indent=1))
    flag = torch.tensor([int(ok)], device="cuda" if gpu else "cpu")
    dist.broadcast(flag, 0)
    dist.destroy_process_group()
    return 0 if int(flag.item()) else 1


def run(module, preset, images: str, args, rank: int, world: int,
        device_id: int | None) -> dict:
    device = args.device
    # 1. the preview of this rank's shard (its first files, its seed, the tail)
    engine = PreviewEngine(device)
    shard_view, batch = shard_preview(engine, preset, images, shard_id=rank, num_shards=world,
                                      batch_size=args.batch_size)
    render = engine.render(shard_view, tail=True)
    preview = render.first_draw()
    records = [r.to_dict() for r in render.records]
    engine.close()

    # 2. the loader alone: one GPU first (rank 0, the others wait), then every rank at once
    single = None
    if rank == 0:
        alone = loader(module, images, args, 0, 1, device_id)
        single = loader_rate(alone, args.bench_batches, device)
        del alone
    dist.barrier()
    it = loader(module, images, args, rank, world, device_id)
    first_images, first_labels = next_batch(it)
    first = [to_numpy(x) for x in first_images]
    equal = len(first) == len(preview) and all(
        a.shape == b.shape and np.array_equal(a, b) for a, b in zip(first, preview, strict=True))
    diff = max((float(np.abs(a.astype(np.float64) - b).max()) for a, b in
                zip(first, preview, strict=True) if a.shape == b.shape), default=None)
    dist.barrier()
    rate = loader_rate(it, args.bench_batches, device)

    # 3. a tiny model trained with DDP on the same loader
    torch.manual_seed(0)
    dev = torch.device("cuda", 0) if device == "gpu" else torch.device("cpu")
    classes = 1000
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(16, classes)).to(dev)
    ddp = torch.nn.parallel.DistributedDataParallel(model, device_ids=[0] if device == "gpu"
                                                    else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    losses, n = [], 0
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(args.steps):
        x, y = next_batch(it)
        loss = torch.nn.functional.cross_entropy(ddp(x.to(dev)), y.to(dev) % classes)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        n += x.shape[0]
    if device == "gpu":
        torch.cuda.synchronize()
    train_rate = n / (time.perf_counter() - t0)
    return {
        "rank": rank, "shard_seed": shard_seed(preset.seed, rank), "files": batch.files,
        "labels_preview": batch.labels, "labels_trained": to_numpy(first_labels).tolist(),
        "first_batch_equals_preview": equal, "max_abs_diff": diff, "records": records,
        "loader_images_per_s": rate, "single_gpu_loader_images_per_s": single,
        "train_images_per_s": train_rate, "losses": losses,
        "device_name": torch.cuda.get_device_name(0) if device == "gpu" else "cpu",
    }


def summarise(reports: list[dict], args, world: int) -> dict:
    values = [[r["values"] for r in rep["records"]] for rep in reports]
    total = sum(r["loader_images_per_s"] for r in reports)
    single = reports[0]["single_gpu_loader_images_per_s"]
    checks = {
        "first_batch_equals_preview_every_rank": all(r["first_batch_equals_preview"]
                                                     for r in reports),
        "labels_equal_preview_every_rank": all(r["labels_preview"] == r["labels_trained"]
                                               for r in reports),
        "ranks_read_different_files": None if world == 1 else
        len({tuple(r["files"]) for r in reports}) == world,
        "ranks_draw_different_parameters": None if world == 1 else
        all(values[i] != values[j] for i in range(world) for j in range(i + 1, world)),
        "losses_finite": all(bool(np.isfinite(r["losses"]).all()) for r in reports),
    }
    return {
        "world_size": world, "device": args.device, "batch_size": args.batch_size,
        "preset": PRESET, "checks": checks,
        "throughput": {
            "loader_images_per_s_per_rank": [round(r["loader_images_per_s"], 1)
                                             for r in reports],
            "loader_images_per_s_total": round(total, 1),
            "single_gpu_loader_images_per_s": round(single, 1),
            "scaling_vs_single": round(total / single, 3),
            "train_images_per_s_per_rank": [round(r["train_images_per_s"], 1)
                                            for r in reports],
            "train_images_per_s_total": round(sum(r["train_images_per_s"] for r in reports), 1),
            "bench_batches": args.bench_batches, "train_steps": args.steps,
        },
        "ranks": reports,
    }


if __name__ == "__main__":
    sys.exit(main())
