"""The builder's "load preset" upload: bytes from a browser are a document, never a server path,
and an absurd document is refused with its problems shown (regression tests for issue 11, part
A: a file containing a path loaded that server file, probed whether paths exist, and hung on a
FIFO; absurd documents failed silently with tracebacks in the kernel log)."""

from __future__ import annotations

import html
import os
from pathlib import Path

import pytest

from dali_gallery.pipelines.preset import load
from dali_gallery.widgets import Builder
from tests.hostile import EXPECTED, FIXTURE, absurd_documents, deadline
from tests.widgets.conftest import settle
from tests.widgets.test_images_panel import browser_upload, upload

LEAKS = ("No such file", "Is a directory", "does not exist", "cannot read", "Permission")


def send(builder: Builder, name: str, data: bytes) -> str:
    """Upload as the browser does; the problems the builder shows, as text."""
    with deadline(30):
        browser_upload(builder.export.load, upload(name, data))
    return html.unescape(builder.export.problems.value)


def assert_unchanged_and_working(builder: Builder, before: dict) -> None:
    assert builder.preset.to_dict() == before
    builder.set_param(0, "hue", 7.0)
    settle(builder)
    assert builder.last_error is None and "hue=7.0" in builder.code


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


def test_a_file_containing_a_path_never_loads_that_path(builder, tmp_path, fifo):
    assert load(FIXTURE).steps  # a valid preset on the server: the attack's target
    builder.add_step("hue")
    before = builder.preset.to_dict()
    targets = [str(FIXTURE), str(FIXTURE.parent), str(tmp_path / "nope.json"), "/dev/zero",
               str(fifo), f"{FIXTURE}\n"]
    for target in targets:
        shown = send(builder, "preset.json", target.encode())
        assert "could not load preset.json; the pipeline was not changed" in shown
        assert "preset.json: not valid JSON" in shown, shown
        assert not any(leak in shown for leak in LEAKS), shown
        assert str(tmp_path) not in shown and str(FIXTURE.parent) not in shown
    assert_unchanged_and_working(builder, before)


def test_an_uploaded_module_naming_a_server_file_is_refused(builder):
    builder.add_step("hue")
    before = builder.preset.to_dict()
    module = f"PRESET_JSON = {str(FIXTURE)!r}\n".encode()
    shown = send(builder, "train_aug.py", module)
    assert "exported module: PRESET_JSON: not valid JSON" in shown
    assert not any(leak in shown for leak in LEAKS)
    assert_unchanged_and_working(builder, before)


@pytest.mark.parametrize("case", sorted(absurd_documents()))
def test_an_absurd_document_shows_its_problems_and_changes_nothing(builder, case):
    builder.add_step("hue")
    before = builder.preset.to_dict()
    shown = send(builder, f"{case}.json", absurd_documents()[case])
    assert f"could not load {case}.json; the pipeline was not changed" in shown
    assert "dg-error" in builder.export.problems._dom_classes
    assert len(shown) < 12_000, len(shown)
    assert EXPECTED[case] in shown, shown
    assert_unchanged_and_working(builder, before)


def test_a_long_file_name_is_cut_in_the_message(builder):
    shown = send(builder, "n" * 5000 + ".json", b"\xff")
    assert "not UTF-8" in shown and len(shown) < 1000


def test_a_builder_with_its_own_operators_loads_its_own_exported_module():
    """The module upload was checked against the default catalog: a Builder made with its own
    (a notebook's custom operator) refused its own export as an unknown operator."""
    from dali_gallery.pipelines.catalog import CATALOG, Catalog
    from dali_gallery.pipelines.custom import custom_op
    from dali_gallery.pipelines.export import export_code
    from dali_gallery.pipelines.preset import Preset, new_step
    from tests.widgets.conftest import make_builder

    def dimmed(image):
        return image // 2

    catalog = Catalog(list(CATALOG.values()))
    custom_op("custom.test_dimmed", "Halves every pixel.", catalog=catalog)(dimmed)
    chain = Preset([new_step("flip", catalog=catalog), new_step("custom.test_dimmed",
                                                                 catalog=catalog)], seed=3)
    code = export_code(chain, catalog=catalog)
    b = make_builder(catalog=catalog)
    try:
        settle(b)
        assert send(b, "mine.py", code.encode()) == ""
        assert [s.op for s in b.preset.steps] == ["flip", "custom.test_dimmed"]
        assert b.preset.seed == 3
    finally:
        b.close()
