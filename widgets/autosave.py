"""Autosave: the pipeline written to a file after edits, so a dead kernel loses nothing.

A DALI crash, an out-of-memory kill or a closed browser tab ends the kernel and the pipeline in
it. With ``Builder(autosave=path)`` every edit is saved (atomically, when the preview is idle);
a new Builder on the same path offers to restore it. Nothing is written before the first
edit, so opening a builder never overwrites the previous session's pipeline.

A file there that cannot be restored (binary, too large, too deep, a FIFO) must not stop the
builder: it is moved aside to ``<name>.corrupt-<time>`` (kept for the user), reported, and the
builder starts clean. A directory or device at the path is left alone and autosave is off.
Messages name the file, not its folder (the builder may be served to a browser).
"""

from __future__ import annotations

import os
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.preset import Preset, PresetError, load_file
from dali_gallery.pipelines.preset_document import file_kind, quote


@dataclass(frozen=True)
class Restorable:
    """What the autosave file holds: a preset to offer, or why there is none."""

    preset: Preset | None
    message: str = ""
    problem: bool = False
    """True when the file was there but could not be restored (the message says what was done)."""


class Autosave:
    """Writes the preset JSON to ``path`` when it changed since the last write."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser()
        self.armed = False
        self.enabled = True
        self._last = ""
        self.error = ""

    @property
    def shown(self) -> str:
        """The file as messages name it (no folder: it may be a server path)."""
        return quote(self.path.name, 80)

    def restorable(self, catalog: Catalog = CATALOG) -> Restorable:
        """The previous session's pipeline, or why not (moving a bad file aside first)."""
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return Restorable(None)
        except OSError as e:
            return self._disable(f"cannot be read ({e.strerror})")
        mode = info.st_mode
        if stat.S_ISDIR(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
            return self._disable(f"is {file_kind(mode)}, not a file")
        if not stat.S_ISREG(mode):  # a FIFO or socket: opening it could block forever
            return self._set_aside(f"is {file_kind(mode)}, not a file")
        try:
            preset = load_file(self.path, catalog, origin="file")
        except PresetError as e:
            return self._set_aside(f"cannot be restored ({e.problems[0]})")
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.st_mtime))
        return Restorable(preset, f"{len(preset.steps)} step(s), saved {when}")

    def _set_aside(self, why: str) -> Restorable:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}")
        n = 1
        while os.path.lexists(aside):
            aside = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{n}")
            n += 1
        try:
            os.rename(self.path, aside)
        except OSError as e:
            return self._disable(f"{why}; moving it aside failed ({e.strerror})")
        return Restorable(None, f"autosave {self.shown} {why}; it was moved aside to "
                                f"{quote(aside.name, 100)} and the builder starts clean",
                          problem=True)

    def _disable(self, why: str) -> Restorable:
        self.enabled = False
        self.error = f"autosave {self.shown} {why}; autosave is off for this session"
        return Restorable(None, self.error, problem=True)

    def write(self, preset: Preset) -> bool:
        """Save if armed and changed; errors are kept in ``error`` (and shown), not raised."""
        text = preset.to_json() + "\n"
        if not self.enabled or not self.armed or text == self._last:
            return False
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".autosave-", dir=self.path.parent)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(tmp, self.path)
        except OSError as e:
            self.error = f"autosave to {self.shown} failed: {e.strerror or e}"
            return False
        self.error = ""
        self._last = text
        return True
