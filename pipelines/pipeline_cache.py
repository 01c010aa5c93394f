"""Built preview pipelines kept on disk, so a new kernel does not trace them again.

Tracing a pipeline is the slow part of a first render: 1.5-5 s for the auto_aug policies on
any device, while DALI rebuilds the same pipeline from its own serialized form
(``Pipeline.deserialize``) in milliseconds, with bit-identical output. Every Voilà page load
starts a fresh kernel, so without this each visitor would pay every trace again.

An entry is keyed by everything that shapes the graph (DALI version, generated source, seed,
batch size, device, flags). Entries are written atomically, the folder is trimmed to a size
limit (least recently used first), and a folder that other users could write to is not used.
``DALI_GALLERY_CACHE`` picks the folder (default ``$XDG_CACHE_HOME/dali-gallery/pipelines``);
``off`` disables the cache.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .dali_record import note_graph, note_pipeline
from .origin_trace import LAYOUT

CACHE_ENV = "DALI_GALLERY_CACHE"
MAX_BYTES = 512 * 1024 * 1024
_MAGIC = b"DGPC1"
_log = logging.getLogger(__name__)


def default_folder() -> Path | None:
    """The folder from ``DALI_GALLERY_CACHE``, the XDG default, or None when disabled."""
    value = os.environ.get(CACHE_ENV, "").strip()
    if value.lower() in ("off", "0", "none", "false"):
        return None
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "dali-gallery" / "pipelines"


class PipelineCache:
    """Serialized DALI pipelines by key; ``folder=None`` is a cache that keeps nothing."""

    def __init__(self, folder: str | Path | None, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.folder = _usable(Path(folder)) if folder is not None else None

    @classmethod
    def default(cls) -> PipelineCache:
        return cls(default_folder())

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    def key(self, *parts: object) -> str:
        """A key for a pipeline, from the DALI version and whatever shapes its graph."""
        import nvidia.dali

        digest = hashlib.sha256(f"{nvidia.dali.__version__}\0{LAYOUT}".encode())
        for part in parts:
            digest.update(b"\0" + repr(part).encode())
        return digest.hexdigest()[:40]

    def has(self, key: str) -> bool:
        """Whether an entry for ``key`` is on disk (without reading it)."""
        return self.folder is not None and (self.folder / f"{key}.dali").is_file()

    def load(self, key: str) -> tuple[bytes, bool] | None:
        """(serialized pipeline, built with checkpointing) or None; an unreadable entry is
        removed (and logged), so the caller simply builds again."""
        if self.folder is None:
            return None
        path = self.folder / f"{key}.dali"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as e:
            _log.warning("pipeline cache: cannot read %s (%s)", path, e)
            return None
        if not data.startswith(_MAGIC) or len(data) < len(_MAGIC) + 2:
            _log.warning("pipeline cache: %s is not a cache entry; removing it", path.name)
            self.discard(key)
            return None
        try:
            os.utime(path)  # recently used: trimmed last
        except OSError:
            _log.debug("pipeline cache: could not touch %s", path)
        return data[len(_MAGIC) + 1:], data[len(_MAGIC)] == 1

    def store(self, key: str, blob: bytes, checkpointing: bool) -> None:
        """Write an entry atomically (concurrent kernels may store the same key)."""
        if self.folder is None:
            return
        fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".dali")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + bytes([1 if checkpointing else 0]) + blob)
            os.replace(tmp, self.folder / f"{key}.dali")
        except OSError as e:
            _log.warning("pipeline cache: cannot write %s (%s)", key, e)
            Path(tmp).unlink(missing_ok=True)
            return
        self._trim()

    def discard(self, key: str) -> None:
        if self.folder is not None:
            (self.folder / f"{key}.dali").unlink(missing_ok=True)

    def entries(self) -> list[Path]:
        if self.folder is None:
            return []
        return sorted(self.folder.glob("*.dali"))

    def _trim(self) -> None:
        assert self.folder is not None
        files = []
        for path in self.folder.glob("*.dali"):
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            files.append((st.st_mtime, st.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):
            if total <= self.max_bytes:
                break
            path.unlink(missing_ok=True)
            total -= size


def _usable(folder: Path) -> Path | None:
    """The folder, created private; None (with a warning) if it is not safe or not writable:
    a pipeline loaded from a folder others can write to would run their graph."""
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = folder.stat()
    except OSError as e:
        _log.warning("pipeline cache disabled: cannot use %s (%s)", folder, e)
        return None
    if st.st_uid != os.getuid() or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        _log.warning("pipeline cache disabled: %s is not private to this user", folder)
        return None
    if not os.access(folder, os.W_OK):
        _log.warning("pipeline cache disabled: %s is not writable", folder)
        return None
    return folder


def load_built(cache: PipelineCache, key: str, device: str,
               num_threads: int) -> tuple[Any, bytes | None] | None:
    """A pipeline of the cache, built with the preview's executor, and its checkpoint; None
    when the cache lacks it (a damaged or foreign entry is discarded: traced again)."""
    entry = cache.load(key)
    if entry is None:
        return None
    from nvidia.dali import Pipeline

    from .preview_pipeline import EXECUTOR

    blob, checkpointing = entry
    try:
        pipe = Pipeline.deserialize(
            serialized_pipeline=blob, device_id=0 if device == "gpu" else None,
            num_threads=num_threads, prefetch_queue_depth=1,
            enable_checkpointing=checkpointing, **EXECUTOR)
        pipe.build()
        checkpoint = pipe.checkpoint() if checkpointing else None
    except RuntimeError as e:
        _log.warning("pipeline cache: entry %s could not be loaded (%s); rebuilding", key,
                     str(e).splitlines()[0] if str(e) else type(e).__name__)
        cache.discard(key)
        return None
    note_graph(pipe, blob)
    note_pipeline(pipe, lambda: blob, 0 if device == "gpu" else None, num_threads)
    return pipe, checkpoint


def load_or_build(cache: PipelineCache, key: str | None, device: str, num_threads: int,
                  make: Callable[[], Any], checkpoints: bool) -> tuple[Any, bytes | None, bool]:
    """(pipeline, checkpoint, loaded): the cache's entry for ``key``, else ``make()`` built,
    checkpointed when ``checkpoints`` and stored under ``key`` (None: not cached)."""
    if key is not None:
        loaded = load_built(cache, key, device, num_threads)
        if loaded is not None:
            return (*loaded, True)
    pipe = make()
    pipe.build()
    checkpoint = pipe.checkpoint() if checkpoints else None
    blob = None if key is None else pipe.serialize()  # serialized once, for both
    note_pipeline(pipe, pipe.serialize if blob is None else lambda: blob,
                  0 if device == "gpu" else None, num_threads)
    if key is not None:
        assert blob is not None
        note_graph(pipe, blob)
        cache.store(key, blob, checkpoint is not None)
    return pipe, checkpoint, False
