"""``dali-gallery``: the catalog, export, render, bench, check-images and serve commands.

Bad input (a missing file, an invalid preset, an unknown operator) prints one paragraph and
exits with code 2, without a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from dali_gallery.gallery.cli_output import OutputError, writing
from dali_gallery.pipelines.budget import add_arguments as add_budget_arguments
from dali_gallery.pipelines.budget import configure as configure_budget
from dali_gallery.pipelines.budget import from_args as budget_from_args

if TYPE_CHECKING:
    from dali_gallery.pipelines.engine import PreviewEngine
    from dali_gallery.pipelines.images import ImageProblem
    from dali_gallery.pipelines.preset import Preset

EXIT_BAD_INPUT = 2
MAX_MESSAGE_CHARS = 4000
"""The most a message prints (a preset's problems are already capped and cut)."""


class UsageError(Exception):
    """Bad input from the user: reported as one paragraph, exit code 2."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (UsageError, OutputError) as e:
        _paragraph(str(e))
        return EXIT_BAD_INPUT
    except Exception as e:  # noqa: BLE001 - classified below: user errors vs bugs
        from dali_gallery.pipelines.engine import StepError
        from dali_gallery.pipelines.preset import PresetError

        if isinstance(e, (PresetError, StepError, FileNotFoundError, ValueError)):
            _paragraph(f"{type(e).__name__}: {e}")
            return EXIT_BAD_INPUT
        raise


def _paragraph(text: str) -> None:
    """One paragraph on stderr: bounded, wrapped at 100 columns, no blank lines."""
    if len(text) > MAX_MESSAGE_CHARS:
        text = text[: MAX_MESSAGE_CHARS - 3] + "..."
    lines = [textwrap.fill(line, 100, break_on_hyphens=False, break_long_words=False)
             if len(line) > 100 else line for line in text.splitlines() if line.strip()]
    print("dali-gallery: " + "\n".join(lines), file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dali-gallery", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    ops = sub.add_parser("ops", help="list the operator catalog")
    ops.add_argument("--json", action="store_true", help="machine-readable output")
    ops.add_argument("--category", help="only this category")
    ops.set_defaults(func=cmd_ops)

    exp = sub.add_parser("export", help="export a preset as a standalone DALI training module")
    exp.add_argument("preset", help="preset JSON file")
    exp.add_argument("-o", "--output", required=True, help="the .py file to write")
    exp.add_argument("--labels", choices=["boxes", "masks"], default=None,
                     help="a module that reads a COCO dataset and moves its boxes and keypoints "
                          "(and masks) with the pixels")
    exp.set_defaults(func=cmd_export)

    ren = sub.add_parser("render", help="render the preview grid of a preset")
    ren.add_argument("preset", help="preset JSON file")
    ren.add_argument("--images", required=True, help="folder of images (or one image file)")
    ren.add_argument("--annotations", metavar="FILE.json",
                     help="COCO instances file for --images: labels move with the pixels")
    ren.add_argument("--batch-size", type=int, default=None,
                     help="number of images (default: all, at most 16)")
    ren.add_argument("--draws", type=int, default=3, help="independent draws per image")
    ren.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    ren.add_argument("--seed", type=int, default=None, help="override the preset's seed")
    ren.add_argument("--size", type=int, default=None,
                     help="downscale images so the longer side is at most this (preview only; "
                          "omit for a first draw identical to the exported pipeline)")
    ren.add_argument("--tail", action="store_true", help="apply the preset's training tail")
    ren.add_argument("--out", help="grid image (.png or .jpg); required unless --iteration")
    ren.add_argument("--npz", help="also write the first draw as .npz (export script layout)")
    ren.add_argument("--json", dest="records", help="also write per-sample records as JSON")
    ren.add_argument("--shard", type=int, default=0,
                     help="what shard S of --num-shards trains on: its first files, its seed")
    ren.add_argument("--num-shards", type=int, default=1, help="processes of the training job")
    ren.add_argument("--iteration", type=int, default=None,
                     help="replay batch N of the exported training pipeline itself (needs "
                          "--batch-size, the training run's; writes --npz and/or --out)")
    ren.add_argument("--restore", help="with --iteration: start from a checkpoint saved by the "
                                       "exported script's --checkpoint-every")
    ren.add_argument("--no-shuffle", action="store_true",
                     help="with --iteration: the training run read files in order")
    add_budget_arguments(ren)
    ren.set_defaults(func=cmd_render)

    chk = sub.add_parser("check-images", help="find files the training pipeline cannot decode")
    chk.add_argument("folder")
    add_budget_arguments(chk, ("image",))
    chk.set_defaults(func=cmd_check_images)

    ben = sub.add_parser("bench", help="measure the preview engine and the exported pipeline")
    ben.add_argument("--device", choices=["auto", "cpu", "gpu"], default="cpu")
    ben.add_argument("--json", action="store_true")
    ben.add_argument("--quick", action="store_true", help="fewer repetitions (smoke test)")
    ben.add_argument("--only", default=None,
                     help="comma-separated sections: engine,scrub,memory,export,widget,gallery")
    ben.set_defaults(func=cmd_bench)

    srv = sub.add_parser("serve", help="serve the gallery app with Voila")
    from dali_gallery.gallery.serve_cli import main_args

    main_args(srv)
    srv.set_defaults(func=cmd_serve)

    from dali_gallery.gallery.import_cli import add_parsers as add_import_parsers

    add_import_parsers(sub)  # import, export-library
    return p


def cmd_ops(args: argparse.Namespace) -> int:
    from dali_gallery.pipelines.catalog import CATALOG, CATEGORIES
    from dali_gallery.pipelines.device import gpu_count

    has_gpu = gpu_count() > 0
    ops = [op for op in CATALOG.values() if not args.category or op.category == args.category]
    if args.category and args.category not in CATEGORIES:
        raise UsageError(f"unknown category {args.category!r}; choose from {', '.join(CATEGORIES)}")
    if args.json:
        data = []
        for op in ops:
            d = op.to_json()
            d["available_here"] = "gpu" in op.devices if has_gpu else op.cpu
            data.append(d)
        print(json.dumps({"gpu_present": has_gpu, "operators": data}, indent=2))
        return 0
    for cat in CATEGORIES:
        group = [op for op in ops if op.category == cat]
        if not group:
            continue
        print(f"\n== {cat} ==")
        for op in group:
            devices = "/".join(d.upper() for d in sorted(op.devices))
            note = "" if op.cpu or has_gpu else "  [unavailable here: needs a GPU]"
            print(f"{op.name:34} {devices:8} {op.doc}{note}")
            for p in op.params:
                rng = ""
                if p.bounds:
                    rng = f"[{p.bounds[0]:g}, {p.bounds[1]:g}] slider [{p.slider[0]:g}, " \
                          f"{p.slider[1]:g}]"
                elif p.choices:
                    rng = "|".join(map(str, p.choices))
                when = "run time" if p.runtime else "build time"
                print(f"    {p.name:22} {p.kind:5} default {p.default!s:10} {rng} {p.unit} "
                      f"({when})")
            if op.labels is not None:
                print(f"    labels: {op.labels.describe()}")
    return 0


def _load_preset(path: str):
    """The preset file named on the command line (size-capped; FIFOs and devices refused)."""
    from dali_gallery.pipelines.preset import load_file

    return load_file(path)


def cmd_export(args: argparse.Namespace) -> int:
    from dali_gallery.pipelines.batch_shape import mixed_size_warning
    from dali_gallery.pipelines.export import export_code
    from dali_gallery.pipelines.grid import output_problem
    from dali_gallery.pipelines.label_code import LabelSet

    labels = None if args.labels is None else LabelSet(masks=args.labels == "masks")
    preset = _load_preset(args.preset)
    code = export_code(preset, labels=labels)
    out = Path(args.output)
    if (why := output_problem(out)) is not None:
        raise UsageError(f"cannot write {args.output!r}: {why}")
    try:
        out.write_text(code, encoding="utf-8")
    except OSError as e:  # read-only, no space, ...: the user's to fix, no traceback
        raise UsageError(f"cannot write {args.output!r}: {e.strerror or e}") from None
    print(f"wrote {out} ({len(code.splitlines())} lines)")
    if (warning := mixed_size_warning(preset)) is not None:  # as the builder: the module's
        print(f"warning: {warning}", file=sys.stderr)  # PyTorch example would fail later
    return 0


def cmd_render(args: argparse.Namespace) -> int:
    from dali_gallery.pipelines.engine import PreviewEngine
    from dali_gallery.pipelines.grid import grid_image, save_npz

    preset = _load_preset(args.preset)
    if args.seed is not None:
        if not 0 <= args.seed < 2**31:
            raise UsageError(f"--seed {args.seed} is not allowed; expected [0, 2147483647]")
        preset.seed = args.seed
    _check_render_numbers(args)
    from dali_gallery.pipelines.grid import output_problem

    for option, path in (("--out", args.out), ("--npz", args.npz), ("--json", args.records)):
        if path is not None and (why := output_problem(path, option == "--out")) is not None:
            raise UsageError(f"{option} {path!r} cannot be written: {why}")
    src = Path(args.images)
    if not src.exists():
        raise UsageError(f"--images {args.images!r} does not exist")
    if args.iteration is not None:
        return _render_iteration(args, preset)
    if args.restore or args.no_shuffle:
        raise UsageError("--restore and --no-shuffle apply to --iteration only (a preview reads "
                         "the files in order)")
    if args.out is None:
        raise UsageError("--out (the grid image) is required")
    configure_budget(budget_from_args(args))
    engine = PreviewEngine(args.device)
    if args.annotations is not None:
        if not Path(args.annotations).is_file():
            raise UsageError(f"--annotations {args.annotations!r} is not a file")
        from dali_gallery.gallery.cli_annotated import render_annotated

        return render_annotated(args, preset, engine)
    labels = None
    if src.is_dir():  # the exported pipeline's first batch of the shard, its labels
        preset, labels = _load_folder(args, preset, engine)
    elif args.shard != 0 or args.num_shards != 1:
        raise UsageError(f"--shard and --num-shards need a folder; --images {args.images!r} "
                         "is a file")
    else:
        _print_skipped(engine.set_images(src, max_side=args.size))
    if not engine.images:
        raise UsageError(f"no usable images in {args.images!r}")
    if args.npz and preset.output is not None and not args.tail:  # not the exported batch
        print("note: --npz gets a first draw with no training tail (the preset's output: add "
              "--tail), which the exported module's batch has", file=sys.stderr)
    render = engine.render(preset, draws=args.draws, tail=args.tail)
    grid = grid_image(render, engine.images, preset)
    with writing("--out", args.out):
        grid.save(args.out)
    if args.npz:
        with writing("--npz", args.npz):
            save_npz(args.npz, render.first_draw(), labels)
    if args.records:
        records = json.dumps(
            {"names": engine.names, "records": [r.to_dict() for r in render.records]}, indent=1)
        with writing("--json", args.records):
            Path(args.records).write_text(records)
    print(f"rendered {render.n_images} images x {render.draws} draws on {render.device} in "
          f"{render.ms:.0f} ms -> {args.out}")
    engine.close()
    return 0


def _check_render_numbers(args: argparse.Namespace) -> None:
    """Numbers argparse accepts but a render cannot use, refused by their option's name."""
    if args.iteration is None:
        from dali_gallery.pipelines.engine import MAX_BATCH as top
    else:
        from dali_gallery.pipelines.replay import MAX_REPLAY_BATCH_SIZE as top
    if args.batch_size is not None and not 1 <= args.batch_size <= top:
        raise UsageError(f"--batch-size {args.batch_size} is not allowed; expected 1 to {top}"
                         + (" (omit it for the first images, at most 16)"
                            if args.iteration is None else ""))
    if args.size is not None and args.size < 1:
        raise UsageError(f"--size {args.size} is not allowed; expected a longer side of 1 or "
                         "more pixels (omit it for the original size)")


def _load_folder(args: argparse.Namespace, preset: Preset,
                 engine: PreviewEngine) -> tuple[Preset, list[int]]:
    """Loads what the exported pipeline reads first from ``--images`` (the shard's files, in
    its order) and says on stderr how the preview differs from it; returns the preset to
    render (the shard's seed) and the loaded images' labels."""
    from dali_gallery.pipelines.folder_preview import folder_preview

    view = folder_preview(engine, preset, args.images, shard_id=args.shard,
                          num_shards=args.num_shards, batch_size=args.batch_size,
                          max_side=args.size)
    _print_skipped(view.skipped)
    for note in view.notes(repr(args.images)):
        print(f"note: {note}", file=sys.stderr)
    return view.preset, view.labels


def _print_skipped(problems: Sequence[ImageProblem]) -> None:
    """Files the preview could not load, one per line on stderr (the rest are rendered)."""
    for p in problems:
        print(f"skipped {p.name}: {p.reason}", file=sys.stderr)


def _render_iteration(args: argparse.Namespace, preset) -> int:
    """``render --iteration N``: batch N of a shard, replayed by the exported pipeline."""
    from dali_gallery.pipelines.grid import save_npz
    from dali_gallery.pipelines.replay import batch_sheet, replay

    if args.batch_size is None:
        raise UsageError("--iteration needs --batch-size: the training run's batch size (batch "
                         "N depends on it)")
    if not (args.npz or args.out):
        raise UsageError("--iteration writes the batch to --npz and/or a picture of it to --out")
    extra = [f for f, on in (("--size", args.size), ("--tail", args.tail),
                             ("--json", args.records)) if on]
    if extra:
        raise UsageError(f"{', '.join(extra)} do(es) not apply to --iteration: the training "
                         "pipeline reads the files as they are, applies the preset's tail, and "
                         "records nothing")
    if args.restore is not None and not Path(args.restore).is_file():
        raise UsageError(f"--restore {args.restore!r} is not a file")
    result = replay(preset, args.images, iteration=args.iteration, batch_size=args.batch_size,
                    shard_id=args.shard, num_shards=args.num_shards, device=args.device,
                    random_shuffle=not args.no_shuffle, restore=args.restore,
                    annotations=args.annotations)
    from dali_gallery.gallery.cli_annotated import print_problems

    print_problems(result.problems)
    if args.npz and result.annotated is not None:
        from dali_gallery.pipelines.export_labels import save_label_npz

        with writing("--npz", args.npz):
            save_label_npz(args.npz, result.images, result.annotated)
    elif args.npz:
        with writing("--npz", args.npz):
            save_npz(args.npz, result.images, result.labels.tolist())
    if args.out:
        sheet = batch_sheet(result.images, result.labels)
        with writing("--out", args.out):
            sheet.save(args.out)
    start = f" from {args.restore}" if args.restore else " from the start"
    print(f"replayed batch {args.iteration} of shard {args.shard} of {args.num_shards}{start} "
          f"on {result.device} in {result.ms:.0f} ms -> {args.npz or args.out}")
    return 0


def cmd_check_images(args: argparse.Namespace) -> int:
    from dali_gallery.pipelines.dataset_check import run_check

    return run_check(args.folder, max_pixels=budget_from_args(args).image_pixels)


def cmd_bench(args: argparse.Namespace) -> int:
    only = args.only.split(",") if args.only else None
    if only is None or "gallery" in only:
        # as the served notebook's kernel does before its imports: the gallery section's cold
        # figure is a first page's, not that of a notebook making its first view right away
        # (that one, and a fresh kernel's, is ``cold_new_kernel``)
        from dali_gallery.pipelines.trace_ahead import prestart

        prestart(args.device)
    from dali_gallery.gallery.bench import run_bench

    return run_bench(device=args.device, as_json=args.json, quick=args.quick, only=only)


def cmd_serve(args: argparse.Namespace) -> int:
    from dali_gallery.gallery.serve_cli import run_from_args

    return run_from_args(args)


if __name__ == "__main__":
    sys.exit(main())
