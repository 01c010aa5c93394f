"""The hand-written part of the exported training module with labels: reading a COCO dataset
(``fn.readers.coco`` plus the keypoint table), ``create_pipeline``, ``batch_at``, a PyTorch
detection example and the script's ``main``.

``str.format`` templates (braces doubled) that :mod:`pipelines.export_labels` fills with the
chain's flags and the label variables; the checkpoint functions are the plain module's own
(:data:`pipelines.export_template.CHECKPOINT_TEMPLATE`), with the replay to a batch and the
command line's batch options.
"""

from .export_template import CHECKPOINT_TEMPLATE

MASK_LINES = '''\
    masks = fn.cast(masks, dtype=types.UINT8)  # category ids 1 to 255 (checked)
    if dec == "mixed":
        masks = masks.gpu()
    # drawn at the annotations' width x height; the size read from the JPEG headers (on
    # the host: the masks need not wait for the GPU decoder)
    size = fn.peek_image_shape(jpegs, dtype=types.FLOAT)
    masks = fn.resize(
        masks,
        size=fn.stack(size[0], size[1]),
        interp_type=types.INTERP_NN,
        antialias=False,
    )
'''
"""The reader's int32 masks as the chain's uint8 category maps, at the decoded image's size
(nearest neighbour, as the preview feeds them)."""

_READ = '''\
@pipeline_def(enable_conditionals={conditionals})
def training_pipeline(
    file_root,
    annotations_file,
    keypoints_of,
    aug_seed,
    shard_id,
    num_shards,
    shuffle,
    dec,
    hw_decoder_load,
    pad_labels,
    label_outputs,
):
    """Read, decode and augment; returns the images, then label_outputs (some of
    {outputs}, in that order)."""
    {reader_outputs} = fn.readers.coco(
        file_root=file_root,
        annotations_file=annotations_file,
        ltrb=True,
        ratio=True,
        avoid_class_remapping=True,
        skip_empty=False,
        pixelwise_masks={masks},
        image_ids=True,
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
    classes = fn.reshape(classes, shape=[-1])
    if keypoints_of is None:  # none in the file, or not returned: no keypoint operators
        keypoints = None
    else:
        keypoints = fn.python_function(
            classes,
            image_ids,
            function=keypoints_of.batch,
            batch_processing=True,
            device="cpu",
        )
{mask_lines}{source_line}    labels = ({names})
    images, labels = augment(images, labels, seed=aug_seed{source})
{finish}    if labels[2] is None and "keypoints" in label_outputs:
        labels = (*labels[:2], _no_keypoints(labels[1]), *labels[3:])
    if pad_labels:
        labels = pad_per_batch(*labels)
    return (images, *[labels[LABEL_KEYS.index(key)] for key in label_outputs])


def checked_annotations(annotations_file, file_root):
    """The annotations file as dali-gallery's preview reads it: the path of a checked
    copy without the entries that would mislead the reader or the model (a box outside
    its image, an unknown category, a missing image file, ...), each printed to stderr
    as "left out: FILE: REASON". The copy is removed when the process exits."""
    with open(annotations_file, encoding="utf-8-sig") as f:
        doc = json.load(f)
    lists = ("images", "annotations", "categories")
    if isinstance(doc, dict):
        doc.setdefault("annotations", [])
    if not isinstance(doc, dict) or not all(isinstance(doc[k], list) for k in lists):
        raise ValueError(
            f"{{annotations_file}}: not a COCO instances file (a JSON object with "
            "'images', 'annotations' and 'categories' lists)"
        )
    available = listed_files(os.fsdecode(file_root), doc["images"])
    origin = readable(os.path.basename(os.fsdecode(annotations_file)))
    images, annotations, categories, problems = check_entries(doc, origin, available)
    for file, reason in problems[:20]:
        print(f"left out: {{file}}: {{reason}}", file=sys.stderr)
    if len(problems) > 20:
        print(f"left out: {{len(problems) - 20}} more entries", file=sys.stderr)
    folder = tempfile.mkdtemp(prefix="coco-checked-")
    atexit.register(shutil.rmtree, folder, True)
    path = os.path.join(folder, "instances_checked.json")
    clean = {{"images": images, "annotations": annotations, "categories": categories}}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(clean, f, ensure_ascii=False, allow_nan=False)
    return path


def pad_per_batch(boxes, classes, keypoints, *masks):
    """Pads every sample's labels to the batch's most boxes, so that a batch stacks into
    one tensor (DALIGenericIterator): boxes and keypoints with 0, labels with -1 (labels
    >= 0 are the real boxes). Masks have their image's size already."""
    boxes = fn.pad(boxes, axes=[0], fill_value=0.0)
    classes = fn.pad(classes, axes=[0], fill_value=-1)
    if keypoints is not None:  # None: not returned
        keypoints = fn.pad(keypoints, axes=[0, 1], fill_value=0.0)
    return (boxes, classes, keypoints, *masks)


def create_pipeline(
    file_root,
    annotations_file,
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
    pad_labels=False,
    label_outputs=LABEL_KEYS,
    check_annotations=True,
):
    """The training pipeline: images with their boxes, labels, keypoints{and_masks}.

    file_root: the image folder; annotations_file: its COCO instances file (file names
    relative to file_root; UTF-8 paths). Images are read in the order of their ids,
    those without annotations too. Boxes are float32 (N, 4): left, top, right, bottom
    relative to the output image (0..1); labels int32 (N,): the category ids as written;
    keypoints float32 (N, K, 3): x, y relative, COCO visibility.{masks_doc} A step
    that moves pixels moves them too; a box keeping less than {min_kept} of its area
    is dropped with its keypoints.

    device_id=None runs on the CPU; otherwise decoding is "mixed" and the augmentations
    run on that GPU. For multi-GPU training give each process its own device_id and
    shard_id, num_shards = the number of processes, and the same seed: each shard runs
    with aug_seed = shard_seed(seed, shard_id), its own files and its own draws. Shard 0
    keeps seed, so one GPU trains what the preview showed.

    hw_decoder_load, enable_checkpointing and checkpoint: as in the module without
    labels (the hardware decoder's share of each batch; pipe.checkpoint() and restoring
    it).

    pad_labels=True pads each sample's labels to the batch's most boxes (pad_per_batch),
    for DALIGenericIterator, which stacks every output of a batch into one tensor;
    label_outputs: the labels the pipeline returns after the images, in that order
    (("boxes", "labels") for a detector).

    check_annotations=True reads the annotations as the preview did: entries that
    would mislead the reader or the model are left out and listed on stderr
    (checked_annotations); a box past an edge by under half a pixel is clipped to the
    image. False hands the file to fn.readers.coco as it is.
    """
    unknown = [key for key in label_outputs if key not in LABEL_KEYS]
    if unknown or not label_outputs:
        raise ValueError(
            f"label_outputs {{list(label_outputs)!r}} is not allowed; expected some of "
            f"{{LABEL_KEYS}}"
        )
{checks}    check_shard(shard_id, num_shards)
    aug_seed = shard_seed(seed, shard_id)
    if check_annotations:
        annotations_file = checked_annotations(annotations_file, file_root)
    table = keypoint_table(annotations_file, masks={masks})
    return training_pipeline(
        file_root=os.fsdecode(file_root),
        annotations_file=os.fsdecode(annotations_file),
        keypoints_of=keypoints_lookup(table)
        if keypoint_count(table) and "keypoints" in label_outputs
        else None,
        aug_seed=aug_seed,
        shard_id=shard_id,
        num_shards=num_shards,
        shuffle=random_shuffle,
        dec="cpu" if device_id is None else "mixed",
        hw_decoder_load=hw_decoder_load,
        pad_labels=pad_labels,
        label_outputs=tuple(label_outputs),
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=device_id,
        seed=aug_seed,
        enable_checkpointing=enable_checkpointing or checkpoint is not None,
        checkpoint=checkpoint,
    )


'''

_BATCH = '''\
def batch_at(
    file_root,
    annotations_file,
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
    """Batch `iteration` (0 = the first) of a shard as (images, labels): a list of numpy
    images and a dict of per-sample lists ({keys}).

    Replayed from the start or from a checkpoint (replay()); dali-gallery's `render
    --iteration --annotations` calls this function.
    """
    outputs = replay(
        (file_root, annotations_file),
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
    host = [out.as_cpu() if hasattr(out, "as_cpu") else out for out in outputs]
    arrays = [[np.array(out[i]) for i in range(len(out))] for out in host]
    return arrays[0], dict(zip(LABEL_KEYS, arrays[1:], strict=True))


# Training a detector with PyTorch: one process per GPU, e.g. torchrun
# --nproc_per_node N train.py. A batch stacks into one tensor only when its images
# share a size: end the chain with a step that sets it, or a training tail that crops
# (the tail's resize, centre crop and mirror move the labels too).
# pad_labels=True pads the boxes and labels of a batch to its most boxes; labels -1
# mark the padding.
#
#     import torch
#     from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
#
#     rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
#     gpu = int(os.environ.get("LOCAL_RANK", 0)) if torch.cuda.is_available() else None
#     pipe = create_pipeline(
#         "/data/coco/train2017", "/data/coco/annotations/instances_train2017.json",
#         batch_size=32, device_id=gpu, shard_id=rank, num_shards=world,
#         pad_labels=True, label_outputs=("boxes", "labels"),
#     )  # the same seed on every rank: each shard draws its own
#     loader = DALIGenericIterator(
#         pipe, ["images", "boxes", "labels"], reader_name="Reader",
#         last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True,
#     )
#     for epoch in range(10):
#         for batch in loader:
#             images = batch[0]["images"]  # (B, H, W, 3) uint8, or the tail's layout
#             boxes, labels = batch[0]["boxes"], batch[0]["labels"]  # (B, M, 4), (B, M)
#             h, w = images.shape[1:3]  # [2:4] with a CHW tail
#             scale = torch.tensor([w, h, w, h], device=boxes.device)
#             targets = [
#                 {{"boxes": b[lab >= 0] * scale, "labels": lab[lab >= 0].long()}}
#                 for b, lab in zip(boxes, labels)
#             ]
#             ...  # torchvision's FasterRCNN: sum(model(x, targets).values())


def main(argv=None):
    """Write batch --iteration (default: the first) of a shard to an .npz file: for
    each sample in batch order, image_0000 and its labels:{npz_keys}."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--images", required=True, help="image folder")
    parser.add_argument(
        "--annotations", required=True, metavar="FILE.json", help="COCO instances file"
    )
    batch_arguments(parser, "id order")
    args = parser.parse_args(argv)
    images, labels = script_batch(parser, args, (args.images, args.annotations))
    arrays = {{}}
    for i, image in enumerate(images):
        arrays[f"image_{{i:04d}}"] = image
        for key in LABEL_KEYS:
            arrays[f"{{key}}_{{i:04d}}"] = labels[key][i]
    save_npz(parser, args.out, arrays)
    print(f"wrote batch {{args.iteration}} of shard {{args.shard}} to {{args.out}}")


if __name__ == "__main__":
    main()
'''

LABELS_PIPELINE_TEMPLATE = _READ + CHECKPOINT_TEMPLATE + _BATCH
"""Fields: conditionals, outputs, reader_outputs, masks, mask_lines, names, finish,
and_masks, masks_doc, min_kept, keys, npz_keys."""
