"""Operator search: names, descriptions and declared aliases, folded; suggestions when
nothing matches."""

from __future__ import annotations

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.op_search import MAX_QUERY, fold, no_match, rank, search


def names(text: str) -> list[str]:
    return [s.name for s in search(CATALOG.values(), text)]


def test_every_declared_alias_finds_its_operator():
    declared = [(name, a) for name, spec in CATALOG.items() for a in spec.aliases]
    assert len(declared) > 60
    for name, alias in declared:
        assert name in names(alias), (name, alias)
        assert name in names(alias.lower().replace(" ", "_")), (name, alias)


def test_folding_spelling_and_separators():
    assert fold("Colour-Jitter") == fold("color jitter") == fold("ColorJitter") == "colorjitter"
    assert fold("grey") == "gray" and fold("noise.gaussian") == "noisegaussian"
    assert len(fold("x" * 10_000)) == MAX_QUERY  # a search box is not a document


def test_name_and_alias_matches_rank_before_descriptions():
    assert names("blur")[:2] == ["gaussian_blur", "filter"]  # aliases "blur", "Blur"
    rotate = CATALOG["rotate"]
    assert rank(rotate, "rotate") == 0 and rank(rotate, "rot") == 1
    assert rank(rotate, "counter-clockwise") == 2 and rank(rotate, "") is None
    assert rank(CATALOG["noise.shot"], "shot poisson") == 3  # every word, somewhere


def test_no_match_names_the_text_and_suggests():
    assert names("colorjiter") == []
    assert no_match(CATALOG.values(), "colorjiter").startswith(
        "no operator matches 'colorjiter'; did you mean color_twist")
    assert "try a transform name" in no_match(CATALOG.values(), "qqqq")
    assert len(no_match(CATALOG.values(), "y" * 5000)) < 300
