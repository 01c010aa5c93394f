"""The builder's Import tab: a pasted pipeline replaces the chain (undoably), renders in DALI,
exports, gets its parity report; refused input changes nothing."""

from __future__ import annotations

import importlib
import json

import numpy as np

from dali_gallery.pipelines.export import export_code
from tests.pipelines.import_examples import ALB_KAGGLE, TV_DOCS_V2
from tests.widgets.conftest import settle
from tests.widgets.test_images_panel import browser_upload, upload

importlib.import_module("torchvision")
importlib.import_module("albumentations")


def test_import_replaces_the_pipeline_renders_and_exports(builder):
    builder.add_step("water")
    settle(builder)
    panel = builder.importer
    panel.sync = True
    panel.text.value = TV_DOCS_V2
    panel.button.click()
    assert panel.error is None and panel.result is not None
    assert [s.op for s in builder.preset.steps] == ["random_resized_crop", "flip"]
    assert builder.preset.output.mean == (0.485, 0.456, 0.406)
    assert "4 of 4 transforms imported from torchvision" in panel.status.value
    assert "RandomResizedCrop" in panel.table.value and "dg-import-table" in panel.table.value
    settle(builder)
    assert builder.last_error is None
    assert builder.tile_bytes(0, 0)  # the preview shows the imported chain, rendered by DALI
    assert builder.code == export_code(builder.preset) and "fn.random_resized_crop" in \
        builder.code
    # the parity report ran on the builder's images (sync), claims hold
    report = panel.report
    assert report is not None and report.all_hold
    assert report.n_images == min(4, len(builder.engine.images))
    assert "dg-parity-step" in panel.parity.value and "holds" in panel.parity.value
    assert "<img src='data:image/jpeg;base64," in panel.parity.value
    assert report.pipeline.dali_cpu_ms is not None and report.pipeline.original_ms is not None
    # undo brings the previous chain back
    assert builder.undo()
    assert [s.op for s in builder.preset.steps] == ["water"]


def test_refused_input_changes_nothing_and_says_where(builder, tmp_path):
    builder.add_step("rotate")
    before = builder.preset.to_dict()
    panel = builder.importer
    canary = tmp_path / "ran"
    result = panel.import_text(f"import os\nos.system('touch {canary}')")
    assert result is None and not canary.exists()
    assert "line 1, column 1: import of 'os' is not allowed" in panel.error
    assert "dg-error" in panel.status.value or "import of" in panel.status.value
    assert builder.preset.to_dict() == before
    assert panel.import_text("T.Compose([T.Resize(256)") is None
    assert "not valid Python" in panel.error and builder.preset.to_dict() == before


def test_a_saved_albumentations_file_uploads_and_imports(builder):
    A = importlib.import_module("albumentations")
    panel = builder.importer
    panel.compare.value = False
    saved = json.dumps(A.to_dict(A.Compose([A.HorizontalFlip(p=0.5),
                                            A.Rotate(limit=20, p=0.3)])))
    browser_upload(panel.upload, upload("aug.json", saved.encode()))
    assert [s.op for s in builder.preset.steps] == ["flip", "rotate"]
    assert panel.text.value == saved and panel.report is None
    browser_upload(panel.upload, upload("big.py", b"#" * 300_000))
    assert "at most 256000" in panel.error
    browser_upload(panel.upload, upload("bin.py", b"\xff\xfe\x00"))
    assert "not UTF-8" in panel.error
    assert [s.op for s in builder.preset.steps] == ["flip", "rotate"]


def test_the_current_pipeline_written_back_as_library_code(builder):
    panel = builder.importer
    panel.compare.value = False
    panel.import_text(ALB_KAGGLE)
    code = panel.show_library_code("albumentations")
    assert "A.HorizontalFlip(p=0.5)" in code and "ToTensorV2()" in code
    assert 'download="augment_albumentations.py"' in panel.reverse.value
    namespace: dict = {}
    exec(compile(code, "written.py", "exec"), namespace)  # our own output
    out = namespace["transform"](image=np.zeros((300, 300, 3), np.uint8))["image"]
    assert tuple(out.shape) == (3, 224, 224)
    tv = panel.show_library_code("torchvision")
    assert "v2.RandomResizedCrop(224" in tv


def test_parity_runs_off_the_ui_thread_and_a_newer_import_wins(builder):
    panel = builder.importer
    panel.sync = False
    panel.import_text(TV_DOCS_V2)
    first = panel._thread
    panel.import_text(ALB_KAGGLE)
    assert panel.wait(300) and first is not None
    first.join(300)
    assert panel.report is not None
    assert {c.item.call.library for c in panel.report.comparisons} == {"albumentations"}
    panel.close()
