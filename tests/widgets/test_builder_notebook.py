"""notebooks/builder.ipynb executes headless, top to bottom, in under a minute."""

from __future__ import annotations

import time

import nbformat
from nbclient import NotebookClient

from tests.support import REPO

NOTEBOOK = REPO / "notebooks" / "builder.ipynb"


def test_builder_notebook_executes(tmp_path, monkeypatch):
    monkeypatch.setenv("DALI_GALLERY_EXPORT_DIR", str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    t = time.perf_counter()
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    assert time.perf_counter() - t < 60
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    widget_views = [o for o in outputs
                    if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert widget_views, "the builder widget was not displayed"
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    assert "exported pipeline == preview draw 0 for 6 of 6 images" in text
    assert (tmp_path / "my_augment.py").read_text().startswith('"""Augmentation pipeline')
    assert (tmp_path / "my_augment_preset.json").exists()
