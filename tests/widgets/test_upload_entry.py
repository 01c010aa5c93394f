"""Upload entries are the browser's message, not the file: a forged ``size`` does not lift the
per-file limit, and ``content`` that is not a buffer (a JSON number or string) is refused
with a reason in every upload of the builder (images, labels, preset, import) instead of being
turned into bytes (``bytes(10**12)`` asks for a terabyte of zeros) or raising in the kernel."""

from __future__ import annotations

import html

import pytest

from dali_gallery.widgets.images_panel import upload_items
from tests.support import SAMPLES
from tests.widgets.conftest import settle
from tests.widgets.test_images_panel import browser_upload, upload


def forged(name: str, content: object, size: int = 1) -> dict:
    """An entry as a hostile page can write it: any size, any JSON content."""
    return {"name": name, "type": "", "size": size, "content": content,
            "last_modified": 1_700_000_000_000}


def test_the_size_checked_is_the_bytes_received_not_the_declared_one():
    lying = upload("big.jpg", b"1" * 11)
    lying["size"] = 1
    items, problems = upload_items([lying, upload("ok.jpg", b"1" * 10)], limit=10)
    assert [n for n, _ in items] == ["ok.jpg"]
    assert problems[0].name == "big.jpg" and "too large (11 bytes" in problems[0].reason


@pytest.mark.parametrize("content", [10**12, "abc", None, [1, 2]])
def test_content_that_is_not_bytes_is_a_problem(content):
    items, problems = upload_items([forged("x.jpg", content)], limit=100)
    assert items == [] and problems[0].name == "x.jpg"
    assert "no file content received" in problems[0].reason


def test_every_upload_of_the_builder_refuses_forged_content(builder):
    names = list(builder.engine.names)
    before = builder.preset.to_dict()
    ok = sorted(SAMPLES.glob("*.jpg"))[0].read_bytes()
    browser_upload(builder.images_panel.upload, forged("a.jpg", "abc"), upload("b.jpg", ok))
    settle(builder)
    assert builder.engine.names == ["b.jpg"]
    assert "no file content received" in html.unescape(builder.images_panel.problems.value)
    browser_upload(builder.labels.upload_button, forged("l.json", 10**12))
    assert "no file content received" in html.unescape(builder.labels.problems_html.value)
    assert builder.labels.upload_button.value == ()
    browser_upload(builder.export.load, forged("p.json", "{}"))
    assert "no file content received" in html.unescape(builder.export.problems.value)
    assert builder.export.load.value == ()
    browser_upload(builder.importer.upload, forged("aug.py", 10**12))
    assert "no file content received" in builder.importer.error
    assert builder.preset.to_dict() == before and builder.last_error is None
    assert names != builder.engine.names  # the good upload still loaded
