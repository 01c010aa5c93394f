"""Autosave: the pipeline written to a file after edits, so a dead kernel loses nothing.

A DALI crash, an out-of-memory kill or a closed browser tab ends the kernel and the pipeline in
it. With ``Builder(autosave=path)`` every edit is saved (atomically, when the preview is idle);
a new Builder on the same path offers to restore it. Nothing is written before the first
edit, so opening a builder never overwrites the previous session's pipeline.

A file there that cannot be restored (binary, too large, too deep, a FIFO) must not stop the
builder: it is moved aside to ``<name>.corrupt-<time>`` (kept for the user), reported, and the
builder starts clean. A directory or device at the path is left alone and autosave is off.
Messages name the file, not its folder (the builder may be served to a browser).

``Builder()`` autosaves by default (:func:`autosave_for`) to a file of the user's own: under the
Jupyter data dir (``jupyter --data-dir``, in the user's home), in ``dali-gallery/autosave/``
(a folder only its owner can enter), one file per notebook (named after the notebook JupyterLab
runs the kernel for, ``$JPY_SESSION_NAME``). ``$DALI_GALLERY_AUTOSAVE`` names another file, or
``off``. In a Voilà page it is off: every visitor of a served app runs as the same system user,
so a default file would be shared between them (the served app keeps the pipeline in the page's
link instead, :mod:`.share_link`); ``Builder(autosave=path)`` still turns it on there.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.preset import Preset, PresetError, load_file
from dali_gallery.pipelines.preset_document import file_kind, quote

from .page_ready import VOILA_ENV

AUTOSAVE_ENV = "DALI_GALLERY_AUTOSAVE"
"""A file to autosave to instead of the default, or ``off`` (not read in a Voilà page)."""
SESSION_ENV = "JPY_SESSION_NAME"
"""The notebook JupyterLab (jupyter_server) started the kernel for."""
OFF = ("off", "0", "none", "false")


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

    def disable(self, why: str) -> None:
        """Turn autosave off for this session, saying why (shown in the builder's toolbar)."""
        self._disable(why)

    def restorable(self, catalog: Catalog = CATALOG) -> Restorable:
        """The previous session's pipeline, or why not (moving a bad file aside first)."""
        if not self.enabled:
            return Restorable(None, self.error, problem=True)
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


def default_path() -> Path | None:
    """The file ``Builder()`` autosaves to, or None (off): see the module's docstring."""
    if os.environ.get(VOILA_ENV):
        return None
    value = os.environ.get(AUTOSAVE_ENV, "").strip()
    if value.lower() in OFF:
        return None
    if value:
        return Path(value).expanduser()
    folder = _jupyter_data_dir() / "dali-gallery" / "autosave"
    notebook = os.environ.get(SESSION_ENV, "")
    if not notebook:
        return folder / "builder.json"
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(notebook).stem)[:40].strip("._") or "notebook"
    digest = hashlib.sha256(os.fsencode(notebook)).hexdigest()[:12]
    return folder / f"{stem}-{digest}.json"


def _jupyter_data_dir() -> Path:
    """Jupyter's data folder; without ``jupyter_core`` (a builder in a plain Python process,
    a GPU machine with the widget stack only) the same rule jupyter_core applies on Linux:
    ``$JUPYTER_DATA_DIR``, else ``$XDG_DATA_HOME/jupyter``, else ``~/.local/share/jupyter``."""
    try:
        from jupyter_core.paths import jupyter_data_dir
    except ImportError:
        if os.environ.get("JUPYTER_DATA_DIR"):
            return Path(os.environ["JUPYTER_DATA_DIR"]).expanduser()
        xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        return Path(xdg).expanduser() / "jupyter"
    return Path(jupyter_data_dir())


def autosave_for(setting: str | os.PathLike[str] | bool | None) -> Autosave | None:
    """What ``Builder(autosave=...)`` means: True, the default file (:func:`default_path`;
    None where there is none); a path, that file; None or False, no autosave."""
    if setting is None or setting is False:
        return None
    if setting is not True:
        return Autosave(setting)
    path = default_path()
    if path is None:
        return None
    auto = Autosave(path)
    if os.environ.get(AUTOSAVE_ENV, "").strip():
        return auto  # a file the user named: its folder is theirs to choose
    problem = _private_folder(path.parent)
    if problem:
        auto.disable(problem)
    return auto


def _private_folder(folder: Path) -> str:
    """'' once ``folder`` exists, belongs to this user and only they can write to it (made
    with mode 0700), else why not: another user could read or replace the pipeline there."""
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.stat(folder)
    except OSError as e:
        return f"is in a folder that cannot be made ({e.strerror})"
    if not stat.S_ISDIR(info.st_mode):
        return "is in a folder that is not a folder"
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        return "is in a folder that belongs to another user"
    if info.st_mode & 0o022:
        return "is in a folder other users can write to"
    return ""
