"""The preview's CPU image pipelines load only nvImageCodec's CPU extensions, decode the same
pixels as with every extension, and leave every extension to encoders and GPU decoders."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from dali_gallery.pipelines import codec_extensions as ce
from dali_gallery.pipelines.image_decode import clear_pipeline_cache
from dali_gallery.pipelines.images import collect, decode
from tests.corpus import CorpusEntry
from tests.support import SAMPLES

REPO = Path(__file__).resolve().parents[2]

# ---- which folder --------------------------------------------------------------------------


def test_an_unset_variable_is_claimed_for_the_default_folder(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    assert ce.claim(env, tmp_path) == tmp_path
    assert env[ce.VARIABLE] == str(tmp_path)


def test_the_default_set_by_a_parent_process_counts_as_unset(tmp_path: Path) -> None:
    env = {ce.VARIABLE: str(tmp_path)}
    assert ce.claim(env, tmp_path) == tmp_path


def test_a_folder_the_user_chose_is_left_alone(tmp_path: Path) -> None:
    env = {ce.VARIABLE: "/opt/their/extensions"}
    assert ce.claim(env, tmp_path) is None
    assert env[ce.VARIABLE] == "/opt/their/extensions"
    assert ce.claim({}, None) is None  # no nvImageCodec folder: nothing to split


def test_the_cpu_folder_links_every_extension_but_the_gpu_ones(tmp_path: Path) -> None:
    default, into = tmp_path / "extensions", tmp_path / "cpu"
    default.mkdir()
    into.mkdir()
    names = ["libjpeg_turbo_ext.so.0.9.0", "libnvjpeg_ext.so.0.9.0", "libnvjpeg2k_ext.so.0.9.0",
             "libnvtiff_ext.so.0.9.0", "libopencv_ext.so.0.9.0", "libfuture_ext.so.1.0.0"]
    for name in names:
        (default / name).write_bytes(b"")
    ce.cpu_folder(default, into)
    linked = sorted(p.name for p in into.iterdir())
    assert linked == ["libfuture_ext.so.1.0.0", "libjpeg_turbo_ext.so.0.9.0",
                      "libopencv_ext.so.0.9.0"]
    assert all((into / n).resolve() == (default / n).resolve() for n in linked)


def test_this_process_uses_the_installed_nvimgcodec_folder() -> None:
    folder = ce.default_folder()
    assert folder is not None and any(folder.glob("libnvjpeg_ext*")), \
        "DALI's nvImageCodec package (and its GPU extensions) should be installed"
    assert os.environ.get(ce.VARIABLE) == str(folder)


# ---- the variable around builds -------------------------------------------------------------


def test_the_cpu_folder_is_named_only_inside_a_cpu_build_and_restored_after_a_failure() -> None:
    before = os.environ.get(ce.VARIABLE)
    with pytest.raises(RuntimeError, match="build failed"), ce.cpu_codecs():
        inside = os.environ.get(ce.VARIABLE)
        raise RuntimeError("build failed")
    assert inside != before and inside is not None and Path(inside).is_dir()
    assert not any(Path(inside).glob("libnvjpeg_ext*"))
    assert os.environ.get(ce.VARIABLE) == before


def test_an_encoder_made_beside_a_cpu_build_waits_for_every_extension() -> None:
    seen: list[str | None] = []
    entered, release = threading.Event(), threading.Event()

    def cpu_build() -> None:
        with ce.cpu_codecs():
            entered.set()
            release.wait(10)

    def encoder() -> None:
        with ce.all_codecs():
            seen.append(os.environ.get(ce.VARIABLE))

    builder = threading.Thread(target=cpu_build)
    builder.start()
    assert entered.wait(10)
    maker = threading.Thread(target=encoder)
    maker.start()
    maker.join(0.2)
    assert maker.is_alive(), "the encoder must not be made while the CPU folder is named"
    release.set()
    builder.join(10)
    maker.join(10)
    assert seen == [str(ce.default_folder())]


# ---- what DALI loads, and what it decodes ---------------------------------------------------

_LOADED = """
import json, sys
from dali_gallery.pipelines import codec_extensions as ce
if sys.argv[1] == "every":
    ce._CPU.append("")  # as if the CPU folder could not be made: every extension loads
from dali_gallery.pipelines.images import collect, decode
encoded, _ = collect([sys.argv[2]], max_files=2)
arrays, _, bad = decode(encoded, max_side=128)
maps = open("/proc/self/maps").read().splitlines()
print(json.dumps({"decoded": len(arrays), "bad": len(bad),
                  "extensions": sorted({m.rsplit("/", 1)[-1].split(".so")[0]
                                        for m in maps if "_ext.so" in m})}))
"""


def _loaded(mode: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _LOADED, mode, str(SAMPLES)],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/self/maps")
def test_a_fresh_process_decoding_images_loads_no_gpu_extension() -> None:
    cpu, every = _loaded("cpu"), _loaded("every")
    assert cpu["decoded"] == every["decoded"] == 2 and cpu["bad"] == every["bad"] == 0
    gpu = {"libnvjpeg_ext", "libnvjpeg2k_ext", "libnvtiff_ext"}
    assert gpu <= set(every["extensions"]), every  # what DALI loads by default
    assert not gpu & set(cpu["extensions"]), cpu
    assert {"libjpeg_turbo_ext", "libopencv_ext"} <= set(cpu["extensions"])


def _decode_all(entries: list[CorpusEntry], max_side: int | None) -> tuple[list, list, list]:
    clear_pipeline_cache()  # built again, under the folder being compared
    encoded, problems = collect([e.path for e in entries])
    arrays, good, bad = decode(encoded, max_side=max_side)
    return arrays, [g.name for g in good], sorted((p.name, p.message) for p in [*problems, *bad])


@pytest.mark.parametrize("max_side", [None, 96])
def test_the_corpus_decodes_to_the_same_pixels_with_the_cpu_extensions_alone(
        corpus: dict[str, CorpusEntry], monkeypatch: pytest.MonkeyPatch,
        max_side: int | None) -> None:
    """Odd sizes, progressive, 4:4:4, EXIF-rotated, gray, CMYK, 16-bit, PNG/BMP/TIFF/WebP and
    broken files: the same arrays, names and problems both ways."""
    entries = [e for e in corpus.values() if e.path.is_file()]
    assert len(entries) >= 10
    try:
        cpu = _decode_all(entries, max_side)
        monkeypatch.setattr(ce, "_CPU", [""])  # every extension
        every = _decode_all(entries, max_side)
    finally:
        clear_pipeline_cache()
    assert cpu[1] == every[1] and cpu[2] == every[2]
    assert len(cpu[0]) == len(every[0]) > 5
    for a, b, name in zip(cpu[0], every[0], cpu[1], strict=True):
        assert a.shape == b.shape and np.array_equal(a, b), name


def test_a_process_started_beside_a_cpu_build_inherits_the_default_folder() -> None:
    from dali_gallery.pipelines.trace_ahead import _environment

    envs: list[dict[str, str]] = []
    entered, release = threading.Event(), threading.Event()

    def cpu_build() -> None:
        with ce.cpu_codecs():
            entered.set()
            release.wait(10)

    builder = threading.Thread(target=cpu_build)
    builder.start()
    assert entered.wait(10)
    spawner = threading.Thread(target=lambda: envs.append(_environment("scratch")))
    spawner.start()
    spawner.join(0.2)
    assert spawner.is_alive()
    release.set()
    builder.join(10)
    spawner.join(10)
    assert envs[0][ce.VARIABLE] == str(ce.default_folder())


def test_a_cpu_folder_cleaned_away_is_made_again() -> None:
    """A long-lived kernel's temporary files may be cleaned: an empty folder would leave the
    CPU decoders with no codec, so the next build links them again (and still decodes)."""
    import shutil

    with ce.cpu_codecs():
        first = os.environ[ce.VARIABLE]
    shutil.rmtree(first)
    try:
        with ce.cpu_codecs():
            second = os.environ[ce.VARIABLE]
        assert second != first and any(Path(second).glob("libjpeg_turbo_ext*"))
        clear_pipeline_cache()
        arrays, good, bad = decode(collect([SAMPLES])[0][:2], max_side=64)
        assert len(arrays) == 2 and not bad
    finally:
        clear_pipeline_cache()


def test_a_mixed_decoder_whose_run_failed_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU decoder of ``set_images`` is kept for the process; one whose run raised (a file
    nvJPEG refuses) is built anew at the next load rather than reused in an unknown state."""
    from dali_gallery.pipelines import image_decode, preview_pipeline

    class Failing:
        def run(self, **inputs):
            raise RuntimeError("nvJPEG refused the data")

    monkeypatch.setattr(preview_pipeline, "_mixed_decoder", lambda threads: Failing())
    try:
        with pytest.raises(RuntimeError, match="refused"):
            preview_pipeline.decode_mixed([b"\xff\xd8"], [np.zeros((2, 2, 3), np.uint8)], None, 3)
        assert ("mixed", 1, 3) not in image_decode._PIPES
    finally:
        clear_pipeline_cache()
