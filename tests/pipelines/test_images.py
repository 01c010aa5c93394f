"""pipelines.images: safe collection of user images and DALI decoding that survives bad files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest
from nvidia.dali import fn
from nvidia.dali.pipeline import Pipeline
from PIL import Image

import dali_gallery.pipelines.images as images_mod
from dali_gallery.pipelines.image_collect import ReaderFiles
from dali_gallery.pipelines.images import (
    SUPPORTED_EXTENSIONS,
    EncodedImage,
    ImageProblem,
    captured_stderr,
    collect,
    decode,
    reader_order,
    scan_folder,
)
from tests.corpus import CorpusEntry, _jpeg, _pattern, corrupt_scan, dataset_root

RED, GREEN, BLUE = (220, 20, 20), (40, 160, 40), (20, 20, 220)


def _readers_file(root: Path) -> list[tuple[str, int]]:
    """(relative path, label) of one epoch of a real ``fn.readers.file(file_root=root)``."""
    pipe = Pipeline(batch_size=1, num_threads=1, device_id=None, prefetch_queue_depth=1)
    with pipe:
        data, label = fn.readers.file(file_root=str(root), dont_use_mmap=True, name="r")
        pipe.set_outputs(fn.get_property(data, key="source_info"), label)
    pipe.build()
    out = []
    for _ in range(pipe.epoch_size("r")):
        info, label = pipe.run()
        out.append((np.array(info[0]).tobytes().decode(), int(np.array(label[0])[0])))
    return out


def _write(path: Path, data: bytes = b"x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def tricky_tree(tmp_path: Path) -> Path:
    """Names that sort differently under naive rules: case, spaces, dots, accents, hidden."""
    root = tmp_path / "tree"
    for rel in [
        "a/x.jpg", "a/Y.Jpg", "a/y.jpg", "a/_u.png", "a/a b.jpg", "a/a.jpg", "a/a10.jpg",
        "a/a2.jpg", "a/é.jpg", "a/ż.jpg", "a/z.jpg", "a/.jpg", "a/notes.txt", "a/x.JPG.bak",
        "a b/x.jpg", "a-b/x.jpg", "a.b/x.jpg", "A/q.png", ".hidden/h.jpg", "café/z.webp",
        "c/m.TIFF", "c/n.bmp", "c/p.pgm", "c/s.wav", "c/deep/inner.jpg",
        "top.jpg", "top.png",
    ]:
        _write(root / rel, rel.encode())
    (root / "empty_class").mkdir()
    (root / "a" / "dir.jpg").mkdir()  # a directory with an image name: not a file
    os.symlink(root / "c", root / "linked_class")  # a symlink to a folder is a class
    os.symlink(root / "top.jpg", root / "c" / "link.jpg")  # a symlinked file is read
    return root


def test_reader_order_equals_a_real_readers_file_run(tricky_tree: Path) -> None:
    got = [p.relative_to(tricky_tree).as_posix() for p in reader_order(tricky_tree)]
    real = _readers_file(tricky_tree)
    assert got == [rel for rel, _ in real]
    # Labels are the indices of the sorted class folders (empty ones included).
    classes = sorted({rel.split("/")[0] for rel, _ in real} | {"empty_class"}, key=os.fsencode)
    assert all(label == classes.index(rel.split("/")[0]) for rel, label in real)


def test_reader_order_rule(tricky_tree: Path) -> None:
    scan = scan_folder(tricky_tree)
    rels = scan.files
    assert "top.jpg" not in rels and scan.top_level == ["top.jpg", "top.png"]
    assert scan.nested == ["c/deep", "linked_class/deep"] and "c/deep/inner.jpg" not in rels
    assert ".hidden/h.jpg" in rels and "a/.jpg" in rels and "a/Y.Jpg" in rels
    assert "c/s.wav" in rels and "c/p.pgm" in rels  # readers.file's default filters
    assert "a/notes.txt" not in rels and "a/x.JPG.bak" not in rels and "a/dir.jpg" not in rels
    # Class by class in byte order, then files in byte order (not a global path sort).
    assert rels.index("a/z.jpg") < rels.index("a b/x.jpg") < rels.index("a-b/x.jpg")
    assert rels.index("a-b/x.jpg") < rels.index("a.b/x.jpg")
    assert rels.index("A/q.png") < rels.index("a/.jpg")
    a = [r for r in rels if r.startswith("a/")]
    assert a == sorted(a, key=os.fsencode)
    assert rels.index("a/z.jpg") < rels.index("a/é.jpg") < rels.index("a/ż.jpg")


def test_collect_folder_uses_reader_order(corpus: dict[str, CorpusEntry]) -> None:
    root = dataset_root(corpus)
    got, problems = collect(root)
    expected = [p.relative_to(root).as_posix() for p in reader_order(root)]
    bad = {"bad/empty.jpg", "bad/loop.jpg"}  # rejected before decoding
    assert [g.name for g in got] == [e for e in expected if e not in bad]
    assert {p.name for p in problems} == bad


def test_collect_flat_folder_lists_top_level_images_first(tmp_path: Path) -> None:
    for rel in ["b.png", "a.jpg", "C.JPEG", "notes.txt", "cls/z.jpg", "cls/deep/no.jpg"]:
        _write(tmp_path / rel, b"data")
    got, problems = collect(tmp_path)
    assert [g.name for g in got] == ["C.JPEG", "a.jpg", "b.png", "cls/z.jpg"]
    assert problems == []


def test_reader_files_load_the_reader_s_files_whatever_their_type(tmp_path: Path) -> None:
    """The exported pipeline's files, in its order with repeats, named relative to the
    folder: a type the app does not offer (.ppm) is loaded for DALI to decode; a bad file is
    named by its path in the folder."""
    for rel in ["a/x.jpg", "a/y.ppm", "b/z.png"]:
        _write(tmp_path / rel, b"data")
    _write(tmp_path / "b/empty.jpg", b"")
    files = ("a/x.jpg", "a/y.ppm", "b/empty.jpg", "b/z.png", "a/x.jpg")
    got, problems = collect(ReaderFiles(tmp_path, files))
    assert [g.name for g in got] == ["a/x.jpg", "a/y.ppm", "b/z.png", "a/x.jpg"]
    assert [(p.name, p.reason) for p in problems] == [("b/empty.jpg", "empty file (0 bytes)")]
    assert ".ppm" not in SUPPORTED_EXTENSIONS


@pytest.mark.parametrize(
    "key", ["missing", "zero_bytes", "symlink_loop", "empty_folder"]
)
def test_collect_reports_bad_paths(corpus: dict[str, CorpusEntry], key: str) -> None:
    entry = corpus[key]
    good = corpus["good_jpeg"]
    got, problems = collect([entry.path, good.path])
    assert [g.name for g in got] == [str(good.path)]
    assert len(problems) == 1 and problems[0].name == str(entry.path)
    assert entry.expect in problems[0].reason
    assert str(problems[0]) == f"{entry.path}: {problems[0].reason}"


def test_collect_other_problems(tmp_path: Path) -> None:
    good = _write(tmp_path / "ok.jpg", b"jpeg")
    gif = _write(tmp_path / "anim.gif", b"GIF89a")
    noext = _write(tmp_path / "README", b"text")
    fifo = tmp_path / "pipe.jpg"
    os.mkfifo(fifo)  # opening it for reading would block: must be refused from its stat
    broken = tmp_path / "broken.jpg"
    os.symlink(tmp_path / "gone.jpg", broken)
    big = _write(tmp_path / "big.png", b"\0" * 2000)
    got, problems = collect(
        [good, gif, noext, fifo, broken, big, "/dev/null"], max_bytes=1000
    )
    assert [g.name for g in got] == [str(good)]
    reasons = {p.name: p.reason for p in problems}
    assert reasons[str(gif)].startswith("unsupported file type '.gif'")
    assert reasons[str(noext)].startswith("unsupported file type '(none)'")
    assert reasons[str(fifo)] == "not a regular file"
    assert reasons["/dev/null"] == "not a regular file"
    assert reasons[str(broken)] == "broken symbolic link"
    assert reasons[str(big)].startswith("too large (2000 bytes; the limit is 1000 bytes)")


def test_collect_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path / "secret.jpg", b"jpeg")
    if os.geteuid() != 0:
        path.chmod(0)
    else:  # root reads anything: simulate the permission error instead
        real_open = os.open

        def deny(p, *args, **kwargs):
            if Path(p) == path:
                raise PermissionError(13, "Permission denied", str(p))
            return real_open(p, *args, **kwargs)

        monkeypatch.setattr(os, "open", deny)
    got, problems = collect(path)
    assert got == [] and problems == [ImageProblem(str(path), "permission denied (unreadable)")]


def test_collect_uploads_and_non_ascii_names(corpus: dict[str, CorpusEntry]) -> None:
    data = corpus["non_ascii"].path.read_bytes()
    got, problems = collect(
        [data, ("żółw ćma.JPG", data), ("clip.mp4", data), ("none", b""), corpus["non_ascii"].path]
    )
    assert [g.name for g in got] == ["upload-1", "żółw ćma.JPG", str(corpus["non_ascii"].path)]
    assert all(g.data == data for g in got)
    assert [p.name for p in problems] == ["clip.mp4", "none"]
    single, _ = collect(("one.png", data))  # a lone (name, bytes) tuple is one upload
    assert [g.name for g in single] == ["one.png"]
    raw, _ = collect(data)
    assert [g.name for g in raw] == ["upload-1"]


def test_collect_folder_names_are_relative_and_non_ascii(corpus: dict[str, CorpusEntry]) -> None:
    got, _ = collect(dataset_root(corpus))
    assert "good/café_żółw.jpg" in [g.name for g in got]


def test_max_files(tmp_path: Path) -> None:
    for i in range(5):
        _write(tmp_path / "cls" / f"{i}.jpg", b"data")
    got, problems = collect(tmp_path, max_files=3)
    assert [g.name for g in got] == ["cls/0.jpg", "cls/1.jpg", "cls/2.jpg"]
    assert len(problems) == 1 and "only 3 images" in problems[0].reason
    assert "2 more skipped" in problems[0].reason and problems[0].name == "cls/3.jpg"


@pytest.fixture
def jail(tmp_path: Path) -> Path:
    """allowed/ (the root) next to outside/, with links that lead out of the root."""
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    _write(allowed / "a.jpg", b"inside")
    _write(allowed / "sub" / "b.jpg", b"inside too")
    _write(outside / "c.jpg", b"secret")
    _write(outside / "cls" / "d.jpg", b"secret")
    os.symlink(outside / "c.jpg", allowed / "link_out.jpg")
    os.symlink(outside, allowed / "linkdir")
    os.symlink("../a.jpg", allowed / "sub" / "link_in.jpg")
    _write(allowed / "%2e%2e%2foutside%2fc.jpg", b"just a name")
    return allowed


def test_root_restriction(jail: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    real_open = os.open

    def spy(p, *args, **kwargs):
        opened.append(os.path.realpath(p))
        return real_open(p, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    outside = jail.parent / "outside"
    got, problems = collect(
        [
            "a.jpg",  # relative to root
            "sub/../a.jpg",
            "../outside/c.jpg",
            str(outside / "c.jpg"),  # absolute, outside
            str(jail / "sub" / "b.jpg"),  # absolute, inside
            "link_out.jpg",
            "linkdir",
            "linkdir/cls/d.jpg",
            "sub/link_in.jpg",
            "%2e%2e%2foutside%2fc.jpg",  # URL-encoded-looking: just a file name
            "%2e%2e/outside/c.jpg",  # ditto: a folder literally named %2e%2e does not exist
        ],
        root=jail,
    )
    assert [g.name for g in got] == [
        "a.jpg", "sub/../a.jpg", "sub/b.jpg", "sub/link_in.jpg", "%2e%2e%2foutside%2fc.jpg",
    ]
    assert got[-1].data == b"just a name"
    reasons = {p.name: p.reason for p in problems}
    for name in ["../outside/c.jpg", str(outside / "c.jpg"), "link_out.jpg", "linkdir",
                 "linkdir/cls/d.jpg"]:
        assert reasons[name] == "outside the allowed folder"
    assert reasons["%2e%2e/outside/c.jpg"] == "file not found"
    assert not [p for p in opened if not p.startswith(str(jail.resolve()))]


def test_root_restriction_on_a_folder(jail: Path) -> None:
    got, problems = collect(jail, root=jail)
    # linkdir is a symlink to a folder, so readers.file would treat it as a class folder.
    assert [g.name for g in got] == [
        "%2e%2e%2foutside%2fc.jpg", "a.jpg", "sub/b.jpg", "sub/link_in.jpg",
    ]
    assert problems == [
        ImageProblem("link_out.jpg", "outside the allowed folder"),
        ImageProblem("linkdir/c.jpg", "outside the allowed folder"),
    ]
    got, problems = collect(jail / "linkdir", root=jail)
    assert got == [] and problems == [ImageProblem("linkdir", "outside the allowed folder")]
    os.symlink(jail.parent / "outside" / "c.jpg", jail / "sub" / "out.jpg")
    got, problems = collect("sub", root=jail)
    assert [g.name for g in got] == ["b.jpg", "link_in.jpg"]  # relative to the folder given
    assert problems == [ImageProblem("out.jpg", "outside the allowed folder")]


# ---------------------------------------------------------------------------------------------
# decode
# ---------------------------------------------------------------------------------------------

DECODABLE = [
    "good_jpeg", "good_png", "good_webp", "good_bmp", "good_tiff", "gray_jpeg", "cmyk_jpeg",
    "rgba_png", "png16", "palette_png", "exif6", "one_px", "non_ascii",
]
UNDECODABLE = ["truncated", "corrupt_scan", "bad_header", "text_as_jpg", "bomb"]


@pytest.fixture(scope="module")
def decoded(corpus: dict[str, CorpusEntry]):
    """One decode() call over the whole corpus, bad images interleaved with good ones."""
    keys = [k for pair in zip(DECODABLE, UNDECODABLE * 3, strict=False) for k in pair]
    keys += [k for k in DECODABLE + UNDECODABLE if k not in keys]
    inputs = [EncodedImage(k, corpus[k].path.read_bytes()) for k in keys]
    arrays, ok, problems = decode(inputs)
    return inputs, dict(zip([e.name for e in ok], arrays, strict=True)), ok, problems


@pytest.mark.parametrize("key", DECODABLE)
def test_good_images_decode(decoded, corpus: dict[str, CorpusEntry], key: str) -> None:
    _, by_name, _, _ = decoded
    arr = by_name[key]
    assert arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] == 3
    assert arr.shape[:2] == corpus[key].shape


@pytest.mark.parametrize("key", UNDECODABLE)
def test_bad_images_are_reported(decoded, corpus: dict[str, CorpusEntry], key: str) -> None:
    _, by_name, _, problems = decoded
    assert key not in by_name
    reasons = {p.name: p.reason for p in problems}
    assert corpus[key].expect in reasons[key]


def test_decode_keeps_input_order(decoded) -> None:
    inputs, _, ok, problems = decoded
    assert [e.name for e in ok] == [e.name for e in inputs if e.name in DECODABLE]
    assert [p.name for p in problems] == [e.name for e in inputs if e.name in UNDECODABLE]
    assert all(isinstance(e, EncodedImage) for e in ok)


def _mean(arr: np.ndarray, ys: slice, xs: slice) -> np.ndarray:
    return arr[ys, xs].reshape(-1, 3).mean(axis=0)


def _close(colour: np.ndarray, expected: tuple[int, int, int], tol: float = 30) -> bool:
    return bool(np.abs(colour - np.array(expected)).max() < tol)


def test_exif_orientation_is_applied(decoded) -> None:
    arr = decoded[1]["exif6"]  # stored 64 wide x 96 high, red top-left; shown rotated 90° CW
    h, w = arr.shape[:2]
    assert (h, w) == (64, 96)
    assert _close(_mean(arr, slice(4, h // 2 - 4), slice(w // 2 + 4, w - 4)), RED)
    assert _close(_mean(arr, slice(h // 2 + 4, h - 4), slice(4, w // 2 - 4)), BLUE)


@pytest.mark.parametrize("key", ["good_jpeg", "good_png", "good_webp", "good_bmp", "good_tiff",
                                 "cmyk_jpeg", "rgba_png", "palette_png", "non_ascii"])
def test_colours_survive(decoded, key: str) -> None:
    arr = decoded[1][key]
    h, w = arr.shape[:2]
    tol = 45 if key == "cmyk_jpeg" else 30
    assert _close(_mean(arr, slice(1, h // 2 - 1), slice(1, w // 2 - 1)), RED, tol)
    assert _close(_mean(arr, slice(h // 2 + 1, h - 1), slice(w // 2 + 1, w - 1)), BLUE, tol)


def test_gray_and_16_bit(decoded) -> None:
    gray = decoded[1]["gray_jpeg"].astype(int)
    assert np.abs(gray[..., 0] - gray[..., 1]).max() <= 2
    assert gray[:, -1, 0].mean() > gray[:, 0, 0].mean() + 200
    deep = decoded[1]["png16"]
    row = deep[0, :, 0].astype(int)
    assert row[0] == 0 and row[-1] == 255 and (np.diff(row) >= 0).all()
    assert (decoded[1]["one_px"][0, 0] == (9, 99, 199)).all()


def test_bad_sample_in_a_later_batch(corpus: dict[str, CorpusEntry]) -> None:
    good = corpus["good_jpeg"].path.read_bytes()
    inputs = [EncodedImage(f"g{i}", good) for i in range(11)]
    inputs.insert(9, EncodedImage("bad", corpus["truncated"].path.read_bytes()))
    inputs.insert(3, EncodedImage("garbage", corpus["corrupt_scan"].path.read_bytes()))
    arrays, ok, problems = decode(inputs)
    assert [e.name for e in ok] == [f"g{i}" for i in range(11)]
    assert [p.name for p in problems] == ["garbage", "bad"]
    assert all(np.array_equal(a, arrays[0]) for a in arrays)


def test_corrupt_scan_is_random_garbage_not_an_error() -> None:
    """Guards the corpus itself: the damaged JPEG still decodes in Pillow (no exception)."""
    data = corrupt_scan(_jpeg(_pattern(256, 256)))
    with Image.open(__import__("io").BytesIO(data)) as im:
        im.load()
        assert im.size == (256, 256)


def test_empty_input_and_empty_bytes() -> None:
    assert decode([]) == ([], [], [])
    arrays, ok, problems = decode([EncodedImage("nothing.jpg", b"")])
    assert arrays == [] and ok == []
    assert problems == [ImageProblem("nothing.jpg", "empty (0 bytes)")]


def test_max_side_downscales_without_upscaling(corpus: dict[str, CorpusEntry]) -> None:
    keys = ["good_jpeg", "good_png", "exif6", "one_px", "good_webp"]
    inputs = [EncodedImage(k, corpus[k].path.read_bytes()) for k in keys]
    arrays, ok, problems = decode(inputs, max_side=48)
    assert problems == []
    shapes = {e.name: a.shape for e, a in zip(ok, arrays, strict=True)}
    assert shapes == {
        "good_jpeg": (32, 48, 3),  # 64x96 -> longer side 48
        "good_png": (29, 48, 3),  # 48x80 -> 28.8 rounds to 29
        "exif6": (32, 48, 3),
        "one_px": (1, 1, 3),  # never upscaled
        "good_webp": (30, 40, 3),  # already smaller than 48
    }
    full, _, _ = decode(inputs[-1:])
    assert np.array_equal(full[0], arrays[-1])  # an image under the limit is left untouched
    with pytest.raises(ValueError):
        decode(inputs, max_side=0)


def test_large_image_downscaled(large_image: Path) -> None:
    arrays, ok, problems = decode([EncodedImage("huge.jpg", large_image.read_bytes())],
                                  max_side=512)
    assert problems == [] and arrays[0].shape == (384, 512, 3)
    arr = arrays[0]
    assert _close(_mean(arr, slice(10, 180), slice(10, 240)), RED)
    assert _close(_mean(arr, slice(200, 374), slice(270, 500)), BLUE)


def test_pixel_limit(large_image: Path, corpus: dict[str, CorpusEntry]) -> None:
    small = corpus["good_png"].path.read_bytes()
    inputs = [EncodedImage("huge.jpg", large_image.read_bytes()), EncodedImage("ok.png", small)]
    _, ok, problems = decode(inputs, max_pixels=100_000_000)
    assert [e.name for e in ok] == ["ok.png"]
    assert problems == [
        ImageProblem("huge.jpg", "too large (12000x9000, 108 MP; the limit is 100 MP)")
    ]


def test_large_image_full_size(large_image: Path) -> None:
    arrays, _, problems = decode([EncodedImage("huge.jpg", large_image.read_bytes())])
    assert problems == [] and arrays[0].shape == (9000, 12000, 3)


def test_peek_failure_still_named(corpus: dict[str, CorpusEntry]) -> None:
    """Header damage fails fn.peek_image_shape too; the image is then decoded alone."""
    shapes = images_mod.peek_shapes(
        [corpus[k].path.read_bytes() for k in ["good_jpeg", "bad_header", "exif6"]]
    )
    assert shapes == [(64, 96, 3), None, (64, 96, 3)]


def test_stderr_is_restored(corpus: dict[str, CorpusEntry]) -> None:
    before = os.fstat(2)
    with pytest.raises(KeyError), captured_stderr() as cap:
        os.write(2, b"Corrupt JPEG data: test line\n")
        raise KeyError("boom")
    assert "Corrupt JPEG data: test line" in cap.text
    decode([EncodedImage("c", corpus["corrupt_scan"].path.read_bytes())])
    after = os.fstat(2)
    assert (before.st_ino, before.st_dev) == (after.st_ino, after.st_dev)


def test_never_any_data() -> None:
    """ANY_DATA kills the process on grayscale JPEGs (DALI 2.4 notes): it must never appear."""
    import dali_gallery.pipelines.dataset_check as checker
    import dali_gallery.pipelines.image_decode as decoding

    for module in (decoding, checker):
        src = Path(module.__file__).read_text()
        assert "ANY_DATA" not in src.replace("``output_type=types.ANY_DATA``", "")
        assert "output_type=types.RGB" in src


def test_supported_extensions() -> None:
    expected = {".jpg", ".jpeg", ".png", ".webp", ".tif", ".tiff", ".bmp"}
    assert expected == SUPPORTED_EXTENSIONS


def test_pipeline_recovers_after_errors(corpus: dict[str, CorpusEntry]) -> None:
    bad = EncodedImage("bad", corpus["text_as_jpg"].path.read_bytes())
    good = EncodedImage("good", corpus["good_png"].path.read_bytes())
    for _ in range(3):
        _, ok, problems = decode([bad])
        assert ok == [] and len(problems) == 1
        _, ok, problems = decode([good])
        assert [e.name for e in ok] == ["good"] and problems == []


def test_decode_in_a_fresh_process(corpus: dict[str, CorpusEntry]) -> None:
    """The whole corpus in a child interpreter: it must exit normally (no SIGSEGV/SIGABRT)."""
    import subprocess

    paths = [str(e.path) for e in corpus.values() if e.path.is_file()]
    code = (
        "import sys; from dali_gallery.pipelines.images import collect, decode\n"
        "imgs, p1 = collect(sys.argv[1:]); arrays, ok, p2 = decode(imgs, max_side=64)\n"
        "print(len(arrays), len(p1) + len(p2))\n"
    )
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code, *paths], cwd=root, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    n_ok, n_bad = map(int, out.stdout.split())
    assert n_ok == len(DECODABLE) and n_ok + n_bad == len(paths)


def test_problems_never_name_a_server_path(tmp_path: Path) -> None:
    """Error text reaches the served page: a folder is named by its own name (or relative to
    the allowed root), an OS error by its reason only, never by the absolute path."""
    empty = tmp_path / "holiday"
    empty.mkdir()
    _, problems = collect(empty)
    assert problems == [ImageProblem("holiday", "no images found")]
    _, problems = collect("holiday", root=tmp_path)
    assert problems == [ImageProblem("holiday", "no images found")]
    reason = images_mod.os_error_reason(OSError(5, "Input/output error", str(tmp_path / "x")))
    assert reason == "cannot be read (Input/output error)" and str(tmp_path) not in reason


def test_uploaded_names_cannot_forge_report_lines(corpus: dict[str, CorpusEntry]) -> None:
    data = corpus["good_png"].path.read_bytes()
    got, problems = collect([("x.gif: fine\nok.png", data), ("\x1b[2Jx.gif", data)])
    assert [g.name for g in got] == ["x.gif: fine\\nok.png"]
    assert [p.name for p in problems] == ["\\x1b[2Jx.gif"]
