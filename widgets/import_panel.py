"""The builder's Import tab: paste a torchvision / Albumentations pipeline, get it as DALI steps.

The pasted text is read from its syntax tree (never run; refused input says why and changes
nothing). An import replaces the builder's pipeline (undoable), so the preview renders it with
DALI and the Export tab has its training code at once; then the parity report runs the original
library beside DALI on the builder's images, off the UI thread, and shows each step's
difference, the verdict and the timings. "as torchvision" / "as Albumentations" write the
current pipeline back as library code.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from html import escape
from typing import Any

import ipywidgets as w
import numpy as np

from dali_gallery.pipelines.importers import ImportRefused, ImportResult, import_pipeline
from dali_gallery.pipelines.preset import Preset, PresetError

from . import style
from .export_panel import code_html, download_link
from .style import shared_layout
from .upload_entry import UploadRefused, entry_bytes, entry_name

IMPORT = "dg-import"
IMPORT_TEXT = "dg-import-text"
IMPORT_BUTTON = "dg-import-button"
IMPORT_UPLOAD = "dg-import-upload"
IMPORT_STATUS = "dg-import-status"
IMPORT_RESULT = "dg-import-result"
IMPORT_REPORT = "dg-import-report"
IMPORT_PARITY = "dg-import-parity"
IMPORT_REVERSE = "dg-import-reverse"
"""CSS hooks of this panel (browser tests find the widgets by them)."""

MAX_UPLOAD_BYTES = 256_000
PARITY_IMAGES = 4
EXAMPLE = """import torchvision.transforms as T

train_transform = T.Compose([
    T.RandomResizedCrop(224),
    T.RandomHorizontalFlip(),
    T.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4),
    T.ToTensor(),
    T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])"""


class ImportPanel:
    """Paste (or upload) a pipeline, import it into the builder, compare, write it back.

    ``on_preset`` replaces the builder's pipeline; ``images`` gives the builder's current
    images (HWC uint8) for the parity report; ``current`` the builder's preset (for the code
    written back). ``sync=True`` runs the parity report in the calling thread."""

    def __init__(self, *, on_preset: Callable[[Preset], None],
                 images: Callable[[], list[np.ndarray]], current: Callable[[], Preset],
                 device: str = "cpu", sync: bool = False) -> None:
        self.on_preset = on_preset
        self.images = images
        self.current = current
        self.device = device
        self.sync = sync
        self.result: ImportResult | None = None
        self.report: Any = None
        self.error: str | None = None
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._generation = 0
        self.text = style.classed(w.Textarea(
            placeholder=EXAMPLE, layout=shared_layout(width="100%", height="180px")), IMPORT_TEXT)
        self.upload = style.classed(w.FileUpload(
            accept=".py,.json,.yaml,.yml", multiple=False, description="open file",
            tooltip="a .py with Compose([...]) or an Albumentations to_dict JSON / YAML"),
            IMPORT_UPLOAD)
        self.upload.observe(self._on_upload, "value")
        self.button = style.classed(w.Button(description="Import", button_style="primary",
                                             tooltip="read the pipeline (nothing is run) and "
                                                     "replace the builder's steps"),
                                    IMPORT_BUTTON)
        self.button.on_click(lambda _: self.import_text(self.text.value))
        self.compare = w.Checkbox(value=True, description="parity report", indent=False,
                                  layout=shared_layout(width="120px"))
        self.status = style.classed(w.HTML(), IMPORT_STATUS)
        self.table = style.classed(w.HTML(), IMPORT_RESULT)
        self.parity = style.classed(w.HTML(), IMPORT_PARITY)
        self.reverse_tv = w.Button(description="as torchvision",
                                   layout=shared_layout(width="130px"))
        self.reverse_alb = w.Button(description="as Albumentations",
                                    layout=shared_layout(width="150px"))
        self.reverse_tv.on_click(lambda _: self.show_library_code("torchvision"))
        self.reverse_alb.on_click(lambda _: self.show_library_code("albumentations"))
        self.reverse = style.classed(w.HTML(), IMPORT_REVERSE)
        intro = w.HTML("<b>Bring your pipeline</b>: paste a torchvision <code>Compose([...])</code>"
                       " / <code>v2.Compose</code>, an Albumentations <code>A.Compose</code>, or "
                       "open a saved Albumentations JSON / YAML. The code is read, never run.")
        self.widget = style.classed(w.VBox([
            intro, self.text,
            w.HBox([self.button, self.compare, self.upload, self.status],
                   layout=shared_layout(align_items="center")),
            self.table, self.parity,
            w.HBox([w.HTML("<b>Write the current pipeline as</b>&nbsp;"), self.reverse_tv,
                    self.reverse_alb], layout=shared_layout(align_items="center")),
            self.reverse]), IMPORT)
        self.widget.add_class(IMPORT_REPORT)

    # ---- public API ---------------------------------------------------------------------------

    def import_text(self, text: str) -> ImportResult | None:
        """Import ``text`` into the builder; None (and the reason shown) when it is refused."""
        self.error = None
        try:
            result = import_pipeline(text)
        except ImportRefused as e:
            return self._refuse(f"not imported, nothing was run or changed: {e}")
        except PresetError as e:
            return self._refuse("not imported: " + "; ".join(e.problems))
        self.result = result
        self.table.value = _table_html(result)
        self.on_preset(result.preset)
        self.status.value = escape(result.summary()) + " &mdash; the preview now shows it"
        self.parity.value = ""
        self.report = None
        if self.compare.value:
            self.run_parity()
        return result

    def run_parity(self) -> None:
        """The parity report for the last import, on the builder's first images."""
        result = self.result
        if result is None:
            return
        self._generation += 1
        generation = self._generation
        images = [np.ascontiguousarray(a) for a in self.images()[:PARITY_IMAGES]]
        if not images:
            self.parity.value = "<i>no images to compare on: add images first</i>"
            return
        self.parity.value = "<i>comparing with the original library on the CPU&hellip;</i>"
        if self.sync:
            self._parity(result, images, generation)
            return
        self._thread = threading.Thread(target=self._parity, args=(result, images, generation),
                                        daemon=True, name="dali-gallery-parity")
        self._thread.start()

    def wait(self, timeout: float = 300.0) -> bool:
        """Block until the parity report is done (tests, notebooks)."""
        t = self._thread
        if t is not None:
            t.join(timeout)
            return not t.is_alive()
        return True

    def show_library_code(self, library: str) -> str:
        from dali_gallery.pipelines.importers.reverse import to_library_code

        code = to_library_code(self.current(), library)
        name = f"augment_{'torchvision' if library == 'torchvision' else 'albumentations'}.py"
        self.reverse.value = (download_link(code, name, "text/x-python", name,
                                            IMPORT_REVERSE + "-download") + code_html(code))
        return code

    def close(self) -> None:
        """Drop a report in flight (its engines close when it ends)."""
        self._generation += 1
        self.wait(30)

    # ---- internals ----------------------------------------------------------------------------

    def _refuse(self, message: str) -> None:
        self.error = message
        self.status.value = style.error_html([message])
        return None

    def _parity(self, result: ImportResult, images: list[np.ndarray], generation: int) -> None:
        from dali_gallery.pipelines.engine import StepError
        from dali_gallery.pipelines.importers.parity import parity_report
        from dali_gallery.pipelines.importers.report_html import parity_html

        with self._lock:
            engines = self._engine_set()
            try:
                report = parity_report(result, images, engines=engines, repeats=2)
            except (StepError, ValueError, RuntimeError) as e:
                if generation == self._generation:
                    self.parity.value = style.error_html([f"parity report failed: {e}"])
                return
            finally:  # the engines hold DALI pipelines (GPU memory): none outlives a report
                for e in engines.values():
                    e.close()
        if generation != self._generation:
            return  # a newer import replaced this one
        self.report = report
        self.parity.value = parity_html(report)

    def _engine_set(self) -> dict[str, Any]:
        """Engines of its own for one report (the live preview's engine renders on another
        thread): the CPU, and the GPU when the builder previews there."""
        from dali_gallery.pipelines.engine import PreviewEngine

        engines = {"cpu": PreviewEngine("cpu")}
        if self.device == "gpu":
            engines["gpu"] = PreviewEngine("gpu")
        return engines

    def _on_upload(self, change: dict[str, Any]) -> None:
        value = change["new"]
        if not value:
            return
        entry = value[0]
        name = entry_name(entry, "file")
        self.upload.value = ()
        try:
            data = entry_bytes(entry, MAX_UPLOAD_BYTES)
            text = data.decode("utf-8")
        except UploadRefused as e:
            self._refuse(f"{name}: {e}")
            return
        except UnicodeDecodeError:
            self._refuse(f"{name}: not UTF-8 text")
            return
        self.text.value = text
        self.import_text(text)


def _table_html(result: ImportResult) -> str:
    from dali_gallery.pipelines.importers.report_html import import_table

    return import_table(result)
