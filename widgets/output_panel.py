"""The training-output section: the tail after the chain (resize, crop, normalise, layout, dtype,
mirror) that turns augmented images into the tensors a model trains on.

Without a tail that fixes the size, batches mix image sizes and DALI's PyTorch iterator fails
("The batch must be representable as a tensor"); a new pipeline therefore starts with the usual
ImageNet tail, and the section warns whenever the chain and tail would mix sizes
(:func:`pipelines.batch_shape.mixed_size_warning`, derived from the catalog's canvas rules).
Every edit goes through :meth:`ChainModel.set_output`, the preset file's own validation: a value
it refuses is shown with the reason and the pipeline stays as it was (nothing is clamped).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from html import escape
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.batch_shape import batch_shape, mixed_size_warning
from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.preset import IMAGENET_OUTPUT, Output, Preset, PresetError
from dali_gallery.pipelines.preset_output import DTYPES, LAYOUTS

from . import style
from .model import ChainModel, Change
from .param_values import exact_number
from .style import shared_layout

_NARROW = {"description_width": "95px"}


def _number_text(values: tuple[float, ...] | None) -> str:
    """The numbers as the field shows them, exactly: an edit of another field sends the
    field's text back, so a rounded text would change the tail (1/255 to 0.00392157)."""
    return ", ".join(exact_number(v) for v in values) if values else ""


def parse_numbers(field: str, text: str) -> list[float] | None:
    """``"0.485, 0.456, 0.406"`` as numbers (empty: None); ValueError names the field."""
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    if not parts:
        return None
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"output: {field} {text.strip()[:60]!r} is not allowed; expected 1 or "
                         "3 numbers separated by commas (fractions of 255), or nothing") from None


class OutputPanel:
    """Tail controls bound to the builder's :class:`ChainModel`, plus "show training output"."""

    def __init__(self, model: ChainModel, *, on_show: Callable[[bool], None],
                 on_warning: Callable[[str], None] | None = None,
                 catalog: Catalog = CATALOG) -> None:
        self.model = model
        self.catalog = catalog
        self.on_show = on_show
        self.on_warning = on_warning
        self._quiet = False
        self._last: Output = copy.deepcopy(model.preset.output or IMAGENET_OUTPUT)
        self.enabled = style.classed(w.Checkbox(
            description="training output", indent=False,
            tooltip="resize, crop and normalise after the chain (exported as finish())"),
            style.OUTPUT_ENABLED)
        self.show = style.classed(w.Checkbox(
            description="show training output", indent=False,
            tooltip="render the preview through the tail too (normalised values are stretched "
                    "to 0-255 for display)"), style.OUTPUT_SHOW)
        # a float, as the preset holds it: an int field would cut 300.5 to 300 on any edit
        self.resize = w.FloatText(description="resize shorter", style=_NARROW,
                                  tooltip="shorter side in px (0: no resize)",
                                  layout=shared_layout(width="170px"))
        self.crop_h = w.IntText(description="crop h x w", style=_NARROW,
                                tooltip="centre crop height (0 and 0: no crop)",
                                layout=shared_layout(width="160px"))
        self.crop_w = w.IntText(tooltip="centre crop width", layout=shared_layout(width="64px"))
        self.mean = w.Text(description="mean", style=_NARROW, continuous_update=False,
                           placeholder="none", layout=shared_layout(width="260px"),
                           tooltip="per-channel mean, fractions of 255 (empty: none)")
        self.std = w.Text(description="std", style=_NARROW, continuous_update=False,
                          placeholder="none", layout=shared_layout(width="260px"),
                          tooltip="per-channel standard deviation, fractions of 255")
        self.layout = w.Dropdown(options=LAYOUTS, description="layout", style=_NARROW,
                                 layout=shared_layout(width="170px"))
        self.dtype = w.Dropdown(options=DTYPES, description="dtype", style=_NARROW,
                                layout=shared_layout(width="190px"))
        self.mirror = w.FloatText(description="mirror prob.", style=_NARROW, step=0.05,
                                  tooltip="probability of a horizontal flip in the tail (0-1)",
                                  layout=shared_layout(width="170px"))
        self.fields = w.VBox([
            w.HBox([self.resize, self.crop_h, self.crop_w]),
            w.HBox([self.mean]), w.HBox([self.std]),
            w.HBox([self.layout, self.dtype]), self.mirror])
        self.problems = style.classed(w.HTML(), style.ERROR)
        self.status = style.classed(w.HTML(), style.BATCH_WARNING)
        for control in (self.resize, self.crop_h, self.crop_w, self.mean, self.std, self.layout,
                        self.dtype, self.mirror):
            control.observe(self._on_field, "value")
        self.enabled.observe(self._on_enabled, "value")
        self.show.observe(self._on_show, "value")
        self.widget = style.classed(w.VBox([
            w.HBox([w.HTML("<b>Training output</b>", layout=shared_layout(width="auto",
                                                                  margin="0 12px 0 0")),
                    self.enabled, self.show],
                   layout=shared_layout(align_items="center")),
            self.fields, self.problems, self.status]), style.OUTPUT)
        model.listen(self._on_change)
        self.sync(model.preset)

    # ---- reading the model --------------------------------------------------------------------

    def sync(self, preset: Preset) -> None:
        """Show the preset's tail (after undo, a loaded preset, an edit) and the batch check."""
        out = preset.output
        if out is not None:
            self._last = copy.deepcopy(out)
        self.sync_fields(out or self._last, enabled=out is not None)
        self.fields.layout.display = None if out is not None else "none"
        self.show.disabled = out is None
        self._check(preset)

    # ---- edits --------------------------------------------------------------------------------

    def values(self) -> dict[str, Any]:
        """The fields as preset JSON; PresetError lists every number list it cannot read."""
        numbers: dict[str, list[float] | None] = {}
        problems = []
        for field, text in (("mean", self.mean.value), ("std", self.std.value)):
            try:
                numbers[field] = parse_numbers(field, text)
            except ValueError as e:
                problems.append(str(e))
        if problems:
            raise PresetError(problems)
        size = (self.crop_h.value, self.crop_w.value)
        mean, std = numbers["mean"], numbers["std"]
        return Output(resize_shorter=self.resize.value or None,
                      crop=None if size == (0, 0) else size,
                      mean=tuple(mean) if mean else None, std=tuple(std) if std else None,
                      layout=self.layout.value, dtype=self.dtype.value,
                      mirror_probability=self.mirror.value).to_dict()

    def apply(self) -> list[str]:
        """Send the fields to the model; returns (and shows) the problems, if any."""
        try:
            self.model.set_output(self.values() if self.enabled.value else None)
        except PresetError as e:
            problems = list(e.problems)
            self.problems.value = style.error_html(
                problems, "training output not changed; the pipeline keeps its previous tail")
            return problems
        self.problems.value = ""
        return []

    def _on_field(self, _change: dict[str, Any]) -> None:
        if not self._quiet and self.enabled.value:
            self.apply()

    def _on_enabled(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        if change["new"]:
            self.sync_fields(self._last)
        self.apply()

    def sync_fields(self, out: Output, enabled: bool | None = None) -> None:
        """Put ``out`` in the fields without sending it back to the model."""
        self._quiet = True
        try:
            if enabled is not None:
                self.enabled.value = enabled
            self.resize.value = out.resize_shorter or 0.0
            self.crop_h.value, self.crop_w.value = out.crop or (0, 0)
            self.mean.value, self.std.value = _number_text(out.mean), _number_text(out.std)
            self.layout.value, self.dtype.value = out.layout, out.dtype
            self.mirror.value = out.mirror_probability
        finally:
            self._quiet = False

    def _on_show(self, change: dict[str, Any]) -> None:
        self.on_show(bool(change["new"]))

    def _on_change(self, _change: Change) -> None:
        """Any edit: the fields show the model's tail again (a refused value is gone, and so is
        its message) and the batch check follows the chain."""
        self.sync(self.model.preset)
        self.problems.value = ""

    def _check(self, preset: Preset) -> None:
        warning = mixed_size_warning(preset, self.catalog)
        if warning:
            self.status.value = f'<div class="{style.ERROR}">&#9888; {escape(warning)}</div>'
        else:
            shape = batch_shape(preset, self.catalog)
            h, w_ = shape.size or (0, 0)
            size = f" ({h}x{w_})" if preset.output is not None and preset.output.crop else ""
            self.status.value = (f"<span style='opacity:.75'>&#10003; one image size per "
                                 f"batch{size}: {escape(shape.reason)}</span>")
        if self.on_warning is not None:
            self.on_warning(warning or "")
