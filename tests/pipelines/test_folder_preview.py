"""The preview of a folder: the exported pipeline's files, order and labels, one listing; what
the preview shows differently is counted, never silent."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.folder_preview import folder_preview, unread_images
from dali_gallery.pipelines.preset import load
from tests.support import SAMPLES, import_export, preset_dict

SAMPLE_FILES = sorted(SAMPLES.glob("*.jpg"))
PRESET = load(preset_dict([
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-30, 30]}}},
    {"op": "flip", "params": {"horizontal": {"choice": [True, False]}}},
], seed=11))


def _image(k: int, path: Path) -> None:
    """Sample ``k``, small, saved in the type ``path``'s suffix names."""
    path.parent.mkdir(parents=True, exist_ok=True)
    img = Image.open(SAMPLE_FILES[k % len(SAMPLE_FILES)]).convert("RGB")
    img.thumbnail((64, 64))
    img.save(path, format={".ppm": "PPM", ".png": "PNG", ".webp": "WEBP"}.get(path.suffix, "JPEG"))


@pytest.fixture
def classes(tmp_path: Path) -> Path:
    """Two class folders, a .ppm (which DALI's reader reads) among them, an image beside them
    and one in a folder nested in a class folder (which it does not read)."""
    root = tmp_path / "data"
    for k, rel in enumerate(["a/x1.jpg", "a/x2.ppm", "a/x3.png", "b/y1.jpg", "b/y2.jpg",
                             "top.webp", "a/nested/z.jpg"]):
        _image(k, root / rel)
    return root


@pytest.fixture
def engine():
    engine = PreviewEngine("cpu")
    yield engine
    engine.close()


def _exported_first_batch(root: Path, n: int, tmp: Path) -> tuple[list[np.ndarray], list[int]]:
    pipe = import_export(PRESET, tmp).create_pipeline(str(root), n, num_threads=1,
                                                      device_id=None, random_shuffle=False)
    pipe.build()
    images, labels = pipe.run()
    out = [np.array(images[i]) for i in range(n)], [int(np.array(labels[i])[0]) for i in range(n)]
    del pipe
    return out


def test_draw_0_is_the_exported_first_batch_with_its_labels(classes, engine, tmp_path):
    """The preview showed top.webp first and left the .ppm out; labels were 0..n-1."""
    view = folder_preview(engine, PRESET, classes)
    files = ["a/x1.jpg", "a/x2.ppm", "a/x3.png", "b/y1.jpg", "b/y2.jpg"]
    assert view.batch.files == files and engine.names == files
    assert view.labels == view.batch.labels == [0, 0, 0, 1, 1]
    assert view.exact and view.unread == ["top.webp", "a/nested/"]
    note = view.notes("data")
    assert note == ["1 image(s) beside the class folders and 1 folder(s) of images inside "
                    "class folders of data are not read by the exported pipeline (readers.file "
                    "reads the files in class folders only), so they are not previewed: "
                    "top.webp, a/nested/"]
    render = engine.render(view.preset, draws=2)
    images, labels = _exported_first_batch(classes, len(files), tmp_path)
    assert labels == view.labels
    for i, image in enumerate(images):
        np.testing.assert_array_equal(render.first_draw()[i], image)


def test_a_file_the_preview_cannot_load_is_skipped_and_counted(classes, engine):
    (classes / "b" / "y0.jpg").write_bytes(b"\xff\xd8\xff\xe0 truncated")
    view = folder_preview(engine, PRESET, classes, batch_size=5)
    assert view.batch.files[3] == "b/y0.jpg" and len(view.batch.files) == 5
    assert [p.name for p in view.skipped] == ["b/y0.jpg"] and not view.exact
    assert engine.names == ["a/x1.jpg", "a/x2.ppm", "a/x3.png", "b/y1.jpg"]
    assert view.labels == [0, 0, 0, 1]
    assert ("the preview shows 4 of the 5 images of the exported pipeline's first batch "
            "(1 skipped)") in view.notes("data")[0]


def test_a_shard_and_a_batch_past_the_files_read_as_the_reader_does(classes, engine):
    view = folder_preview(engine, PRESET, classes, shard_id=1, num_shards=2, batch_size=4)
    # the shard's last file again: the exported reader pads its last batch (pad_last_batch)
    assert view.batch.files == ["a/x3.png", "b/y1.jpg", "b/y2.jpg", "b/y2.jpg"]
    assert view.labels == [0, 1, 1, 1] and view.preset.seed != PRESET.seed


def test_a_flat_folder_is_read_whole(tmp_path, engine):
    for k in range(3):
        _image(k, tmp_path / f"img_{k}.png")
    (tmp_path / "notes.txt").write_text("no image")
    view = folder_preview(engine, PRESET, tmp_path)
    assert view.batch.files == ["img_0.png", "img_1.png", "img_2.png"]
    assert view.labels == [0, 1, 2] and view.unread == [] and view.notes("x") == []


def test_no_images_where_the_reader_reads_says_where_they_are(tmp_path, engine):
    (tmp_path / "empty_class").mkdir()
    _image(0, tmp_path / "top.jpg")
    assert unread_images(tmp_path) == ["top.jpg"]
    with pytest.raises(ValueError, match=r"no images where the exported pipeline reads them.*"
                                         r"1 image\(s\) lie where it does not read: top.jpg"):
        folder_preview(engine, PRESET, tmp_path)
    with pytest.raises(ValueError, match="batch size 0 is not allowed for a preview"):
        shutil.copy(tmp_path / "top.jpg", tmp_path / "empty_class" / "a.jpg")
        folder_preview(engine, PRESET, tmp_path, batch_size=0)


def test_an_empty_hidden_class_folder_is_numbered_and_said(tmp_path, engine):
    """A Jupyter ``.ipynb_checkpoints`` beside the class folders takes label 0 in DALI's
    numbering (labels 1 and 2 for a 2-class model): the preview's labels are the exported
    pipeline's, and a note says so and what to do."""
    root = tmp_path / "pets"
    _image(0, root / "cat" / "a.jpg")
    _image(1, root / "dog" / "b.jpg")
    (root / ".ipynb_checkpoints").mkdir()
    view = folder_preview(engine, PRESET, root, batch_size=2)
    _, labels = _exported_first_batch(root, 2, tmp_path)
    assert view.labels == labels == [1, 2]
    assert view.classes == [".ipynb_checkpoints", "cat", "dog"]
    assert view.empty == [".ipynb_checkpoints"]
    (note,) = view.notes("pets")
    assert "the labels are .ipynb_checkpoints 0, cat 1, dog 2" in note


def test_a_subfolder_beside_a_flat_folder_s_images_is_named(tmp_path, engine):
    root = tmp_path / "flat"
    _image(0, root / "a.jpg")
    (root / ".ipynb_checkpoints").mkdir()
    with pytest.raises(ValueError, match=r"lie where it does not read: a\.jpg\); its "
                                         r"subfolder\(s\) \.ipynb_checkpoints make"):
        folder_preview(engine, PRESET, root)
