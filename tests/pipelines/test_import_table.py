"""The README's mapping table is generated from the rules, never written by hand."""

from __future__ import annotations

from dali_gallery.pipelines.importers.table import (
    TABLE_BEGIN,
    TABLE_END,
    all_rules,
    markdown_table,
    rule_for,
)
from tests.support import REPO


def test_the_readme_holds_the_generated_table():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start, end = readme.find(TABLE_BEGIN), readme.find(TABLE_END)
    assert 0 <= start < end, "the README has no import table; run `dali-gallery import --table`"
    assert readme[start:end + len(TABLE_END)] == markdown_table(), (
        "the README's import table is stale: paste the output of `dali-gallery import --table`")


def test_the_table_lists_every_rule_once_with_its_verdict():
    table = markdown_table()
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert len(rows) == len(all_rules())
    assert "| `ColorJitter` | color_twist" in table
    assert "hue rotates in YIQ" in table
    lam = rule_for("torchvision", "Lambda")
    assert lam is not None and lam.kind == "unsupported"
    assert f"nearest: {lam.nearest}" in table
    assert rule_for("torchvision", "NoSuchTransform") is None
