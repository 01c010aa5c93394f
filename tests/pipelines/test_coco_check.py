"""The annotation checks the preview and the exported module share (pipelines/coco_check.py):
the export carries every name they read, and a box is clipped only where it crosses an edge."""

from __future__ import annotations

import ast
import builtins
import inspect
import json

import numpy as np
from PIL import Image

from dali_gallery.pipelines import coco_check
from dali_gallery.pipelines.annotations import dali_masks, load_coco
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.label_code import LabelSet
from dali_gallery.pipelines.preset import load
from tests.support import preset_dict


def test_the_labelled_module_defines_every_name_the_checks_read():
    code = export_code(load(preset_dict([{"op": "flip"}])), labels=LabelSet(masks=True))
    tree = ast.parse(code)
    defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    defined |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                if isinstance(t, ast.Name)}
    defined |= {(a.asname or a.name).split(".")[0] for n in tree.body
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    for fn in (*coco_check.EMBEDDED,):
        assert f"def {fn.__name__}(" in code
        body = ast.parse(inspect.getsource(fn))
        local = {a.arg for a in ast.walk(body) if isinstance(a, ast.arg)}
        local |= {n.id for n in ast.walk(body) if isinstance(n, ast.Name)
                  and isinstance(n.ctx, ast.Store)}
        read = {n.id for n in ast.walk(body) if isinstance(n, ast.Name)
                and isinstance(n.ctx, ast.Load)}
        missing = read - local - defined - set(dir(builtins))
        assert not missing, (fn.__name__, missing)


def test_a_box_is_clipped_only_where_it_crosses_an_edge():
    assert coco_check.clipped_box([1, 2, 3, 4], 10, 10) == [1, 2, 3, 4]  # as given
    assert coco_check.clipped_box([-0.25, 2, 3, 4], 10, 10) == [0.0, 2.0, 2.75, 4.0]
    left, top, w, h = coco_check.clipped_box([90.3, 0.0, 10.0, 5.0], 100, 100)
    assert (left, top, h) == (90.3, 0.0, 5.0)
    assert np.float32(left) + np.float32(w) <= 100  # the reader's float32 right edge
    assert coco_check.box_problem([-0.6, 2, 3, 4], 10, 10) is not None
    assert coco_check.box_problem([9.7, 2, 0.75, 4], 10, 10) is None  # 0.3 px inside


def test_a_box_only_lowest_category_does_not_blank_the_image_mask(tmp_path):
    """DALI 2.4's pixelwise_masks starts from the lowest category id's mask: a box-only
    annotation of category 1 beside a polygon of category 2 made the whole mask background
    (preview and training alike). The cleaned document draws the polygon as if alone."""
    images = tmp_path / "images"
    images.mkdir()
    Image.new("RGB", (36, 28), (90, 90, 90)).save(images / "a.jpg")
    polygon = {"id": 2, "image_id": 1, "category_id": 2, "bbox": [4, 3, 5, 17],
               "segmentation": [[4, 3, 9, 3, 9, 20, 4, 20]]}
    box_only = {"id": 1, "image_id": 1, "category_id": 1, "bbox": [20, 2, 6, 6]}
    masks, loaded = [], []
    for anns in ([box_only, polygon], [polygon]):
        doc = {"images": [{"id": 1, "file_name": "a.jpg", "width": 36, "height": 28}],
               "categories": [{"id": 1, "name": "box"}, {"id": 2, "name": "shape"}],
               "annotations": anns}
        (tmp_path / "raw.json").write_text(json.dumps(doc), encoding="utf-8")
        loaded.append(load_coco(tmp_path / "raw.json", images))
        clean = loaded[-1].write_clean(tmp_path / f"clean{len(anns)}")
        masks.append(dali_masks(clean, images, ["a.jpg"])["a.jpg"])
    with_box, alone = masks
    assert (alone == 2).sum() == 85 and with_box.tobytes() == alone.tobytes()
    (img,) = loaded[0].images  # the boxes stay as given, in order, and no problem is made
    assert img.classes.tolist() == [1, 2] and img.has_masks and not loaded[0].problems
    assert img.boxes.tobytes() == np.array([[20 / 36, 2 / 28, 26 / 36, 8 / 28],
                                            [4 / 36, 3 / 28, 9 / 36, 20 / 28]],
                                           np.float32).tobytes()
