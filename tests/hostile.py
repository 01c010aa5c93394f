"""Hostile preset inputs shared by the preset, autosave, upload and CLI tests (issue 11, part A):
the documents the probe used, and a deadline that fails a test instead of letting it hang."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support import preset_dict

FIXTURE = Path(__file__).parent / "pipelines" / "fixtures" / "preset_v1.json"
"""A valid preset on the server: what a document naming a path would load."""


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Fail (instead of hanging the test run) if the block blocks longer than ``seconds``.
    SIGALRM interrupts a blocking ``open()`` of a FIFO in the main thread."""
    def expired(signum: int, frame: object) -> None:
        raise TimeoutError(f"blocked for more than {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _rotate(angle: str) -> bytes:
    good = json.dumps(preset_dict([{"op": "rotate", "params": {"angle": 12.0}}]))
    return good.replace("12.0", angle).encode()


def absurd_documents() -> dict[str, bytes]:
    """Documents that crashed the loader, made megabyte messages or took a minute."""
    return {
        "huge-integer": _rotate("1" + "0" * 400),
        "float-overflow": _rotate("1e400"),
        "deep-10000": _rotate("[" * 10_000 + "]" * 10_000),
        "deep-600-in-step": _rotate("[" * 600 + "]" * 600),
        "3MB-operator": json.dumps(preset_dict([{"op": "x" * 3_000_000}])).encode(),
        "900KB-operator": json.dumps(preset_dict([{"op": "x" * 900_000}])).encode(),
        "500-problems": json.dumps(preset_dict([{"op": "rotate", "params": {
            f"p{i}": 1 for i in range(500)}}])).encode(),
    }


EXPECTED = {
    "huge-integer": "step 0 (rotate): parameter 'angle': an integer of 401 digits is not allowed",
    "float-overflow": "step 0 (rotate): parameter 'angle': 1e400 is not allowed",
    "deep-10000": "nested 10004 levels deep",
    "deep-600-in-step": "nested 604 levels deep",
    "3MB-operator": "2.9 MiB is too large",
    "900KB-operator": "step 0: unknown operator 'xxx",
    "500-problems": "... and 480 more problems",
}
"""The problem each absurd document is reported with."""
