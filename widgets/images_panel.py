"""Where preview images come from: the bundled samples, a server folder, or uploads.

A folder typed by the user must stay inside the allowed root the app was started with:
absolute paths, ``~`` and ``..`` are refused outright, the rest is resolved with symlinks
followed and refused when it lands outside; files inside are checked the same way again by
:func:`pipelines.images.collect`. A folder's images are counted and listed (bounded): the
preview starts with images spread over its class folders and the user may pick others. Uploads
are kept in memory only (never written to disk) and limited in size and number. Bad files are
listed with the reason and skipped; files left out by a limit are said apart, not as broken.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from html import escape
from pathlib import Path
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.image_collect import FolderSelection
from dali_gallery.pipelines.images import SUPPORTED_EXTENSIONS, ImageProblem, readable

from . import style
from .image_source import (
    DEFAULT_PICK,
    MAX_FOLDERS_LISTED,
    SAMPLES_DIR,
    FolderListing,
    ImageSource,
    list_folders,
    resolve_folder,
    source_from,
)
from .style import shared_layout
from .upload_entry import UploadRefused, entry_bytes, entry_name

__all__ = ["ACCEPT", "MAX_FOLDERS_LISTED", "MAX_LISTED", "MAX_UPLOADS", "SAMPLES_DIR",
           "UPLOAD_LIMIT", "ImageSource", "ImagesPanel", "list_folders", "resolve_folder",
           "source_from", "upload_items"]

UPLOAD_LIMIT = 20 * 2**20
MAX_UPLOADS = 64
MAX_LISTED = 500
"""Files of a folder offered in the file list (spread over its class folders)."""
ACCEPT = ",".join(sorted(SUPPORTED_EXTENSIONS))
"""The upload dialog's file types: every type the preview decodes (BMP too, as the README
says; browsers match them case-insensitively)."""


def upload_items(value: Sequence[dict[str, Any]],
                 limit: int = UPLOAD_LIMIT) -> tuple[list[tuple[str, bytes]], list[ImageProblem]]:
    """FileUpload entries as (name, bytes), too large or too many files as problems. A name
    comes from the browser: it is shown only through :func:`readable` (no line breaks or
    control characters can forge a line of the problem list). The size checked is that of the
    bytes received, never the entry's ``size`` field, which the browser writes
    (:mod:`.upload_entry`)."""
    items, problems = [], []
    for k, entry in enumerate(value):
        name = readable(entry_name(entry, f"upload-{k + 1}"))
        if k >= MAX_UPLOADS:
            problems.append(ImageProblem(name, f"not loaded: at most {MAX_UPLOADS} files per "
                                               "upload", over_limit=True))
            continue
        try:
            items.append((name, entry_bytes(entry, limit)))
        except UploadRefused as e:
            problems.append(ImageProblem(name, str(e)))
    return items, problems


def _receipt(items: list[tuple[str, bytes]]) -> tuple[dict[str, Any], ...]:
    """The upload button's value after a load: the files' names without their bytes (the
    button shows "upload images (N)"; the bytes live in the builder only)."""
    now = dt.datetime.now(dt.timezone.utc)
    return tuple({"name": name, "type": "", "size": len(data), "content": memoryview(b""),
                  "last_modified": now} for name, data in items)


class ImagesPanel:
    """Source switch, folder box (with suggestions), upload button, the folder's file list and
    the problem list."""

    def __init__(self, on_load: Callable[[ImageSource], list[ImageProblem]], *,
                 allowed_root: Path | None, samples: Path | None = SAMPLES_DIR,
                 max_selected: int = DEFAULT_PICK) -> None:
        self.on_load = on_load
        self.headline = style.Headline()
        """What is shown ("6 from bundled samples"); empty until a load succeeded (an error
        leaves it: the previous images stay)."""
        self.allowed_root = allowed_root
        self.samples_dir = samples
        self.max_selected = max_selected
        self.listing: FolderListing | None = None
        self._listed_source: ImageSource | None = None
        self._receipt: tuple[dict[str, Any], ...] = ()
        self._quiet = False
        self.samples = style.classed(w.Button(
            description="bundled samples", icon="images", disabled=not _is_dir(samples),
            tooltip="the sample photos shipped with dali-gallery"), style.SAMPLES)
        self.samples.on_click(lambda _: self.load_samples())
        # never the absolute path: a served page shows this to every visitor
        where = "relative to the allowed root" if allowed_root else "any folder on the server"
        options = list_folders(allowed_root) if allowed_root else []
        self.folder = style.classed(w.Combobox(
            placeholder=f"folder ({where})", options=options, ensure_option=False,
            continuous_update=False, tooltip=f"a folder of images on the server, {where}",
            layout=shared_layout(width="340px")), style.FOLDER)
        self.folder_load = style.classed(w.Button(description="load folder", icon="folder-open"),
                                         style.FOLDER_LOAD)
        self.folder_load.on_click(lambda _: self.load_folder(self.folder.value))
        self.upload = style.classed(w.FileUpload(
            accept=ACCEPT, multiple=True, description="upload images",
            tooltip=f"JPEG, PNG, WebP or TIFF, at most {UPLOAD_LIMIT // 2**20} MiB each "
                    "(kept in memory only)"), style.UPLOAD)
        self.upload.observe(self._on_upload, "value")
        self.summary = w.HTML()
        self.files_note = w.HTML()
        self.files = style.classed(w.SelectMultiple(rows=8, layout=shared_layout(width="500px")),
                                   style.IMAGE_FILES)
        self.files_load = style.classed(w.Button(
            description="preview selected", icon="eye",
            tooltip=f"preview the selected files (at most {max_selected})"),
            style.IMAGE_FILES_LOAD)
        self.files_load.on_click(lambda _: self.preview_selected())
        self.files_box = w.VBox([self.files_note, self.files, self.files_load],
                                layout=w.Layout(display="none"))
        self.problems = style.classed(w.HTML(), style.IMAGE_PROBLEMS)
        self.widget = style.classed(w.VBox([
            w.HBox([self.samples, self.upload], layout=shared_layout(flex_flow="row wrap")),
            w.HBox([self.folder, self.folder_load]),
            self.summary, self.files_box, self.problems]), style.IMAGES)

    # ---- actions ------------------------------------------------------------------------------

    def load_samples(self, files: Sequence[str] = ()) -> list[ImageProblem]:
        """The bundled samples (what the button does); ``files``: only these of them (names
        relative to the samples folder, at most ``max_selected``), e.g. the annotated ones."""
        if not _is_dir(self.samples_dir):
            return self._refuse("the bundled samples folder is missing")
        assert self.samples_dir is not None
        # confined (served): the samples pass the same check, inside their own folder
        root = self.samples_dir if self.allowed_root is not None else None
        return self._load_listed("samples", self.samples_dir, "bundled samples", root, files)

    def load_folder(self, text: str) -> list[ImageProblem]:
        """Load a typed folder (restricted to the allowed root); refusals are shown."""
        if self.allowed_root is not None:  # folders may have appeared since
            self.folder.options = list_folders(self.allowed_root)
        try:
            path = resolve_folder(text, self.allowed_root)
        except ValueError as e:
            return self._refuse(str(e))
        return self._load_listed("folder", path, text.strip(), self.allowed_root)

    def preview_selected(self) -> list[ImageProblem]:
        """Preview the files chosen in the folder's list (1 to ``max_selected`` of them)."""
        source = self._listed_source
        chosen = tuple(self.files.value)
        if source is None or source.listing is None:
            return self._refuse("load a folder first")
        if not 1 <= len(chosen) <= self.max_selected:
            return self._refuse(f"{len(chosen)} files selected; choose 1 to "
                                f"{self.max_selected} (the preview shows at most "
                                f"{self.max_selected} rows)")
        return self._load(ImageSource(source.kind, FolderSelection(source.listing.folder, chosen),
                                      source.label, source.root, listing=source.listing))

    def load_uploads(self, value: Sequence[dict[str, Any]]) -> list[ImageProblem]:
        items, problems = upload_items(value)
        if not items:
            self.show(None, problems, "no uploaded file could be used")
            return problems
        source = ImageSource("upload", items, f"{len(items)} uploaded file(s)",
                             problems=problems)
        return self._load(source)

    def show(self, source: ImageSource | None, problems: list[ImageProblem],
             error: str = "", names: Sequence[str] = ()) -> None:
        """Summary of what is loaded (how many files the folder has), its file list, and the
        files skipped with reasons; files a limit left out are said apart, not as broken."""
        if error:
            self.summary.value = f'<span class="{style.ERROR}">{escape(error)}</span>'
        elif source is not None:
            self.headline.text = f"{len(names)} from {source.label}"
            shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
            folder = f" (of {source.listing.describe()})" if source.listing else ""
            self.summary.value = (f"<b>{len(names)}</b> image(s) from {escape(source.label)}"
                                  f"{escape(folder)}<span style='opacity:.7'>: "
                                  f"{escape(shown)}</span>")
            self._show_files(source)
            self._show_upload_count(source, names)
        broken = [p for p in problems if not p.over_limit]
        capped = [p for p in problems if p.over_limit]
        html = style.error_html([p.message for p in broken], f"{len(broken)} file(s) skipped") \
            if broken else ""
        html += "".join(f"<div style='opacity:.75'>{escape(p.message)}</div>" for p in capped)
        self.problems.value = html

    # ---- internals ----------------------------------------------------------------------------

    def _load_listed(self, kind: str, path: Path, label: str, root: Path | None,
                     files: Sequence[str] = ()) -> list[ImageProblem]:
        try:
            listing = FolderListing.of(path, root)
        except OSError:  # collect() reports why, as a problem of the folder
            return self._load(ImageSource(kind, path, label, root))
        wanted = set(files)
        chosen = [f for f in listing.files if f in wanted][: self.max_selected]
        items = FolderSelection(listing.folder, tuple(chosen)) if chosen \
            else listing.pick(self.max_selected)
        return self._load(ImageSource(kind, items, label, root, listing=listing))

    def _show_files(self, source: ImageSource) -> None:
        """The folder's files for choosing others (bounded, spread over its classes)."""
        listing = source.listing
        if listing is None or not isinstance(source.items, FolderSelection):
            self.files_box.layout.display = "none"
            self._listed_source = None
            return
        offered = set(listing.order[:MAX_LISTED]) | set(source.items.files)
        self.files.options = [(readable(r), r) for r in listing.files if r in offered]
        self.files.value = tuple(r for r in source.items.files if r in offered)
        bound = (f"; the list offers {len(offered)} of them, spread over the class folders"
                 if len(offered) < len(listing.files) else "")
        self.files_note.value = (
            f"<span style='font-size:12px'>{escape(listing.describe())} in "
            f"{escape(source.label)}{escape(bound)}. Select up to {self.max_selected} "
            "(ctrl / shift click) and press <i>preview selected</i>.</span>")
        self.files_box.layout.display = None
        self._listed_source = source

    def _show_upload_count(self, source: ImageSource, names: Sequence[str]) -> None:
        """The upload button counts the uploaded images on show ("upload images (N)")."""
        loaded = set(names)
        self._receipt = _receipt([(n, d) for n, d in source.items if n in loaded]) \
            if source.kind == "upload" else ()
        self._set_upload(self._receipt)

    def _set_upload(self, value: tuple[dict[str, Any], ...]) -> None:
        self._quiet = True
        try:
            self.upload.value = value
        finally:
            self._quiet = False

    def _load(self, source: ImageSource) -> list[ImageProblem]:
        return self.on_load(source)

    def _refuse(self, message: str) -> list[ImageProblem]:
        self.show(None, [], message)
        return [ImageProblem("folder", message)]

    def _on_upload(self, change: dict[str, Any]) -> None:
        value = change["new"]
        if not value or self._quiet:
            return
        self._set_upload(self._receipt)  # the bytes go to the builder; free the widget's copy
        self.load_uploads(value)


def _is_dir(path: Path | None) -> bool:
    return path is not None and path.is_dir()
