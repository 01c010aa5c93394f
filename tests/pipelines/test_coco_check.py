"""The annotation checks the preview and the exported module share (pipelines/coco_check.py):
the export carries every name they read, and a box is clipped only where it crosses an edge."""

from __future__ import annotations

import ast
import builtins
import inspect

import numpy as np

from dali_gallery.pipelines import coco_check
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
