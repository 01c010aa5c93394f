"""Autosave: the pipeline written to a file after edits, so a dead kernel loses nothing.

A DALI crash, an out-of-memory kill or a closed browser tab ends the kernel and the pipeline in
it. With ``Builder(autosave=path)`` every edit is saved (atomically, when the preview is idle);
a new Builder on the same path offers to restore it. Nothing is written before the first
edit, so opening a builder never overwrites the previous session's pipeline.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.preset import Preset, PresetError, load


class Autosave:
    """Writes the preset JSON to ``path`` when it changed since the last write."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.armed = False
        self._last = ""
        self.error = ""

    def saved(self, catalog: Catalog = CATALOG) -> tuple[Preset | None, str]:
        """The previous session's pipeline and a one-line description, or (None, why not)."""
        if not self.path.exists():
            return None, ""
        try:
            preset = load(self.path, catalog)
        except PresetError as e:
            return None, f"autosave {self.path} cannot be restored: {e.problems[0]}"
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.path.stat().st_mtime))
        return preset, f"{len(preset.steps)} step(s), saved {when}"

    def write(self, preset: Preset) -> bool:
        """Save if armed and changed; errors are kept in ``error`` (and shown), not raised."""
        text = preset.to_json() + "\n"
        if not self.armed or text == self._last:
            return False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".autosave-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except OSError as e:
            self.error = f"autosave to {self.path} failed: {e.strerror or e}"
            return False
        self.error = ""
        self._last = text
        return True
