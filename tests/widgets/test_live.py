"""The live preview refuses draws and image counts out of range instead of clamping them."""

from __future__ import annotations

import pytest

from dali_gallery.widgets.live import MAX_IMAGES
from dali_gallery.widgets.preview import MAX_DRAWS
from tests.widgets.conftest import make_builder


def test_out_of_range_draws_and_counts_are_refused_by_name(builder):
    live = builder.live
    before = (live.draws, live.count, builder.scheduler.stats.submitted)
    for kwargs, field, allowed in (({"draws": 0}, "draws", f"from 1 to {MAX_DRAWS}"),
                                   ({"draws": MAX_DRAWS + 1}, "draws", f"from 1 to {MAX_DRAWS}"),
                                   ({"count": 0}, "count", f"from 1 to {live.max_images}"),
                                   ({"count": live.max_images + 1}, "count",
                                    f"from 1 to {live.max_images}"),
                                   ({"draws": 2.5}, "draws", f"from 1 to {MAX_DRAWS}")):
        value = next(iter(kwargs.values()))
        with pytest.raises(ValueError, match=f"{field} {value!r} is not allowed.*{allowed}"):
            live.set_view(**kwargs)
    assert (live.draws, live.count, builder.scheduler.stats.submitted) == before
    live.set_view(draws=MAX_DRAWS, count=1)
    assert (live.draws, live.count) == (MAX_DRAWS, 1)
    assert builder.wait_idle(60)
    assert builder.preview.shape == (1, MAX_DRAWS)


def test_the_controls_cannot_send_values_out_of_range(builder):
    grid = builder.live.grid
    assert (grid.draws.min, grid.draws.max) == (1, MAX_DRAWS)
    assert grid.count.min == 1 and grid.count.max <= builder.live.max_images


@pytest.mark.parametrize(("kwargs", "field"), [({"draws": 0}, "draws"),
                                               ({"max_images": MAX_IMAGES + 1}, "max_images")])
def test_a_builder_with_settings_out_of_range_is_refused(kwargs, field):
    with pytest.raises(ValueError, match=f"{field} .* is not allowed"):
        make_builder(**kwargs)
