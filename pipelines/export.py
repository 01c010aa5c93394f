"""Export a preset as one standalone, readable Python module that trains what the preview showed.

The module imports only ``nvidia.dali``, numpy and argparse. Its ``augment`` function is generated
by the same code generator as the preview, with literal values, and it embeds the preset as JSON
so it can be re-imported (:func:`preset_from_module`).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

from . import __version__
from .catalog import CATALOG, Catalog
from .codegen import (
    chain_source,
    custom_sources,
    format_statement,
    function,
    helper_source,
    imports_for,
    split_string,
    tail_lines,
)
from .preset import Preset, PresetError, load

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
"""What a flat image folder may hold; the preview lists folders the same way."""

_PIPELINE = '''\
def flat_folder_files(file_root):
    """Sorted image files of a folder without class subfolders (readers.file needs
    either subfolders or a file list); None when there are subfolders."""
    entries = sorted(os.scandir(file_root), key=lambda entry: entry.name)
    if any(entry.is_dir() for entry in entries):
        return None
    return [e.name for e in entries if e.name.lower().endswith(IMAGE_EXTENSIONS)]


@pipeline_def(enable_conditionals={conditionals})
def training_pipeline(file_root, files, aug_seed, shard_id, num_shards, shuffle, dec):
    """Read, decode and augment; returns (images, labels)."""
    jpegs, labels = fn.readers.file(
        file_root=file_root,
        files=files,
        shard_id=shard_id,
        num_shards=num_shards,
        random_shuffle=shuffle,
        dont_use_mmap=True,
        name="Reader",
    )
    images = fn.decoders.image(jpegs, device=dec, output_type=types.RGB)
    images = augment(images, seed=aug_seed)
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
):
    """The training pipeline.

    device_id=None runs on the CPU; otherwise decoding is "mixed" and the augmentations
    run on that GPU. For multi-GPU training give each process its own device_id and
    shard_id, and num_shards = the number of processes. Labels are the class subfolder
    indices, or file indices for a flat folder of images.
    """
    return training_pipeline(
        file_root=file_root,
        files=flat_folder_files(file_root),
        aug_seed=seed,
        shard_id=shard_id,
        num_shards=num_shards,
        shuffle=random_shuffle,
        dec="cpu" if device_id is None else "mixed",
        batch_size=batch_size,
        num_threads=num_threads,
        device_id=device_id,
        seed=seed,
    )


# Training with PyTorch (one process per GPU; add shard_id/num_shards for several):
#
#     from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy
#
#     pipe = create_pipeline("/data/train", batch_size=64, device_id=0)
#     loader = DALIGenericIterator(
#         pipe, ["images", "labels"], reader_name="Reader",
#         last_batch_policy=LastBatchPolicy.PARTIAL, auto_reset=True,
#     )
#     for epoch in range(10):
#         for batch in loader:
#             images, labels = batch[0]["images"], batch[0]["labels"]
#             ...  # forward, loss, backward


def main(argv=None):
    """Write the first batch to an .npz file: image_0000, image_0001, ..., labels."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--images", required=True, help="image folder")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--no-shuffle", action="store_true", help="read in file order")
    parser.add_argument("--out", default="batch.npz")
    args = parser.parse_args(argv)
    pipe = create_pipeline(
        args.images,
        args.batch_size,
        device_id=0 if args.device == "gpu" else None,
        seed=args.seed,
        random_shuffle=not args.no_shuffle,
    )
    pipe.build()
    images, labels = pipe.run()
    if args.device == "gpu":
        images, labels = images.as_cpu(), labels.as_cpu()
    arrays = {{f"image_{{i:04d}}": np.array(images[i]) for i in range(len(images))}}
    arrays["labels"] = np.concatenate([np.array(lab).reshape(-1) for lab in labels])
    np.savez(args.out, **arrays)
    print(f"wrote {{len(images)}} images to {{args.out}}")


if __name__ == "__main__":
    main()
'''


def export_code(preset: Preset | dict | str | Path, catalog: Catalog = CATALOG) -> str:
    """The standalone training module for a preset (validated first)."""
    preset = load(preset, catalog)
    chain = chain_source(preset, "export", catalog)
    aug = function(
        "augment",
        "images, seed=SEED",
        "The augmentation chain, one block per step as configured in dali-gallery.",
        chain.body,
    )
    finish = ""
    fns = [aug]
    if preset.output is not None:
        fns.append(function("finish", "images, seed=SEED", "The training tail: resize, crop, "
                            "normalise.", tail_lines(preset.output)))
        finish = "    images = finish(images, seed=aug_seed)\n"
    custom = custom_sources(preset, catalog)
    pipeline = _PIPELINE.format(finish=finish, conditionals=chain.conditionals)
    code = "\n\n\n".join(fns) + "\n\n\n" + pipeline
    helpers = helper_source(_used(code))
    if custom:
        helpers = f"{helpers}\n\n\n{custom}" if helpers else custom
    doc = _docstring(preset)
    imports = imports_for(code + helpers)
    preset_json = json.dumps(preset.to_dict(), separators=(",", ":"), ensure_ascii=True)
    extensions = ", ".join(f'"{e}"' for e in IMAGE_EXTENSIONS)
    const = [f"SEED = {preset.seed}", f"IMAGE_EXTENSIONS = ({extensions})", "PRESET_JSON = ("]
    const += split_string(preset_json, "    ")
    const.append(")")
    parts = [doc, "\n".join(imports), "\n".join(const)]
    if helpers:
        parts.append(helpers)
    body = "\n\n".join(parts[:3]) + "\n\n\n" + "\n\n\n".join(parts[3:] + [code])
    return body


def _used(code: str) -> list[str]:
    from .codegen import used_helpers

    return used_helpers(code)


def _docstring(preset: Preset) -> str:
    n = len(preset.active_steps())
    ops = ", ".join(s.op for _, s in preset.active_steps()) or "no steps"
    title = "Augmentation pipeline exported by dali-gallery " + __version__ + "."
    lines = [
        '"""' + title,
        "",
        f"{n} step(s): {_wrap_safe(ops)}.",
        f"Seed {preset.seed}. Run as a script to write the first batch:",
        "",
        "    python THIS_FILE.py --images DIR --batch-size 8 --device cpu --no-shuffle",
        "",
        "or import create_pipeline() in a training script (see the end of the file).",
        '"""',
    ]
    out = []
    for line in lines:
        out.extend(_wrap(line))
    return "\n".join(out)


def _wrap_safe(text: str) -> str:
    return text.replace("\\", "").replace('"""', "")


def _wrap(line: str, width: int = 88) -> list[str]:
    if len(line) <= width:
        return [line]
    words, out, cur = line.split(" "), [], ""
    for w in words:
        if cur and len(cur) + 1 + len(w) > width:
            out.append(cur)
            cur = w
        else:
            cur = f"{cur} {w}" if cur else w
    out.append(cur)
    return out


def preset_from_module(source: str | Path) -> Preset:
    """Re-import the preset embedded in an exported module, without running it."""
    text = Path(source).read_text(encoding="utf-8") if isinstance(source, Path) else source
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise PresetError([f"exported module: not valid Python ({e.msg}, line {e.lineno})"]) from e
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "PRESET_JSON"):
            try:
                value = ast.literal_eval(node.value)
            except ValueError as e:
                raise PresetError(["exported module: PRESET_JSON is not a string literal"]) from e
            if not isinstance(value, str):
                raise PresetError(["exported module: PRESET_JSON is not a string literal"])
            return load(value)
    raise PresetError(["exported module: no PRESET_JSON found; was it exported by dali-gallery?"])


__all__ = ["export_code", "format_statement", "preset_from_module"]
