"""The hand-written part of the exported training module: reading (flat folders, non-UTF-8
names), decoding, sharding, checkpoints, ``create_pipeline`` and the script's ``main``.

A ``str.format`` template (braces doubled) that :func:`pipelines.export.export_code` fills with
the preset's flags and the generated ``augment``/``finish`` calls. Kept apart from the code that
assembles the module so that each stays readable.
"""

SOURCE_PARAM = ", source=None"
"""``augment``'s parameter when a step reads the input images' size (``{source}``)."""
SOURCE_ARG = ", source=source"
SOURCE_LINE = "    source = fn.peek_image_shape(jpegs)  # on the host: no wait for the decoder\n"
"""What the training pipeline passes it: the size from the encoded images' headers, on the
host (with the EXIF orientation, as the decoder applies it), so that step need not wait for
the GPU decoder (a crop's one-pixel guard read from the decoded images cost the exported
detection pipeline ~9 % of its images/s on an H100)."""
SOURCE_DOC = ("\n\n    source: the images' shape as fn.peek_image_shape gives it (None: read "
              "from\n    the images).\n    ")

_READ = '''\
@pipeline_def(enable_conditionals={conditionals})
def training_pipeline(
    reader,
    aug_seed,
    shard_id,
    num_shards,
    shuffle,
    dec,
    hw_decoder_load,
):
    """Read, decode and augment; returns (images, labels)."""
    jpegs, labels = fn.readers.file(
        **reader,
        shard_id=shard_id,
        num_shards=num_shards,
        random_shuffle=shuffle,
        dont_use_mmap=True,
        pad_last_batch=True,  # exact epochs: the iterator drops the padding
        name="Reader",
    )
    images = fn.decoders.image(
        jpegs, device=dec, output_type=types.RGB, hw_decoder_load=hw_decoder_load
    )
{source_line}    images = augment(images, seed=aug_seed{source})
{finish}    return images, labels


def create_pipeline(
    file_root,
    batch_size,
    num_threads=4,
    device_id=0,
    seed=SEED,
    shard_id=0,
    num_shards=1,
    random_shuffle=True,
    hw_decoder_load=HW_DECODER_LOAD,
    enable_checkpointing=False,
    checkpoint=None,
):
    """The training pipeline.

    device_id=None runs on the CPU; otherwise decoding is "mixed" and the augmentations
    run on that GPU. For multi-GPU training give each process its own device_id and
    shard_id, num_shards = the number of processes, and the same seed. Labels are the
    class subfolder indices, or file indices for a flat folder of images.

    Each shard runs with aug_seed = shard_seed(seed, shard_id): it reads its own files
    and draws its own augmentations (with one seed, every GPU would draw the same values
    in the same order). Shard 0 keeps seed, so one GPU trains what the preview showed.

    hw_decoder_load: the share of each batch nvJPEG gives to the GPU's hardware JPEG
    decoder. The default sends every file it accepts there, whatever the batch size, so
    training decodes exactly the pixels the preview showed. DALI's own default, 0.65,
    splits each batch with the CUDA decoder (they differ by up to 4 grey levels per
    pixel): pass it for the split's throughput (see the README's GPU figures).

    enable_checkpointing=True lets pipe.checkpoint() return the pipeline's state (the
    reader's position and every random generator); checkpoint=<those bytes> builds a
    pipeline that goes on from there, batch for batch (DALI's checkpointing guide).
    """
{checks}    check_shard(shard_id, num_shards)
    aug_seed = shard_seed(seed, shard_id)
    reader, keep = reader_args(file_root)
    pipe = training_pipeline(
        reader=reader,
        aug_seed=aug_seed,
        shard_id=shard_id,
        num_shards=num_shards,
        shuffle=random_shuffle,
        dec="cpu" if device_id is None else "mixed",
        hw_decoder_load=hw_decoder_load,
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=device_id,
        seed=aug_seed,
        enable_checkpointing=enable_checkpointing or checkpoint is not None,
        checkpoint=checkpoint,
    )
    pipe.file_list_folder = keep  # the file list lives as long as the pipeline
    return pipe


def reader_args(file_root):
    """readers.file's arguments for file_root, and the temporary folder they need (or
    None). DALI takes string arguments only as UTF-8: a folder whose path, or a flat
    folder whose file names, are other bytes is read through a link with a UTF-8 name
    and a file list written as bytes (labels stay the file indices)."""
    file_root = os.fsdecode(file_root)
    files = flat_folder_files(file_root)
    try:
        for name in [file_root, *(files or [])]:
            name.encode("utf-8")
        return {{"file_root": file_root, "files": files}}, None
    except UnicodeEncodeError:
        pass
    keep = tempfile.TemporaryDirectory(prefix="dali-file-list-")
    root = os.path.join(keep.name, "root")
    os.symlink(os.path.abspath(file_root), root)
    if files is None:
        return {{"file_root": root}}, keep
    listed = os.path.join(keep.name, "files.txt")
    with open(listed, "wb") as f:
        for label, name in enumerate(files):
            if "\\n" in name or "\\r" in name:
                raise ValueError(
                    f"{{name!r}}: readers.file cannot read a file whose name holds "
                    "a line break from a file list; rename it"
                )
            f.write(os.fsencode(name) + b" %d\\n" % label)
    return {{"file_root": root, "file_list": listed}}, keep


'''

CHECKPOINT_TEMPLATE = '''\
def checkpoint_file(checkpoint_dir, iteration):
    """Where batch_at() saves the state from which the next batch is `iteration`; the
    settings it was saved with go beside it, in the same name + ".json"."""
    return os.path.join(checkpoint_dir, f"iteration_{{iteration:08d}}.cpt")


def read_checkpoint(path, settings):
    """(iteration, state, samples) of a checkpoint saved by batch_at(); ValueError if it
    was saved with other settings: its batches would differ without any error."""
    try:
        with open(path + ".json", encoding="utf-8") as f:
            saved = json.load(f)
        with open(path, "rb") as f:
            state = f.read()
        iteration, saved_settings = saved["iteration"], saved["settings"]
        saved_preset = json.loads(saved_settings["preset"])
        if not isinstance(iteration, int) or not isinstance(saved_preset, dict):
            raise ValueError("its .json is not batch_at()'s")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError(
            f"checkpoint {{path!r}}: {{e}}; restore a file saved by --checkpoint-every, "
            "with its .json beside it"
        ) from None
    wrong = [
        f"{{k}} {{saved_settings.get(k)!r}} (this run: {{v!r}})"
        for k, v in settings.items()
        if k != "preset" and saved_settings.get(k) != v
    ]
    # the preset's own seed is only the default of the run's (compared above): --seed S
    # trains what the preset exported with seed S does, and restores its checkpoints
    this_preset = json.loads(settings["preset"])
    if dict(saved_preset, seed=None) != dict(this_preset, seed=None):
        wrong.append("another preset")
    if wrong:
        raise ValueError(f"checkpoint {{path!r}} was saved with " + ", ".join(wrong))
    return iteration, state, saved_settings.get("samples")


def replay(
    inputs,
    batch_size,
    iteration,
    restore,
    checkpoint_every,
    checkpoint_dir,
    max_batches,
    num_threads,
    **run,
):
    """The outputs of batch `iteration` (0 = the first) of create_pipeline(*inputs,
    batch_size, **run), from the start or from the checkpoint file `restore` (saved with
    the same settings); checkpoint_every=K saves the state before every K-th batch in
    checkpoint_dir. max_batches: the most batches it runs (a budget)."""
    if iteration < 0 or checkpoint_every < 0:
        raise ValueError("iteration and checkpoint_every must be 0 or more")
    if checkpoint_every and checkpoint_dir is None:
        raise ValueError(f"checkpoint_every {{checkpoint_every}} needs checkpoint_dir")
    if checkpoint_every:  # as the script's --checkpoint-dir
        os.makedirs(checkpoint_dir, exist_ok=True)
    settings = {{
        "batch_size": batch_size,
        "seed": run["seed"],
        "shard_id": run["shard_id"],
        "num_shards": run["num_shards"],
        "random_shuffle": run["random_shuffle"],
        "device": "cpu" if run["device_id"] is None else "gpu",
        "preset": PRESET_JSON,
    }}
    start, state, samples = 0, None, None
    if restore:
        start, state, samples = read_checkpoint(restore, settings)
    if iteration < start:
        raise ValueError(
            f"{{restore!r}} is the state before batch {{start}}, after batch {{iteration}}: "
            "replay that from the start or from an earlier checkpoint"
        )
    if max_batches is not None and iteration + 1 - start > max_batches:
        raise ValueError(
            f"batch {{iteration}} is {{iteration + 1 - start}} batches away, more than "
            f"{{max_batches}}: restore a checkpoint saved closer to it"
        )
    pipe = create_pipeline(
        *inputs,
        batch_size,
        num_threads=num_threads,
        enable_checkpointing=checkpoint_every > 0,
        checkpoint=state,
        **run,
    )
    pipe.build()  # another dataset (files added or removed) gives other batches too
    settings["samples"] = pipe.reader_meta("Reader")["epoch_size"]
    if samples is not None and samples != settings["samples"]:
        raise ValueError(
            f"checkpoint {{restore!r}} was saved over {{samples}} samples, this run reads "
            f"{{settings['samples']}}: restore it on the dataset it was saved on"
        )
    for i in range(start, iteration + 1):
        if checkpoint_every and i % checkpoint_every == 0:
            path = checkpoint_file(checkpoint_dir, i)
            pipe.checkpoint(path)
            with open(path + ".json", "w", encoding="utf-8") as f:
                json.dump({{"iteration": i, "settings": settings}}, f)
        outputs = pipe.run()
    return outputs


def batch_arguments(parser, order):
    """The command line's batch_at() options; `order`: what --no-shuffle reads in."""
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--no-shuffle", action="store_true", help=f"read in {{order}}")
    parser.add_argument("--shard", type=int, default=0, help="this process's shard_id")
    parser.add_argument("--num-shards", type=int, default=1)
    parser.add_argument("--iteration", type=int, default=0, help="0: the first batch")
    parser.add_argument("--checkpoint-every", type=int, default=0, metavar="K")
    parser.add_argument("--checkpoint-dir", help="folder for --checkpoint-every")
    parser.add_argument("--restore", metavar="FILE", help="a saved checkpoint")
    parser.add_argument("--out", default="batch.npz")


def batch_options(parser, args):
    """batch_at()'s keyword arguments from the parsed command line."""
    if args.checkpoint_every and not args.checkpoint_dir:
        parser.error("--checkpoint-every needs --checkpoint-dir")
    return {{
        "batch_size": args.batch_size,
        "iteration": args.iteration,
        "device_id": 0 if args.device == "gpu" else None,
        "seed": args.seed,
        "shard_id": args.shard,
        "num_shards": args.num_shards,
        "random_shuffle": not args.no_shuffle,
        "restore": args.restore,
        "checkpoint_every": args.checkpoint_every,
        "checkpoint_dir": args.checkpoint_dir,
    }}


def script_batch(parser, args, inputs):
    """batch_at(*inputs) for the command line. A missing --images folder or --out folder
    (checked before the batch runs) or a file DALI cannot read or decode ends the script
    with one paragraph naming it (exit 2; 1 when DALI fails) instead of a traceback."""
    if not os.path.isdir(args.images):
        parser.error(
            f"--images {{args.images!r}} is not a folder; expected the folder that holds "
            "the images to read"
        )
    folder = os.path.dirname(os.path.abspath(args.out))
    if not os.path.isdir(folder):
        parser.error(
            f"--out {{args.out!r}} cannot be written: its folder {{folder!r}} does not "
            "exist; create it or write the .npz file elsewhere"
        )
    options = batch_options(parser, args)
    try:
        return batch_at(*inputs, **options)
    except (ValueError, OSError) as e:
        parser.error(str(e))
    except RuntimeError as e:
        # DALI's own failure: most often a file it cannot read or decode
        parser.exit(
            1,
            f"{{parser.prog}}: error: DALI stopped reading --images {{args.images!r}}: "
            f"{{' '.join(str(e).split())}} (each file with an image extension must be an "
            "image DALI decodes; dali-gallery check-images FOLDER lists those that are "
            "not)\\n",
        )


def save_npz(parser, path, arrays):
    """np.savez(path): a folder that cannot be written is one paragraph (exit 2)."""
    try:
        np.savez(path, **arrays)
    except OSError as e:  # read-only, full, a folder of that name, ...
        parser.error(f"--out {{path!r}} cannot be written: {{e.strerror or e}}")


'''
"""Saving, reading and replaying to checkpoints with their settings, and the command line's
batch options: shared by the module with labels (:mod:`pipelines.export_labels_template`)."""

_BATCH = '''\
def batch_at(
    file_root,
    batch_size,
    iteration=0,
    device_id=None,
    seed=SEED,
    shard_id=0,
    num_shards=1,
    random_shuffle=True,
    restore=None,
    checkpoint_every=0,
    checkpoint_dir=None,
    num_threads=4,
    max_batches=None,
):
    """Batch `iteration` (0 = the first) of a shard as (images, labels) numpy arrays,
    replayed from the start or from a checkpoint (replay()). dali-gallery's `render
    --iteration` calls this function.
    """
    images, labels = replay(
        (file_root,),
        batch_size,
        iteration,
        restore,
        checkpoint_every,
        checkpoint_dir,
        max_batches,
        num_threads,
        device_id=device_id,
        seed=seed,
        shard_id=shard_id,
        num_shards=num_shards,
        random_shuffle=random_shuffle,
    )
    if device_id is not None:
        images, labels = images.as_cpu(), labels.as_cpu()
    labels = np.concatenate([np.array(lab).reshape(-1) for lab in labels])
    return [np.array(images[i]) for i in range(len(images))], labels


# Training with PyTorch: one process per GPU, e.g. torchrun --nproc_per_node N train.py
# (without torchrun it is one process: on a GPU, or on the CPU where there is none)
#
#     import torch
#     from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
#
#     rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
#     gpu = int(os.environ.get("LOCAL_RANK", 0)) if torch.cuda.is_available() else None
#     pipe = create_pipeline(
#         "/data/train", batch_size=64, device_id=gpu,
#         shard_id=rank, num_shards=world,  # same seed: each shard draws its own
#     )
#     loader = DALIGenericIterator(
#         pipe, ["images", "labels"], reader_name="Reader",
#         last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True,
#     )
#     for epoch in range(10):
#         for batch in loader:
#             images, labels = batch[0]["images"], batch[0]["labels"]
#             ...  # forward, loss, backward


def main(argv=None):
    """Write batch --iteration (default: the first) of a shard to an .npz file:
    image_0000, image_0001, ..., labels."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--images", required=True, help="image folder")
    batch_arguments(parser, "file order")
    args = parser.parse_args(argv)
    images, labels = script_batch(parser, args, (args.images,))
    arrays = {{f"image_{{i:04d}}": image for i, image in enumerate(images)}}
    arrays["labels"] = labels
    save_npz(parser, args.out, arrays)
    print(f"wrote batch {{args.iteration}} of shard {{args.shard}} to {{args.out}}")


if __name__ == "__main__":
    main()
'''

PIPELINE_TEMPLATE = _READ + CHECKPOINT_TEMPLATE + _BATCH
