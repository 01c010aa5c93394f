"""On a GPU host, where nvImageCodec's GPU extensions set up CUDA as they load: the CPU image
pipelines still decode what every extension decodes, GPU decoding keeps its extensions, and the
mixed decoder of ``engine.set_images`` is built once a process."""

from __future__ import annotations

import numpy as np
import pytest

from dali_gallery.pipelines import codec_extensions as ce
from dali_gallery.pipelines import image_decode
from dali_gallery.pipelines.image_decode import clear_pipeline_cache
from dali_gallery.pipelines.images import collect, decode
from dali_gallery.pipelines.preview_pipeline import decode_mixed
from tests.corpus import CorpusEntry
from tests.jpegs import varied_jpegs
from tests.pipelines.test_codec_extensions import _decode_all, _loaded

pytestmark = pytest.mark.gpu


def test_gpu_host_decoding_images_on_the_cpu_loads_no_gpu_extension() -> None:
    cpu, every = _loaded("cpu"), _loaded("every")
    gpu = {"libnvjpeg_ext", "libnvjpeg2k_ext", "libnvtiff_ext"}
    assert gpu <= set(every["extensions"]) and not gpu & set(cpu["extensions"])
    assert cpu["decoded"] == every["decoded"] == 2


def test_gpu_host_corpus_decodes_alike_with_the_cpu_extensions_alone(
        corpus: dict[str, CorpusEntry], monkeypatch: pytest.MonkeyPatch) -> None:
    entries = [e for e in corpus.values() if e.path.is_file()]
    try:
        cpu = _decode_all(entries, 128)
        monkeypatch.setattr(ce, "_CPU", [""])
        every = _decode_all(entries, 128)
    finally:
        clear_pipeline_cache()
    assert cpu[1] == every[1] and cpu[2] == every[2] and len(cpu[0]) > 5
    for a, b, name in zip(cpu[0], every[0], cpu[1], strict=True):
        assert np.array_equal(a, b), name


def test_gpu_mixed_decoder_is_built_once_and_gives_the_same_pixels_again(tmp_path) -> None:
    files = varied_jpegs(tmp_path, 6)
    encoded, problems = collect(files)
    assert not problems
    first, second = encoded[:3], encoded[3:]
    clear_pipeline_cache()
    cpu_a, _, _ = decode(first, max_side=160)
    cpu_b, _, _ = decode(second, max_side=160)
    a = decode_mixed([e.data for e in first], cpu_a, 160, 4)
    kept = image_decode._PIPES[("mixed", 1, 4)]
    b = decode_mixed([e.data for e in second], cpu_b, 160, 4)
    again = decode_mixed([e.data for e in first], cpu_a, 160, 4)
    assert image_decode._PIPES[("mixed", 1, 4)] is kept
    assert [x.shape for x in a] == [x.shape for x in cpu_a]
    assert [x.shape for x in b] == [x.shape for x in cpu_b]
    for x, y in zip(a, again, strict=True):
        assert np.array_equal(x, y)
    # nvJPEG's pixels, within a few grey levels of the CPU decoder's
    for x, y in zip(a, cpu_a, strict=True):
        assert np.abs(x.astype(int) - y.astype(int)).mean() < 3
    clear_pipeline_cache()
