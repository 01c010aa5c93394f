"""The source a custom operator's copy is made of: its annotations are left out (nothing
evaluates them in the user's module; the generated module would, or would need their names)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.custom_spec import source_of, without_annotations

if TYPE_CHECKING:
    from numpy.typing import NDArray


def _bare_local(image):
    out: NDArray[np.uint8]
    if image.ndim == 3:
        out = image // 2
    else:
        out: NDArray[np.uint8]  # the only statement of its block but this comment
    return out


def test_a_bare_local_annotation_is_dropped_and_its_names_not_required():
    """Regression: ``out: NDArray[np.uint8]`` with no value (NDArray imported under
    TYPE_CHECKING only) was copied, so registering refused 'NDArray' as undefined."""
    src = source_of(_bare_local)
    assert "NDArray" not in src
    assert "    pass\n    if image.ndim == 3:" in src
    assert "        pass  # the only statement of its block but this comment" in src
    compile(src, "copy.py", "exec")
    catalog = Catalog(list(CATALOG.values()))  # private: the shared one stays as it is
    custom_op("custom.test_bare_annotation", "Half.", catalog=catalog)(_bare_local)
    code = catalog["custom.test_bare_annotation"].custom_code
    assert code is not None and "NDArray" not in code.source


@pytest.mark.parametrize(("src", "kept"), [
    ("def f(a):\n    a.b: T\n    return a\n", "a.b: T"),  # evaluates a: not only an annotation
    ("def f(a):\n    class C:\n        x: T\n    return C\n", "x: T"),  # a dataclass reads it
])
def test_annotations_that_do_something_stay(src, kept):
    assert kept in without_annotations(src)
