"""A render over the pixel budget is a normal render error: the builder keeps its chain."""

from __future__ import annotations

from dali_gallery.pipelines.render_budget import BudgetError
from tests.support import preset_dict
from tests.widgets.conftest import settle


def test_an_uploaded_chain_over_the_budget_is_refused_and_stays_editable(builder) -> None:
    """The probe: a preset of four paste steps at the slider maximum, loaded in one click."""
    builds = builder.renderer.engine.builds
    builder.load_preset(preset_dict([{"op": "paste", "params": {"ratio": 3}}] * 4))
    settle(builder)
    error = builder.last_error
    assert isinstance(error, BudgetError) and error.op == "paste" and error.param == "ratio"
    assert builder.renderer.engine.builds == builds  # refused before DALI built anything
    assert [s.op for s in builder.preset.steps] == ["paste"] * 4  # the chain is kept
    assert "render failed" in builder.live.status.value
    builder.set_param(error.step, "ratio", 1.0)
    settle(builder)
    assert builder.last_error is None and builder.last_result is not None
    assert len(builder.preset.steps) == 4
