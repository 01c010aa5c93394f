"""Which nvImageCodec extensions an image-reading DALI pipeline loads: only the CPU ones for
the preview's CPU pipelines.

Every DALI operator that reads images (``fn.decoders.image``, ``fn.peek_image_shape``) makes
its own nvImageCodec instance when its pipeline is built, and an instance loads every extension
of the folder nvImageCodec reads (``NVIMGCODEC_EXTENSIONS_PATH``, else the ``extensions``
folder beside its library). On a GPU host the GPU ones (nvJPEG, nvJPEG2000, nvTIFF) set up
their CUDA state as they load, also for a pipeline that runs on the CPU: on an H100 host
(DALI 2.4, nvImageCodec 0.9) each build of a CPU decode or peek pipeline took 0.55-0.63 s with
the GIL held (every thread of the kernel stopped), and 0.02 s with the CPU extensions alone.
A gallery's first render built two such pipelines; a dataset check one per restart.

:func:`cpu_codecs` makes the variable name a private folder of links to every extension but the
GPU ones while such a pipeline is built (and while the preview's display encoder, nvImageCodec's
own module, is imported: :mod:`.display`); :func:`all_codecs` holds the default while a GPU
decoder is made. The variable is read when an instance is made and only these two
change it, under one lock. A CPU decoder decodes with the CPU extensions whatever else is
loaded, so its pixels are the same (``tests/pipelines/test_codec_extensions.py`` decodes the
corpus both ways). Where the user set the variable, or nvImageCodec's folder is not found,
nothing is changed. The variable belongs to the process: a pipeline that other code of the
kernel builds in another thread during the few milliseconds of a CPU build would load the CPU
extensions only (the preview's GPU decoders and worker processes wait for it).

The variable is set to the default folder once, when this module is imported (before the
kernel's DALI threads start, as a rule): later changes replace an existing entry of the
environment, which C code reading it in other threads may do safely (adding or removing one
may move the table under them). Processes started from this one inherit the default, which
their own import of this module takes as unset.
"""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from pathlib import Path

VARIABLE = "NVIMGCODEC_EXTENSIONS_PATH"
GPU_EXTENSIONS = ("libnvjpeg_ext", "libnvjpeg2k_ext", "libnvtiff_ext")
"""nvImageCodec's CUDA codecs (file-name stems): the ones a CPU pipeline never decodes with."""
_LOCK = threading.RLock()
_log = logging.getLogger(__name__)


def default_folder() -> Path | None:
    """The ``extensions`` folder of the installed ``nvidia.nvimgcodec`` package (the one its
    library loads from when the variable is unset), or None."""
    try:
        spec = importlib.util.find_spec("nvidia.nvimgcodec")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        folder = Path(location) / "extensions"
        if folder.is_dir():
            return folder
    return None


def cpu_folder(default: Path, into: Path) -> Path:
    """``into`` holding a link to each extension of ``default`` but the GPU ones."""
    for entry in sorted(default.iterdir()):
        if entry.is_file() and not entry.name.startswith(GPU_EXTENSIONS):
            (into / entry.name).symlink_to(entry)
    return into


def claim(environ: MutableMapping[str, str], default: Path | None) -> Path | None:
    """``default``, with ``environ`` pointing at it, where the variable is unset or names that
    folder already (a parent process of this package set it so); None (nothing changed) where
    the user chose another folder or there is none."""
    if default is None:
        return None
    current = environ.get(VARIABLE)
    if current and Path(current) != default:
        return None
    environ[VARIABLE] = str(default)
    return default


_DEFAULT = claim(os.environ, default_folder())
_CPU: list[str] = []  # the folder of links ("" when it cannot be made), made at the first build


def _cpu() -> str | None:
    """The folder of links to the CPU extensions (None: not available). Made again when it is
    gone (a long-lived kernel's temporary files cleaned under it): an empty or missing folder
    would leave a CPU decoder with no codec at all."""
    if _DEFAULT is None:
        return None
    if _CPU and _CPU[0] and not any(Path(_CPU[0]).glob("*_ext*")):
        _CPU.clear()
    if not _CPU:
        into = Path(tempfile.mkdtemp(prefix="dali-gallery-codecs-"))
        atexit.register(shutil.rmtree, into, True)
        try:
            cpu_folder(_DEFAULT, into)
        except OSError as e:  # no symbolic links here: every extension stays loaded
            _log.warning("nvImageCodec's CPU extensions could not be linked (%s); CPU image "
                         "pipelines load every extension", e)
            _CPU.append("")
        else:
            _CPU.append(str(into))
    return _CPU[0] or None


@contextmanager
def cpu_codecs() -> Iterator[None]:
    """Build a CPU pipeline that reads images in here: its nvImageCodec instance loads only the
    CPU extensions."""
    with _LOCK:
        folder = _cpu()
        if folder is None or _DEFAULT is None:
            yield
            return
        os.environ[VARIABLE] = folder
        try:
            yield
        finally:
            os.environ[VARIABLE] = str(_DEFAULT)


def child_environment() -> dict[str, str]:
    """This process's environment for a process it starts, with the default folder (never the
    CPU folder of a build running in another thread)."""
    with _LOCK:
        return dict(os.environ)


@contextmanager
def all_codecs() -> Iterator[None]:
    """Build a GPU decoder in here: every extension, never the CPU folder of a build running
    beside it."""
    with _LOCK:
        yield
