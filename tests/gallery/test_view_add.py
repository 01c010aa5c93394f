"""What a gallery column's "add" button puts in the builder renders as that column's tiles."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.gallery.bench import bench_images
from dali_gallery.gallery.view import GalleryView
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import Preset
from dali_gallery.widgets.model import ChainModel

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def squares() -> list[np.ndarray]:
    return bench_images(128, 2)


@pytest.mark.parametrize("op", ["noise.gaussian", "auto_aug.brightness", "auto_aug.shear_x",
                                "rotate", "flip", "trivial_augment", "random_resized_crop"])
def test_add_puts_in_the_builder_exactly_the_column_rendered(squares, op):
    """Every column's tiles equal, bit for bit, the builder's render (same seed and images) of
    the step its "add" button makes. A random operator's sweep fed its values in one batch,
    so column k showed draw k's numbers: auto_aug's random sign flipped between columns, and
    the builder showed another picture than the column added."""
    view = GalleryView(device="cpu", size=128, max_images=2)
    engine = PreviewEngine("cpu")
    added: list[tuple[str, dict]] = []
    view.on_add(lambda name, params: added.append((name, params)))
    try:
        view.search.value = op
        view.set_arrays(squares, ["a", "b"])
        assert view.wait_idle(120)
        engine.set_arrays(view.engine.images, view.engine.names)
        result, row = view.results[op], view.row(op)
        assert result.ok, result.error
        for k, column in enumerate(result.plan.columns):
            added.clear()
            row.click(k)
            [(name, params)] = added
            model = ChainModel(None)
            model.add_step(name, params)
            preset = Preset(model.preset.steps, seed=view.seed)
            draws = len(result.plan.columns) if result.plan.mode == "draws" else 1
            render = engine.render(preset, draws=draws)
            draw = k if draws > 1 else 0
            for i in range(2):
                assert np.array_equal(render.tile(i, draw), result.tiles[k][i]), \
                    f"{op} {column.label}, image {i}"
    finally:
        view.close()
        engine.close()
