"""The Distribution tab: run N draws with a progress bar, see the firing rates, the histograms
and the policies' picks; cancel; refusals and failures are shown, never raised."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines import budget
from dali_gallery.pipelines.distribution import DEFAULT_DRAWS, MAX_DRAWS
from dali_gallery.pipelines.images import collect as collect_files
from dali_gallery.pipelines.images import decode
from dali_gallery.pipelines.preset import load
from dali_gallery.widgets.distribution_panel import DistributionPanel
from tests.support import SAMPLES, preset_dict
from tests.widgets.conftest import make_builder

CHAIN = [
    {"op": "rotate", "probability": 0.3, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
    {"op": "rand_augment", "probability": 0.5, "params": {"n": 2, "m": 9}},
]


@pytest.fixture(scope="module")
def photo() -> np.ndarray:
    encoded, _ = collect_files([SAMPLES / "coffee.jpg"])
    arrays, _, _ = decode(encoded, num_threads=2)
    return arrays[0]


def panel_for(steps: list[dict], photo: np.ndarray | None, **kwargs) -> DistributionPanel:
    preset = load(preset_dict(steps, seed=21))
    return DistributionPanel(current=lambda: preset.copy(),
                             images=lambda: [] if photo is None else [photo], **kwargs)


def test_run_fills_the_bar_and_shows_rates_histograms_and_picks(photo):
    panel = panel_for(CHAIN, photo, sync=True)
    assert panel.run_button.description == f"Run {DEFAULT_DRAWS['cpu']} draws"
    panel.draws.value = 300
    assert panel.run_button.description == "Run 300 draws"
    assert panel.run() is True
    assert panel.progress.max == 300 and panel.progress.value == 300
    assert panel.progress.bar_style == "success"
    assert not panel.run_button.disabled and panel.cancel_button.disabled
    assert "300 draws in" in panel.status.value
    rotate = next(r for r in panel.rates if r.step == 0)
    assert rotate.within and rotate.draws == 300
    assert "0.3" in panel.table.value and "binomial range" in panel.table.value
    angle = next(s for s in panel.sampled if s.param == "angle")
    assert angle.values.min() < -25 and angle.values.max() > 25
    png = Image.open(io.BytesIO(panel.histograms.value))
    assert png.format == "PNG" and png.width > 300 and png.height > 100
    # rand_augment's recorded signs (one per level) are draws too
    assert [s.param for s in panel.sampled] == ["angle", "horizontal", "negated_1", "negated_2"]
    assert "rand_augment" in panel.pick_table.value and "level 2" in panel.pick_table.value
    assert "identity" in panel.pick_table.value
    (ra,) = panel.picks
    assert ra.counts.sum() == 2 * ra.applied.sum() < 2 * 300  # p = 0.5: counted where it ran


def test_cancel_keeps_the_draws_collected_so_far(photo):
    panel = panel_for(CHAIN[:1], photo)
    assert panel.run(MAX_DRAWS)
    panel.cancel()
    assert panel.wait(120)  # outside a kernel the widget updates run in the worker
    result = panel.result
    assert result is not None and result.cancelled
    assert result.draws < MAX_DRAWS and result.draws == result.batches * result.batch
    assert panel.progress.bar_style == "warning"
    assert f"cancelled after {result.draws} of {MAX_DRAWS} draws" in panel.status.value


def test_without_images_or_with_a_bad_count_nothing_starts(photo):
    panel = panel_for(CHAIN[:1], None, sync=True)
    assert panel.run() is False
    assert "no images to render" in panel.status.value and panel.result is None
    panel = panel_for(CHAIN[:1], photo, sync=True)
    assert panel.run(MAX_DRAWS + 1) is False
    assert f"expected a whole number from 1 to {MAX_DRAWS}" in panel.status.value


def test_a_refused_render_names_the_step_and_the_panel_stays_usable(photo):
    steps = [{"op": "paste", "params": {"ratio": 3.0}}]
    panel = panel_for(steps, photo, sync=True)
    budget.configure(budget.Budget(render_pixels=10_000))  # not one 192 px paste fits
    try:
        assert panel.run(400)
    finally:
        budget.configure(None)
    assert panel.progress.bar_style == "danger"
    assert "step 0 (paste)" in panel.status.value and "ratio" in panel.status.value
    assert not panel.run_button.disabled
    assert panel.run(50) and panel.result is not None and panel.result.draws == 50


def test_the_builder_has_a_distribution_tab_on_its_own_chain():
    b = make_builder(preset=preset_dict(CHAIN[:1], seed=4))
    try:
        assert b.wait_idle(60)
        tabs = b.widget.children[-1]
        assert "Distribution" in tabs.titles
        assert b.distribution.widget in tabs.children
        b.distribution.sync = True
        assert b.distribution.run(100)
        assert b.distribution.result.draws == 100
        assert b.distribution.rates[0].op == "rotate"
        b.model.set_probability(0, 0.9)  # the next run collects the chain as it is now
        assert b.distribution.run(100) and b.distribution.rates[0].configured == 0.9
    finally:
        b.close()


def test_rand_augment_s_sign_of_each_level_is_broken_down_by_that_level_s_operation(photo):
    """The pick table listed negated_2 per operation picked at level 1, not level 2."""
    from html import unescape

    from dali_gallery.pipelines.distribution import collect
    from dali_gallery.pipelines.distribution_stats import picks
    from dali_gallery.widgets.distribution_charts import _value_range, picks_html

    preset = load(preset_dict([{"op": "rand_augment", "params": {"n": 2, "m": 9}}], seed=21))
    dist = collect(preset, photo, 40)
    (p,) = picks(preset, dist.records)
    op_2 = np.array([r.values[0]["op_2"] for r in dist.records])
    assert np.array_equal(p.pick_of("negated_2"), op_2)
    assert np.array_equal(p.pick_of("negated_1"), p.picked[0])
    rows = unescape(picks_html([p])).split("<tr>")[2:]
    negated_2 = p.numeric["negated_2"]
    wrong = 0
    for k, row in enumerate(rows):
        cells = row.replace("</td>", "").replace("</tr>", "").replace("</table>", "").split("<td>")
        assert cells[-1] == _value_range(negated_2[op_2 == k]), (p.labels[k], row)
        wrong += cells[-1] != _value_range(negated_2[p.picked[0] == k])
    assert wrong > 0  # the level-1 breakdown differs for these draws
