"""Shard selector: preview what shard s of an n-GPU training job draws.

Each shard of the exported pipeline runs with its own seed
(:func:`pipelines.shards.shard_seed`; shard 0 keeps the preset's), so the builder can show the
draws of any shard: the preview renders with that seed. The preset, and so the export, never
changes: the selector is a view setting, like the number of draws.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as w

from dali_gallery.pipelines.preset import Preset
from dali_gallery.pipelines.shards import check_shard, shard_preset

from . import style

MAX_SHARDS = 4096
"""The most processes a job shown here may have (a bound on what the text box accepts)."""
TOOLTIP = ("preview the draws of shard s of an n-GPU job (each shard has its own seed; shard 0 "
           "is what one GPU trains on). dali-gallery render --shard S --num-shards N also "
           "takes the shard's own first files")


class ShardSelector:
    """Two bounded number boxes, shard s of n; ``on_change(s, n)`` after every valid change."""

    def __init__(self, on_change: Callable[[int, int], None]) -> None:
        self._on_change = on_change
        self.shard_box = w.BoundedIntText(
            value=0, min=0, max=0, description="shard", tooltip=TOOLTIP,
            style={"description_width": "38px"}, layout=w.Layout(width="110px"))
        self.count_box = w.BoundedIntText(
            value=1, min=1, max=MAX_SHARDS, description="of", tooltip=TOOLTIP,
            style={"description_width": "18px"}, layout=w.Layout(width="100px"))
        self.widget = style.classed(w.HBox([self.shard_box, self.count_box],
                                           layout=w.Layout(align_items="center")), style.SHARD)
        self._quiet = False
        self.shard_box.observe(lambda _: self._changed(), "value")
        self.count_box.observe(lambda _: self._changed(), "value")

    @property
    def value(self) -> tuple[int, int]:
        """(shard_id, num_shards)."""
        return int(self.shard_box.value), int(self.count_box.value)

    def preset_for(self, preset: Preset) -> Preset:
        """What the preview renders: ``preset`` with the selected shard's seed."""
        shard = self.value[0]
        return preset if shard == 0 else shard_preset(preset, shard)

    def cli_args(self, preset: Preset) -> list[str]:
        """``--seed`` of the selected shard for ``dali-gallery render`` on the same images
        (none for shard 0: the preset's own seed)."""
        shard = self.value[0]
        return [] if shard == 0 else ["--seed", str(shard_preset(preset, shard).seed)]

    def set(self, shard_id: int, num_shards: int) -> None:
        """Select shard ``shard_id`` of ``num_shards``; ValueError says what is allowed."""
        check_shard(shard_id, num_shards)
        if num_shards > MAX_SHARDS:
            raise ValueError(f"num_shards {num_shards} is not allowed; expected 1 to "
                             f"{MAX_SHARDS}")
        self._quiet = True
        try:
            self.count_box.value = num_shards
            self.shard_box.max = num_shards - 1
            self.shard_box.value = shard_id
        finally:
            self._quiet = False
        self._on_change(shard_id, num_shards)

    def _changed(self) -> None:
        if self._quiet:
            return
        n = int(self.count_box.value)
        self._quiet = True
        try:
            self.shard_box.max = n - 1  # the box clamps the shard into the new job
        finally:
            self._quiet = False
        self._on_change(*self.value)
