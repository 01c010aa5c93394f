"""Writing ``render``'s outputs: an ``OSError`` there (a read-only folder, a full disk) is the
user's to fix, so it is reported as one paragraph naming the option, not as a traceback.

Apart from :mod:`gallery.cli` so that :mod:`gallery.cli_annotated` can raise it too:
``python -m dali_gallery.gallery.cli`` loads ``cli`` as ``__main__``, where an exception class
imported back from ``cli`` would be another class than the one ``main`` catches.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class OutputError(Exception):
    """An output file the command could not write: one paragraph, exit code 2."""


@contextmanager
def writing(option: str, path: str | Path) -> Iterator[None]:
    """Runs the write of ``option``'s file; its ``OSError`` becomes an :class:`OutputError`."""
    try:
        yield
    except OSError as e:
        raise OutputError(f"{option} {str(path)!r} cannot be written: {e.strerror or e}; "
                          "pick a folder you can write to") from None
