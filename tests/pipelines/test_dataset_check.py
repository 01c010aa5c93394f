"""pipelines.dataset_check: every bad file of a training folder, found with the training reader."""

from __future__ import annotations

import io
import os
import shutil
from pathlib import Path

import pytest

from dali_gallery.pipelines.dataset_check import (
    DatasetRootError,
    check_dataset,
    format_report,
    run_check,
)
from dali_gallery.pipelines.images import ImageProblem, reader_order
from tests.corpus import BAD_DIR, GOOD_DIR, CorpusEntry, _jpeg, _pattern, dataset_root, png_bomb

DATASET_BAD = ["truncated", "corrupt_scan", "bad_header", "text_as_jpg", "zero_bytes",
               "symlink_loop"]


def _copy_good(corpus: dict[str, CorpusEntry], dest: Path) -> Path:
    shutil.copytree(dataset_root(corpus) / GOOD_DIR, dest / GOOD_DIR)
    return dest


def test_corpus_dataset(corpus: dict[str, CorpusEntry]) -> None:
    root = dataset_root(corpus)
    checked, problems = check_dataset(root)
    assert checked == len(reader_order(root))
    reasons = {p.name: p.reason for p in problems}
    assert set(reasons) == {corpus[k].path.relative_to(root).as_posix() for k in DATASET_BAD}
    for key in DATASET_BAD:
        assert corpus[key].expect in reasons[corpus[key].path.relative_to(root).as_posix()]
    # Reported in reader order.
    order = [p.relative_to(root).as_posix() for p in reader_order(root)]
    assert [p.name for p in problems] == sorted(reasons, key=order.index)


def test_clean_dataset(corpus: dict[str, CorpusEntry], tmp_path: Path) -> None:
    root = _copy_good(corpus, tmp_path)
    checked, problems = check_dataset(root)
    assert checked == len(list((root / GOOD_DIR).iterdir())) and problems == []
    out = io.StringIO()
    assert run_check(root, out=out) == 0
    assert "all decode cleanly" in out.getvalue()


def test_continues_after_every_reader_error(corpus: dict[str, CorpusEntry], tmp_path: Path) -> None:
    """Reader errors poison the pipeline and come early (read-ahead): later files still count."""
    good = corpus["good_jpeg"].path.read_bytes()
    garbage = corpus["corrupt_scan"].path.read_bytes()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    (a / "00_good.jpg").write_bytes(good)
    os.symlink("01_loop.jpg", a / "01_loop.jpg")
    (a / "02_good.jpg").write_bytes(good)
    os.symlink("nowhere.jpg", a / "03_broken.jpg")
    (a / "04_garbage.jpg").write_bytes(garbage)
    (a / "05_empty.jpg").write_bytes(b"")
    os.symlink(".", a / "06_dir_link.jpg")  # a symlink (d_type LNK) to a folder: read, fails
    (a / "07_good.jpg").write_bytes(good)
    os.mkfifo(tmp_path / "fifo")
    os.symlink(tmp_path / "fifo", a / "08_fifo.jpg")  # opening it would hang the reader
    (b / "x_bad_header.jpg").write_bytes(corpus["bad_header"].path.read_bytes())
    os.symlink("y_loop.jpg", b / "y_loop.jpg")
    (b / "z_garbage.jpg").write_bytes(garbage)
    checked, problems = check_dataset(tmp_path)
    assert checked == 12
    assert [(p.name, p.reason.split(" (")[0]) for p in problems] == [
        ("a/01_loop.jpg", "symbolic link loop"),
        ("a/03_broken.jpg", "broken symbolic link"),
        ("a/04_garbage.jpg", "corrupt JPEG data, decodes to garbage"),
        ("a/05_empty.jpg", "empty file"),
        ("a/06_dir_link.jpg", "not a regular file"),
        ("a/08_fifo.jpg", "not a regular file"),
        ("b/x_bad_header.jpg", "cannot be decoded"),
        ("b/y_loop.jpg", "symbolic link loop"),
        ("b/z_garbage.jpg", "corrupt JPEG data, decodes to garbage"),
    ]


def test_ignored_and_blocking_entries(corpus: dict[str, CorpusEntry], tmp_path: Path) -> None:
    root = _copy_good(corpus, tmp_path)
    (root / "stray.jpg").write_bytes(corpus["good_jpeg"].path.read_bytes())
    (root / "README.md").write_text("not an image, not a problem")
    nested = root / GOOD_DIR / "more"
    nested.mkdir()
    (nested / "n.jpg").write_bytes(corpus["good_jpeg"].path.read_bytes())
    os.symlink("toploop", root / "toploop")  # readers.file cannot even be built with this
    (root / BAD_DIR).mkdir()
    (root / BAD_DIR / "garbage.jpg").write_bytes(corpus["corrupt_scan"].path.read_bytes())
    checked, problems = check_dataset(root)
    assert checked == len(list((root / GOOD_DIR).glob("*.*"))) + 1
    reasons = {p.name: p.reason for p in problems}
    assert set(reasons) == {"toploop", "stray.jpg", "good/more/", "bad/garbage.jpg"}
    assert "readers.file fails on it" in reasons["toploop"]
    assert "ignores" in reasons["stray.jpg"] and "ignores" in reasons["good/more/"]
    assert "garbage" in reasons["bad/garbage.jpg"]


def test_decompression_bomb_is_not_decoded(corpus: dict[str, CorpusEntry], tmp_path: Path) -> None:
    root = _copy_good(corpus, tmp_path)
    (root / "bombs").mkdir()
    (root / "bombs" / "bomb.png").write_bytes(png_bomb())
    checked, problems = check_dataset(root)
    assert [p.name for p in problems] == ["bombs/bomb.png"]
    assert problems[0].reason.startswith("too large (30000x30000, 900 MP")


def test_non_ascii_and_odd_names(tmp_path: Path) -> None:
    good = _jpeg(_pattern(20, 10))
    for rel in ["żółw/café.jpg", "a b/x y.JPG", "a.b/%2e%2e.jpg", "A/.jpg"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(good)
    (tmp_path / "żółw" / "źle.jpg").write_bytes(b"not an image")
    checked, problems = check_dataset(tmp_path)
    assert checked == 5
    assert [p.name for p in problems] == ["żółw/źle.jpg"]


@pytest.mark.parametrize("kind", ["missing", "file", "empty"])
def test_run_check_cannot_check(corpus: dict[str, CorpusEntry], tmp_path: Path, kind: str) -> None:
    target = {
        "missing": tmp_path / "nope",
        "file": corpus["good_jpeg"].path,
        "empty": corpus["empty_folder"].path,
    }[kind]
    out = io.StringIO()
    assert run_check(target, out=out) == 2
    text = out.getvalue()
    assert text.startswith("Cannot check images:") and "Traceback" not in text
    assert text.count("\n") == 1  # one paragraph
    with pytest.raises(DatasetRootError):
        check_dataset(target)


def test_flat_folder_is_checked_as_the_exported_file_list(tmp_path: Path) -> None:
    """A folder of images without class subfolders: the exported pipeline reads it as a sorted
    file list (flat_folder_files), and check-images reads it the same way."""
    from tests.support import SAMPLES

    for f in sorted(SAMPLES.glob("*.jpg"))[:3]:
        (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "broken.jpg").write_bytes(b"not an image")
    checked, problems = check_dataset(tmp_path)
    assert checked == 4
    assert [p.name for p in problems] == ["broken.jpg"]


def test_mixed_folder_reports_top_level_images(tmp_path: Path) -> None:
    from tests.support import SAMPLES

    jpgs = sorted(SAMPLES.glob("*.jpg"))
    (tmp_path / "cls").mkdir()
    (tmp_path / "cls" / jpgs[0].name).write_bytes(jpgs[0].read_bytes())
    (tmp_path / jpgs[1].name).write_bytes(jpgs[1].read_bytes())
    checked, problems = check_dataset(tmp_path)
    assert checked == 1
    assert [p.name for p in problems] == [jpgs[1].name]
    assert "readers.file ignores" in problems[0].reason


def test_run_check_problems(corpus: dict[str, CorpusEntry]) -> None:
    out = io.StringIO()
    assert run_check(dataset_root(corpus), out=out) == 1
    text = out.getvalue()
    assert "6 problems" in text and "bad/truncated.jpg: cannot be decoded" in text


def test_format_report() -> None:
    assert format_report(1, []) == (
        "Checked 1 file with DALI's readers.file + decoders.image: all decode cleanly."
    )
    text = format_report(3, [ImageProblem("a/b.jpg", "cannot be decoded (x)")])
    assert text.splitlines()[:2] == [
        "Checked 3 files with DALI's readers.file + decoders.image: 1 problem.",
        "  a/b.jpg: cannot be decoded (x)",
    ]


def test_uses_file_root_reader_when_possible(
    corpus: dict[str, CorpusEntry], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clean scan reads with exactly the training reader (``file_root`` only); ``files=`` is
    used only to restart after a reader error or to leave out files that must not be read."""
    import dali_gallery.pipelines.dataset_check as dc

    calls: list[list[str] | None] = []
    real_build = dc._build

    def spy(root, files, num_threads):
        calls.append(None if files is None else list(files))
        return real_build(root, files, num_threads)

    monkeypatch.setattr(dc, "_build", spy)
    root = dataset_root(corpus)
    check_dataset(root)
    assert calls[0] is None
    # bad/loop.jpg is a reader error, raised while earlier files may still be queued (read-ahead):
    # one restart with every file not yet checked, in reader order, the culprit left out.
    order = [p.relative_to(root).as_posix() for p in reader_order(root)]
    assert len(calls) == 2 and calls[1] is not None and "bad/loop.jpg" not in calls[1]
    assert calls[1] == [r for r in order if r in calls[1]]
    assert set(order[order.index("bad/loop.jpg") + 1 :]) <= set(calls[1])
    calls.clear()
    clean = _copy_good(corpus, tmp_path)
    (clean / "bombs").mkdir()
    (clean / "bombs" / "bomb.png").write_bytes(png_bomb())
    check_dataset(clean)
    assert len(calls) == 1 and calls[0] is not None and "bombs/bomb.png" not in calls[0]


def test_a_size_our_header_reader_cannot_tell_is_asked_of_dali(
    corpus: dict[str, CorpusEntry], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A format the header reader does not know still never reaches the decoder unchecked:
    DALI's own parser (fn.peek_image_shape) is asked, as the preview does."""
    import dali_gallery.pipelines.dataset_check as dc
    from dali_gallery.pipelines.image_headers import SizeCheck

    root = _copy_good(corpus, tmp_path)
    (root / "bombs").mkdir()
    (root / "bombs" / "bomb.png").write_bytes(png_bomb())
    monkeypatch.setattr(dc, "check_size", lambda f, limit: SizeCheck(None, None))
    _, problems = check_dataset(root)
    assert [(p.name, p.reason) for p in problems] == [
        ("bombs/bomb.png", "too large (30000x30000, 900 MP; the limit is 160 MP), not decoded")]


def test_image_files_of_a_type_the_reader_leaves_out_are_reported(tmp_path: Path) -> None:
    """A .gif or .jfif beside the JPEGs was not checked, not counted and not said: check-images
    reported a clean folder that trained without them."""
    good = _jpeg(_pattern(20, 10))
    for rel in ["cls/a.jpg", "cls/b.GIF", "cls/c.jfif", "cls/d.ppm", "cls/notes.txt"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(good)
    checked, problems = check_dataset(tmp_path)
    assert checked == 2  # a.jpg and d.ppm: readers.file reads both
    assert [p.name for p in problems] == ["cls/b.GIF", "cls/c.jfif"]
    assert problems[0].reason.startswith("not read: a .gif file, and readers.file reads jpg, "
                                         "jpeg, png, bmp, tif, tiff, pnm, ppm, pgm, pbm, jp2, "
                                         "webp files only")
    flat = tmp_path / "flat"
    flat.mkdir()
    for name in ["a.jpg", "b.gif", "c.ppm"]:
        (flat / name).write_bytes(good)
    checked, problems = check_dataset(flat)
    assert checked == 1 and [p.name for p in problems] == ["b.gif", "c.ppm"]
    assert "the exported pipeline reads a flat folder's jpg, jpeg, png, bmp, tif, tiff, webp " \
           "files only" in problems[1].reason
    (flat / "a.jpg").unlink()
    with pytest.raises(DatasetRootError, match=r"2 image files of a type the exported "
                                               r"pipeline does not read \(.gif, .ppm\)"):
        check_dataset(flat)
