"""Fixtures for widget tests: real Builders on the bundled samples, small enough to be quick."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dali_gallery.widgets import Builder
from tests.support import SAMPLES


def make_builder(**kwargs: Any) -> Builder:
    """A Builder on the samples: 3 images of at most 128 px x 2 draws, no thumbnails."""
    options: dict[str, Any] = {"images": SAMPLES, "device": "cpu", "draws": 2,
                               "max_images": 3, "size": 128, "thumbnails": False}
    options.update(kwargs)
    return Builder(**options)


@pytest.fixture
def builder() -> Iterator[Builder]:
    b = make_builder()
    assert b.wait_idle(60)
    yield b
    b.close()


def settle(b: Builder) -> None:
    """Wait for the preview (and the export refresh that follows it)."""
    assert b.wait_idle(60), "the builder did not become idle within 60 s"
