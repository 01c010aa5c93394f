"""The pipeline in a link (issue 13): encoded so it comes back whole, decoded as the untrusted
document it is (every budget checked before the work it bounds), and kept up to date with the
builder's model. The page script that puts it in the address bar runs in the browser tests
(tests/browser/test_share_link.py)."""

from __future__ import annotations

import base64
import json
import random
import time
import zlib

import pytest

from dali_gallery.pipelines.preset import MAX_DOCUMENT_BYTES, Choice, Preset, PresetError, load
from dali_gallery.widgets.model import ChainModel
from dali_gallery.widgets.share_link import (
    MAX_LINK_CHARS,
    MAX_QUERY_FIELDS,
    PARAM,
    SHARE,
    ShareLink,
    decode,
    encode,
    preset_from_query,
    sync_script,
)
from tests.hostile import EXPECTED, absurd_documents
from tests.support import preset_dict

CHAIN = preset_dict([
    {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-20.0, 20.0]}}},
    {"op": "hue", "params": {"hue": {"choice": [-30.0, 0.0, 30.0]}}},
    {"op": "flip", "enabled": False},
], seed=98765)


def pack(data: bytes) -> str:
    """A link value made the way the page makes them, around any bytes."""
    return base64.urlsafe_b64encode(zlib.compress(data, 9)).decode().rstrip("=")


def problem(value: str) -> str:
    with pytest.raises(PresetError) as info:
        decode(value)
    return info.value.problems[0]


def test_a_pipeline_comes_back_whole():
    preset = load(CHAIN)
    value = encode(preset)
    assert set(value) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert decode(value).to_dict() == preset.to_dict()
    # in a page's query, beside whatever else the address holds (a token, Voilà's own)
    again = preset_from_query(f"token=abc&{PARAM}={value}&x=")
    assert again is not None and again.to_dict() == preset.to_dict() and again.seed == 98765


def test_a_query_without_the_parameter_has_no_pipeline():
    assert preset_from_query("") is None and preset_from_query("token=abc&presets=1") is None


@pytest.mark.parametrize("value, says", [
    ("a%b", "must be base64url text"),
    ("abc def", "character 3 is ' '"),
    ("A", "not valid base64url"),
    ("AAAA", "not a compressed preset"),
    (pack(json.dumps(CHAIN).encode())[:-12], "cut short"),
    (pack(b"\xff\xfe not text"), "not UTF-8"),
    (pack(b"[1, 2]"), "expected a JSON object"),
    (pack(json.dumps(preset_dict([{"op": "no_such_op"}])).encode()), "unknown operator"),
])
def test_a_bad_link_says_what_is_wrong(value, says):
    message = problem(value)
    assert says in message, message


def test_the_length_is_checked_before_anything_is_decoded():
    text = "A" * (MAX_LINK_CHARS + 1)
    assert f"is {MAX_LINK_CHARS + 1} characters; a link holds at most {MAX_LINK_CHARS}" in (
        problem(text))
    huge = "A" * (64 << 20)  # 64 MB of valid base64url: refused without decoding it
    start = time.perf_counter()
    assert "a link holds at most" in problem(huge)
    assert time.perf_counter() - start < 0.5


def test_a_small_link_cannot_unpack_into_gigabytes():
    """A 10 KB link of zlib data unpacks to ~10 MB: refused at the 1 MiB document budget,
    while unpacking (never more than the budget is produced)."""
    value = pack(b"{" + b" " * (10 << 20))
    assert len(value) <= MAX_LINK_CHARS
    assert "unpacks to more than 1 MiB" in problem(value)
    just_under = pack(json.dumps({**CHAIN, "name": ""}).encode().ljust(MAX_DOCUMENT_BYTES))
    assert decode(just_under).seed == 98765  # whitespace up to the budget is still a preset


@pytest.mark.parametrize("case", sorted(set(absurd_documents()) & set(EXPECTED)))
def test_hostile_documents_in_a_link_get_the_preset_loaders_answers(case):
    """The link goes through the same document entry point as an uploaded preset file."""
    data = absurd_documents()[case]
    value = pack(data)
    if len(value) > MAX_LINK_CHARS:
        assert "a link holds at most" in problem(value)
        return
    if len(data) > MAX_DOCUMENT_BYTES:  # refused while unpacking, before parsing
        assert "unpacks to more than 1 MiB" in problem(value)
        return
    with pytest.raises(PresetError) as info:
        decode(value)
    assert any(EXPECTED[case] in p for p in info.value.problems), info.value.problems


def test_a_repeated_parameter_or_a_flood_of_fields_is_refused():
    value = encode(load(CHAIN))
    with pytest.raises(PresetError, match="appears 2 times"):
        preset_from_query(f"{PARAM}={value}&{PARAM}={value}")
    with pytest.raises(PresetError, match=f"more than {MAX_QUERY_FIELDS} fields"):
        preset_from_query("&".join(f"f{i}=1" for i in range(MAX_QUERY_FIELDS + 1)))
    with pytest.raises(PresetError, match="query string is"):
        preset_from_query("x=" + "1" * 70_000)


def test_the_link_follows_every_edit_of_the_model():
    model = ChainModel()
    link = ShareLink(model)
    assert SHARE in link.widget._dom_classes
    assert link.value == "" and 'data-dg-preset=""' in link.widget.value  # the default
    model.add_step("rotate", {"angle": 33.0})
    first = link.value
    assert decode(first).to_dict() == model.preset.to_dict()
    assert f'href="?{PARAM}={first}"' in link.widget.value
    assert f'data-dg-preset="{first}"' in link.widget.value
    model.set_seed(5)
    assert link.value != first and decode(link.value).seed == 5
    model.undo()
    model.undo()  # back to the default pipeline: no link needed
    assert link.value == "" and not link.problem


def test_a_pipeline_too_large_for_a_link_says_so():
    model = ChainModel()
    link = ShareLink(model)
    rng = random.Random(1)
    for _ in range(64):  # random values do not compress: ~27 KB of link
        model.add_step("rotate", {"angle": Choice(tuple(rng.uniform(-90, 90) for _ in range(32)))})
    assert link.value == "" and "too large for a link" in link.problem
    assert f"at most {MAX_LINK_CHARS // 1024} KB" in link.problem
    assert 'data-dg-preset=""' in link.widget.value and "Export" in link.widget.value
    assert len(encode(model.preset)) > MAX_LINK_CHARS


def test_the_link_is_escaped_markup():
    model = ChainModel(load({**CHAIN, "name": '"><script>alert(1)</script>'}))
    link = ShareLink(model)
    assert "<script>" not in link.widget.value
    assert decode(link.value).name == '"><script>alert(1)</script>'


def test_the_page_script_reads_the_link_widget():
    script = sync_script()
    assert script.startswith("<script>") and script.rstrip().endswith("</script>")
    assert f'"{PARAM}"' in script and f".{SHARE}" in script
    assert "history.replaceState" in script and "data-dg-preset" in script


def test_an_encoded_preset_is_plain_data():
    assert isinstance(decode(encode(Preset())), Preset)


def test_a_name_with_a_lone_surrogate_is_refused_and_the_link_keeps_working():
    """JSON may escape a lone surrogate ("\\ud800") that UTF-8 cannot hold: such a link, or
    such a name typed in the page, is refused by name instead of breaking every later edit."""
    text = json.dumps({**CHAIN, "name": "a \ud800 b"})  # ASCII JSON with the escape
    with pytest.raises(PresetError) as info:
        decode(pack(text.encode()))
    assert "'name'" in info.value.problems[0]
    model = ChainModel(load(CHAIN))
    link = ShareLink(model)
    with pytest.raises(PresetError):
        model.set_name("a \ud800 b")
    assert model.preset.to_dict() == load(CHAIN).to_dict()
    model.set_seed(5)
    assert decode(link.value).seed == 5


@pytest.mark.parametrize("tail, says", [
    ("===", "'=' may only pad its end, at most twice"),  # was StopIteration, past open_link
    ("=A", "'=' may only pad its end"),
])
def test_a_link_with_padding_out_of_place_is_refused_by_name(tail, says):
    value = encode(load(CHAIN))
    assert decode(value + "=" * (-len(value) % 4)).to_dict() == load(CHAIN).to_dict()
    message = problem(value + tail)
    assert says in message and message.startswith("the link's preset: "), message


@pytest.mark.parametrize("extra", [b"garbage", zlib.compress(b"{}")])
def test_bytes_after_the_compressed_preset_are_refused_not_ignored(extra):
    # a link with bytes appended (or a second stream) loaded its first stream as if whole
    value = base64.urlsafe_b64encode(zlib.compress(json.dumps(CHAIN).encode(), 9) + extra)
    message = problem(value.decode().rstrip("="))
    assert f"has {len(extra)} byte(s) after the compressed preset" in message, message
