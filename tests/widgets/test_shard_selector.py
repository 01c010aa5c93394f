"""The builder's shard selector: the preview shows what shard s of an n-GPU job draws."""

from __future__ import annotations

import io
import shlex

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.shards import shard_seed
from tests.support import SAMPLES, import_export
from tests.widgets.conftest import make_builder, settle


@pytest.fixture
def same_images(tmp_path):
    """Four copies of one small JPEG: shards of this folder read identical pixels, so the
    only difference between them is what they draw."""
    folder = tmp_path / "same"
    folder.mkdir()
    buf = io.BytesIO()
    Image.open(SAMPLES / "cat.jpg").resize((80, 64)).save(buf, "JPEG", quality=90)
    for i in range(4):
        (folder / f"same_{i}.jpg").write_bytes(buf.getvalue())
    return folder


def test_the_selected_shard_previews_what_that_shard_trains_on(same_images, tmp_path):
    b = make_builder(images=same_images, size=0, max_images=2, draws=1)
    try:
        b.add_step("rotate", angle={"uniform": [-40, 40]})
        b.add_step("hsv", hue={"uniform": [-30, 30]})
        b.output_panel.show.value = True  # what trains goes through the training output too
        settle(b)
        shard0 = [b.last_result.render.tile(i, 0) for i in range(2)]
        b.shards.count_box.value = 2  # through the widgets, as a user does
        b.shards.shard_box.value = 1
        settle(b)
        assert b.shards.value == (1, 2)
        shard1 = [b.last_result.render.tile(i, 0) for i in range(2)]
        module = import_export(b.preset, tmp_path)
        for shard, shown in ((0, shard0), (1, shard1)):
            pipe = module.create_pipeline(str(same_images), 2, num_threads=1, device_id=None,
                                          shard_id=shard, num_shards=2, random_shuffle=False)
            pipe.build()
            trained, _ = pipe.run()
            for i in range(2):
                np.testing.assert_array_equal(shown[i], np.array(trained[i]))
            del pipe
        assert not np.array_equal(shard0[0], shard1[0])
        # the preset (and the export) keep the preset's seed; the CLI command names the shard's
        assert b.preset.seed == b.model.preset.seed
        assert f"SEED = {b.preset.seed}" in b.code
        args = shlex.split(b.cli_command)
        assert args[args.index("--seed") + 1] == str(shard_seed(b.preset.seed, 1))
    finally:
        b.close()


def test_a_shard_outside_the_job_is_refused(builder):
    with pytest.raises(ValueError, match="shard_id 3 is not allowed with num_shards 2"):
        builder.set_shard(3, 2)
    with pytest.raises(ValueError, match="num_shards 5000 is not allowed"):
        builder.set_shard(0, 5000)
    builder.set_shard(1, 3)
    settle(builder)
    assert builder.shards.value == (1, 3)
    assert builder.live.last_result.request.preset.seed == shard_seed(builder.preset.seed, 1)
