"""``dali-gallery render --annotations``: a COCO dataset's preview, its labels drawn on the grid
and written beside the pixels; apart from :mod:`gallery.cli` to keep each module small.

Called by :func:`gallery.cli.cmd_render` once the annotations file is known to exist; bad input
raises the errors ``cli.main`` reports as one paragraph.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dali_gallery.gallery.cli_output import writing

if TYPE_CHECKING:
    from dali_gallery.pipelines.engine import PreviewEngine
    from dali_gallery.pipelines.preset import Preset


def label_drawer(render: Any, engine: PreviewEngine, annotations: Any) -> Callable[..., Any]:
    """Draws each grid tile's labels (the original's as annotated, each draw's as the chain
    moved them) with the builder's drawing code."""
    from dali_gallery.widgets.label_overlay import TileLabels, draw_labels

    names = {c.id: c.name for c in annotations.categories.values()}
    inputs = engine.labels or []

    def decorate(image: int, column: int, tile):
        labels = inputs[image] if column == 0 else \
            render.labels[(column - 1) * render.n_images + image].labels
        if tile.ndim != 3 or tile.shape[-1] != 3:  # a CHW or normalised tail: shown as is
            return tile
        return draw_labels(tile, TileLabels(labels.boxes, labels.classes, labels.keypoints,
                                            labels.mask), names)

    return decorate


def render_annotated(args: argparse.Namespace, preset: Preset, engine: PreviewEngine) -> int:
    """``render --annotations``: the preview of a COCO dataset, images in the reader's order
    with their labels; draw 0 is the exported module's first batch with labels."""
    from dali_gallery.pipelines.annotated_preview import load_annotated
    from dali_gallery.pipelines.export_labels import label_columns, save_label_npz
    from dali_gallery.pipelines.grid import grid_image
    from dali_gallery.pipelines.shards import shard_preset

    try:
        batch = load_annotated(engine, args.annotations, args.images, batch_size=args.batch_size,
                               shard_id=args.shard, num_shards=args.num_shards,
                               max_side=args.size)
        print_problems(batch.problems)
        for p in batch.warnings:
            print(f"warning: {p}", file=sys.stderr)
        render = engine.render(shard_preset(preset, args.shard), draws=args.draws,
                               tail=args.tail)
        grid = grid_image(render, engine.images, preset,
                          decorate=label_drawer(render, engine, batch.annotations))
        with writing("--out", args.out):
            grid.save(args.out)
        if args.npz:
            moved = [out.labels for out in render.labels or []][: render.n_images]
            with writing("--npz", args.npz):
                save_label_npz(args.npz, render.first_draw(), label_columns(moved))
        if args.records:
            records = json.dumps(
                {"names": engine.names, "records": [r.to_dict() for r in render.records]},
                indent=1)
            with writing("--json", args.records):
                Path(args.records).write_text(records)
    finally:
        engine.close()
    print(f"rendered {render.n_images} annotated images x {render.draws} draws on "
          f"{render.device} in {render.ms:.0f} ms -> {args.out}")
    return 0


def print_problems(problems: Sequence[object]) -> None:
    """Annotations left out, one per line on stderr (the rest are used)."""
    for p in problems:
        print(f"left out: {p}", file=sys.stderr)
