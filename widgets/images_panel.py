"""Where preview images come from: the bundled samples, a server folder, or uploads.

A folder typed by the user must stay inside the allowed root the app was started with:
absolute paths, ``~`` and ``..`` are refused outright, the rest is resolved with symlinks
followed and refused when it lands outside; files inside are checked the same way again by
:func:`pipelines.images.collect`. Uploads are kept in memory only (never written to disk) and
limited in size and number. Bad files are listed with the reason and skipped.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.images import SUPPORTED_EXTENSIONS, ImageProblem, readable

from . import style

SAMPLES_DIR = Path(__file__).resolve().parents[1] / "gallery" / "samples"
"""The bundled sample images (package data next to this package; read, not imported)."""
UPLOAD_LIMIT = 20 * 2**20
MAX_UPLOADS = 64
MAX_FOLDERS_LISTED = 300
ACCEPT = ",".join(sorted(SUPPORTED_EXTENSIONS - {".bmp"}))


@dataclass
class ImageSource:
    """A set of images to preview and how to name it (for the UI and the CLI command)."""

    kind: str  # "samples" | "folder" | "paths" | "upload"
    items: Any  # a folder Path, a list of paths, or a list of (name, bytes)
    label: str
    root: Path | None = None
    problems: list[ImageProblem] = field(default_factory=list)

    @property
    def cli_path(self) -> str | None:
        """What ``dali-gallery render --images`` takes to read the same files, if anything.

        A confined source (``root`` set: the served app) is named relative to its root, never
        by the server's absolute path, which the page would show to every visitor."""
        if self.kind in ("samples", "folder"):
            path = Path(self.items)
        elif self.kind == "paths" and len(self.items) == 1:
            path = Path(self.items[0])
        else:
            return None
        if self.root is None:
            return str(path.resolve())
        if self.kind == "samples":  # confined to the samples folder, not under the allowed root
            return None
        return _relative(path, self.root)


def source_from(images: Any, root: Path | None = None) -> ImageSource:
    """An :class:`ImageSource` for what ``Builder(images=...)`` accepts: a folder or file
    path, a list of paths, or a list of (name, bytes) uploads (an ImageSource as it is).
    With ``root`` every file must lie inside it (symlinks followed) and paths are shown
    relative to it."""
    if isinstance(images, ImageSource):
        return images
    if isinstance(images, (str, os.PathLike)):
        path = Path(images)
        kind = "samples" if root is None and _same_path(path, SAMPLES_DIR) else (
            "folder" if path.is_dir() else "paths")
        items: Any = path if kind != "paths" else [path]
        label = str(path) if root is None else (_relative(path, root) or path.name)
        return ImageSource(kind, items, Path(root).name if label == "." else label, root)
    if isinstance(images, Sequence) and not isinstance(images, (bytes, bytearray)):
        if all(isinstance(x, tuple) and len(x) == 2 for x in images):
            return ImageSource("upload", list(images), f"{len(images)} uploaded file(s)")
        paths = [Path(x) for x in images]
        return ImageSource("paths", paths, f"{len(paths)} file(s)", root)
    raise TypeError(f"images={type(images).__name__} is not allowed; expected a folder, a "
                    "file, a list of paths or a list of (name, bytes)")


def _relative(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` (POSIX, "." for the root itself); None when outside."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(root))
    return None if rel == os.pardir or rel.startswith(os.pardir + os.sep) else Path(rel).as_posix()


def _same_path(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def resolve_folder(text: str, root: Path | None) -> Path:
    """The folder a user typed, checked against the allowed root; ValueError says why not."""
    text = text.strip()
    if not text:
        raise ValueError("enter a folder" + (" inside the allowed root" if root else ""))
    if "\x00" in text:
        raise ValueError("the folder name contains a NUL character")
    if root is None:
        path = Path(text).expanduser()
    else:
        if os.path.isabs(text) or text.startswith("~"):
            raise ValueError(f"{text!r}: absolute paths are not allowed; give a folder "
                             "relative to the allowed root")
        if ".." in Path(text).parts:
            raise ValueError(f"{text!r}: '..' is not allowed; folders must stay inside the "
                             "allowed root")
        path = root / text
        real, root_real = os.path.realpath(path), os.path.realpath(root)
        if real != root_real and not real.startswith(root_real.rstrip(os.sep) + os.sep):
            raise ValueError(f"{text!r} leads outside the allowed root (through a "
                             "symbolic link); it was not opened")
    if not path.exists():
        raise ValueError(f"{text!r} does not exist")
    if not path.is_dir():
        raise ValueError(f"{text!r} is not a folder")
    return path


def list_folders(root: Path, depth: int = 2, limit: int = MAX_FOLDERS_LISTED) -> list[str]:
    """Sub-folders of ``root`` (relative, POSIX) for the folder box's suggestions; symlinked
    folders leading outside the root are left out."""
    out: list[str] = []
    root_real = os.path.realpath(root)

    def walk(folder: Path, rel: str, level: int) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for e in entries:
            if len(out) >= limit or e.name.startswith("."):
                continue
            try:
                is_dir = e.is_dir()
            except OSError:
                continue
            real = os.path.realpath(e.path)
            if not is_dir or not (real + os.sep).startswith(root_real.rstrip(os.sep) + os.sep):
                continue
            name = f"{rel}/{e.name}" if rel else e.name
            out.append(name)
            if level < depth:
                walk(Path(e.path), name, level + 1)

    walk(root, "", 1)
    return out


def upload_items(value: Sequence[dict[str, Any]],
                 limit: int = UPLOAD_LIMIT) -> tuple[list[tuple[str, bytes]], list[ImageProblem]]:
    """FileUpload entries as (name, bytes), too large or too many files as problems. A name
    comes from the browser: it is shown only through :func:`readable` (no line breaks or
    control characters can forge a line of the problem list)."""
    items, problems = [], []
    for k, entry in enumerate(value):
        name = readable(str(entry.get("name") or f"upload-{k + 1}"))
        size = int(entry.get("size") or len(entry.get("content", b"")))
        if k >= MAX_UPLOADS:
            problems.append(ImageProblem(name, f"not loaded: at most {MAX_UPLOADS} files per "
                                               "upload"))
        elif size > limit:
            problems.append(ImageProblem(name, f"too large ({size / 2**20:.1f} MiB; the "
                                               f"limit is {limit / 2**20:.0f} MiB per file)"))
        else:
            items.append((name, bytes(entry["content"])))
    return items, problems


class ImagesPanel:
    """Source switch, folder box (with suggestions), upload button and the problem list."""

    def __init__(self, on_load: Callable[[ImageSource], list[ImageProblem]], *,
                 allowed_root: Path | None, samples: Path | None = SAMPLES_DIR) -> None:
        self.on_load = on_load
        self.allowed_root = allowed_root
        self.samples_dir = samples
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
            layout=w.Layout(width="340px")), style.FOLDER)
        self.folder_load = style.classed(w.Button(description="load folder", icon="folder-open"),
                                         style.FOLDER_LOAD)
        self.folder_load.on_click(lambda _: self.load_folder(self.folder.value))
        self.upload = style.classed(w.FileUpload(
            accept=ACCEPT, multiple=True, description="upload images",
            tooltip=f"JPEG, PNG, WebP or TIFF, at most {UPLOAD_LIMIT // 2**20} MiB each "
                    "(kept in memory only)"), style.UPLOAD)
        self.upload.observe(self._on_upload, "value")
        self.summary = w.HTML()
        self.problems = style.classed(w.HTML(), style.IMAGE_PROBLEMS)
        self.widget = style.classed(w.VBox([
            w.HBox([self.samples, self.upload], layout=w.Layout(flex_flow="row wrap")),
            w.HBox([self.folder, self.folder_load]),
            self.summary, self.problems]), style.IMAGES)

    # ---- actions ------------------------------------------------------------------------------

    def load_samples(self) -> list[ImageProblem]:
        if not _is_dir(self.samples_dir):
            return self._refuse("the bundled samples folder is missing")
        assert self.samples_dir is not None
        # confined (served): the samples pass the same check, inside their own folder
        root = self.samples_dir if self.allowed_root is not None else None
        return self._load(ImageSource("samples", self.samples_dir, "bundled samples", root))

    def load_folder(self, text: str) -> list[ImageProblem]:
        """Load a typed folder (restricted to the allowed root); refusals are shown."""
        if self.allowed_root is not None:  # folders may have appeared since
            self.folder.options = list_folders(self.allowed_root)
        try:
            path = resolve_folder(text, self.allowed_root)
        except ValueError as e:
            return self._refuse(str(e))
        return self._load(ImageSource("folder", path, text.strip(), self.allowed_root))

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
        """Summary of what is loaded and the list of skipped files with reasons."""
        if error:
            self.summary.value = f'<span class="{style.ERROR}">{escape(error)}</span>'
        elif source is not None:
            shown = ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
            self.summary.value = (f"<b>{len(names)}</b> image(s) from {escape(source.label)}"
                                  f"<span style='opacity:.7'>: {escape(shown)}</span>")
        if problems:
            self.problems.value = style.error_html(
                [f"{p.name}: {p.reason}" for p in problems],
                f"{len(problems)} file(s) skipped")
        else:
            self.problems.value = ""

    # ---- internals ----------------------------------------------------------------------------

    def _load(self, source: ImageSource) -> list[ImageProblem]:
        return self.on_load(source)

    def _refuse(self, message: str) -> list[ImageProblem]:
        self.show(None, [], message)
        return [ImageProblem("folder", message)]

    def _on_upload(self, change: dict[str, Any]) -> None:
        value = change["new"]
        if not value:
            return
        self.load_uploads(value)
        self.upload.value = ()  # the bytes now live in the builder; free the widget's copy


def _is_dir(path: Path | None) -> bool:
    return path is not None and path.is_dir()
