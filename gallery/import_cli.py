"""``dali-gallery import`` and ``dali-gallery export-library``: bring a torchvision /
Albumentations pipeline in as a preset (with the parity report), and write a preset back as
torchvision v2 or Albumentations code.

Bad input (a file that is not a pipeline, code that is refused) is a ``ValueError`` that the
CLI prints as one paragraph with exit code 2; nothing of the input is ever run.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

MAX_INPUT_BYTES = 256_000
"""The largest pipeline file read (a long pipeline is a few KB; a saved one ~20 KB)."""


def add_parsers(sub: argparse._SubParsersAction) -> None:
    imp = sub.add_parser("import", help="import a torchvision / Albumentations pipeline as a "
                                        "preset, with a parity report")
    imp.add_argument("file", nargs="?", help="Python source (Compose([...])) or an "
                                             "Albumentations to_dict JSON/YAML file; - for stdin")
    imp.add_argument("-o", "--output", help="the preset JSON to write")
    imp.add_argument("--kind", choices=["auto", "python", "serialized"], default="auto")
    imp.add_argument("--report", help="folder to write report.html and report.json into "
                                      "(runs the original library beside DALI)")
    imp.add_argument("--images", help="images for the report (default: the bundled samples)")
    imp.add_argument("--max-images", type=int, default=4, help="images in the report (1-8)")
    imp.add_argument("--size", type=int, default=256,
                     help="downscale report images so the longer side is at most this")
    imp.add_argument("--device", choices=["auto", "cpu"], default="auto",
                     help="auto: time DALI on the GPU too when there is one")
    imp.add_argument("--no-timing", action="store_true", help="skip the timings")
    imp.add_argument("--table", action="store_true",
                     help="print the README's mapping table of every transform and exit")
    imp.set_defaults(func=cmd_import)

    rev = sub.add_parser("export-library", help="write a preset as torchvision v2 or "
                                                "Albumentations code")
    rev.add_argument("preset", help="preset JSON file")
    rev.add_argument("--library", choices=["torchvision", "albumentations"], required=True)
    rev.add_argument("-o", "--output", required=True, help="the .py file to write")
    rev.set_defaults(func=cmd_export_library)


def read_input(name: str) -> str:
    """The pipeline text of a file (or stdin), size-capped before it is decoded."""
    if name == "-":
        data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        origin = "stdin"
    else:
        path = Path(name)
        if not path.is_file():
            raise ValueError(f"pipeline file {name!r} does not exist or is not a file")
        with path.open("rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
        origin = repr(name)
    if len(data) > MAX_INPUT_BYTES:
        raise ValueError(f"{origin} is over {MAX_INPUT_BYTES} bytes; a pipeline is a few KB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"{origin} is not UTF-8 text (byte {e.start})") from e


def cmd_import(args: argparse.Namespace) -> int:
    from dali_gallery.pipelines.importers import import_pipeline
    from dali_gallery.pipelines.importers.table import markdown_table

    if args.table:
        print(markdown_table())
        return 0
    if not args.file or not args.output:
        raise ValueError("import needs a FILE and -o PRESET.json (or --table)")
    out = Path(args.output)
    if not out.parent.is_dir():
        raise ValueError(f"cannot write {args.output!r}: folder {str(out.parent)!r} does not "
                         "exist")
    result = import_pipeline(read_input(args.file), kind=args.kind)
    out.write_text(result.preset.to_json() + "\n", encoding="utf-8")
    print(result.summary())
    for t in result.transforms:
        mark = "x" if t.status == "not imported" else "+"
        where = f"line {t.call.line}: " if t.call.line else ""
        nearest = f"; nearest: {t.nearest}" if t.nearest else ""
        print(f"  {mark} {where}{t.call.name}: {t.verdict.line()}{nearest}")
    for n in result.notes:
        print(f"  note: {n}")
    print(f"wrote {out}")
    if args.report:
        return _report(args, result)
    return 0


def _report(args: argparse.Namespace, result) -> int:  # noqa: ANN001 - ImportResult
    from dali_gallery.pipelines.device import gpu_count
    from dali_gallery.pipelines.engine import PreviewEngine
    from dali_gallery.pipelines.importers.parity import parity_report
    from dali_gallery.pipelines.importers.report_html import page

    folder = Path(args.report)
    folder.mkdir(parents=True, exist_ok=True)
    if not 1 <= args.max_images <= 8:
        raise ValueError(f"--max-images {args.max_images} is not allowed; expected 1 to 8")
    source = Path(args.images) if args.images else Path(__file__).parent / "samples"
    if not source.exists():
        raise ValueError(f"--images {args.images!r} does not exist")
    engine = PreviewEngine("cpu")
    problems = engine.set_images(source, max_side=args.size)
    for p in problems:
        print(f"skipped {p.name}: {p.reason}", file=sys.stderr)
    images = engine.images[: args.max_images]
    if not images:
        raise ValueError(f"no usable images in {str(source)!r}")
    engines = {"cpu": engine}
    if args.device == "auto" and gpu_count() > 0:
        engines["gpu"] = PreviewEngine("gpu")
    try:
        report = parity_report(result, images, engines=engines, timing=not args.no_timing)
    finally:
        for e in engines.values():
            e.close()
    (folder / "report.html").write_text(page(result, report), encoding="utf-8")
    (folder / "report.json").write_text(report.to_json(), encoding="utf-8")
    for c in report.comparisons:
        print(f"  {c.item.call.name}: {c.measured()}"
              + {True: " (claim holds)", False: " (CLAIM DOES NOT HOLD)", None: ""}[c.holds])
    if report.install:
        print(f"  original library missing: {report.install}")
    print(f"wrote {folder / 'report.html'} and report.json")
    return 0


def cmd_export_library(args: argparse.Namespace) -> int:
    from dali_gallery.pipelines.importers.reverse import to_library_code
    from dali_gallery.pipelines.preset import load_file

    out = Path(args.output)
    if not out.parent.is_dir():
        raise ValueError(f"cannot write {args.output!r}: folder {str(out.parent)!r} does not "
                         "exist")
    if not Path(args.preset).is_file():
        raise ValueError(f"preset file {args.preset!r} does not exist")
    code = to_library_code(load_file(args.preset), args.library)
    out.write_text(code, encoding="utf-8")
    lines = [line.lstrip() for line in code.splitlines()]
    skipped = sum(line.startswith("# step ") for line in lines)
    differ = sum(line.startswith("# output.") for line in lines)
    print(f"wrote {out} ({args.library}; {skipped} step(s) without an equivalent and "
          f"{differ} output setting(s) that differ, as comments)")
    return 0

