"""Presets as untrusted documents: never a path, every budget checked before the work it bounds.

Regression tests for issue 11 (part A): a document naming a server file loaded that file; FIFOs
and devices hung or flooded the reader; huge integers, deep nesting and megabyte names crashed
the loader or made megabyte messages.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from dali_gallery.pipelines.export import export_code, preset_from_module
from dali_gallery.pipelines.preset import (
    MAX_DEPTH,
    MAX_DOCUMENT_BYTES,
    PresetError,
    load,
    load_file,
    parse_document,
)
from dali_gallery.pipelines.preset_types import MAX_PROBLEM_CHARS, MAX_PROBLEMS
from tests.hostile import EXPECTED, FIXTURE, absurd_documents, deadline
from tests.support import preset_dict


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "preset.json"
    os.mkfifo(path)
    return path


def doc_text(steps: list, **extra: object) -> str:
    return json.dumps({**preset_dict(steps), **extra})


# ---- 1. a document is never a path -----------------------------------------------------------


@pytest.mark.parametrize("content", [str(FIXTURE), str(FIXTURE.parent), "/dev/zero",
                                     "/nonexistent/preset.json", f"  {FIXTURE}\n"])
def test_a_document_naming_a_server_file_is_refused_unread(content):
    """The upload attack: a file whose content is a path must not load (or probe) that path."""
    assert load(FIXTURE).steps  # the named file is a valid preset: loading it would succeed
    for data in (content, content.encode()):
        with deadline(10), pytest.raises(PresetError) as err:
            parse_document(data)
        msg = str(err.value)
        assert "not valid JSON" in msg and "JSON object" in msg
        for leak in ("No such file", "Is a directory", "does not exist", "cannot read"):
            assert leak not in msg


def test_a_document_naming_a_fifo_does_not_block(fifo):
    with deadline(10), pytest.raises(PresetError, match="not valid JSON"):
        parse_document(str(fifo).encode())


def test_an_exported_module_cannot_name_a_server_file(tmp_path):
    """PRESET_JSON in an uploaded module is the document itself, never a path to one."""
    code = export_code(load(FIXTURE)).splitlines()
    at = next(i for i, line in enumerate(code) if line.startswith("PRESET_JSON = "))
    end = next(i for i in range(at, len(code)) if not code[i].strip() or code[i] == ")")
    forged = "\n".join([*code[:at], f"PRESET_JSON = {str(FIXTURE)!r}", *code[end + 1:]])
    with pytest.raises(PresetError) as err:
        preset_from_module(forged)
    assert "PRESET_JSON: not valid JSON" in str(err.value)
    assert preset_from_module("\n".join(code)).to_dict() == load(FIXTURE).to_dict()


@pytest.mark.parametrize("source", ["x = " + "-" * 100_000 + "1",
                                    "PRESET_JSON = " + "1+" * 100_000 + "1",
                                    "PRESET_JSON = " + "(" * 300 + ")" * 300])
def test_an_absurd_module_is_a_preset_error(source):
    with pytest.raises(PresetError, match="exported module"):
        preset_from_module(source)


# ---- the path entry point (CLI, notebooks): regular files only, size-capped -------------------


def test_load_file_refuses_a_fifo_without_blocking(fifo):
    with deadline(10), pytest.raises(PresetError, match="is a FIFO"):
        load_file(fifo)


@pytest.mark.parametrize("path,kind", [("/dev/zero", "a character device"),
                                       ("/dev/null", "a character device")])
def test_load_file_refuses_devices(path, kind):
    with deadline(10), pytest.raises(PresetError, match=f"is {kind}, not a regular file"):
        load_file(path)


def test_load_file_refuses_a_directory_and_names_a_missing_file(tmp_path):
    with pytest.raises(PresetError, match="is a directory"):
        load_file(tmp_path)
    with pytest.raises(PresetError, match="does not exist"):
        load_file(tmp_path / "nope.json")


def test_load_file_reads_at_most_the_budget(tmp_path):
    big = tmp_path / "big.json"
    with big.open("wb") as f:  # sparse: 2 GiB on the file system, no disk used
        f.truncate(2 << 30)
    start = time.perf_counter()
    with pytest.raises(PresetError, match="2048.0 MiB is too large; .* at most 1 MiB"):
        load_file(big)
    assert time.perf_counter() - start < 2


def test_load_file_follows_a_link_to_a_regular_file(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(FIXTURE)
    assert load_file(link).to_dict() == load(FIXTURE).to_dict()


# ---- 3. absurd documents: bounded work, bounded messages --------------------------------------


def test_a_huge_integer_is_named_where_it_is():
    text = doc_text([{"op": "rotate", "params": {"angle": int("1" + "0" * 400)}}])
    with pytest.raises(PresetError) as err:
        parse_document(text)
    assert str(err.value) == ("step 0 (rotate): parameter 'angle': an integer of 401 digits is "
                              "not allowed; numbers must be finite and at most about 1.8e308")


def test_a_huge_integer_from_code_is_a_preset_error():
    """A dict from code skips the parser: the same check runs on it (no OverflowError)."""
    with pytest.raises(PresetError, match=r"output, at 'resize_shorter'.*not allowed"):
        load(preset_dict([], output={"resize_shorter": 10**400}))
    with pytest.raises(PresetError, match=r"step 0 \(rotate\): parameter 'angle'"):
        load(preset_dict([{"op": "rotate", "params": {"angle": 10**5000}}]))


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "NaN", "Infinity", "-Infinity"])
def test_numbers_beyond_float_are_refused(literal):
    text = doc_text([{"op": "rotate", "params": {"angle": 0}}]).replace('"angle": 0',
                                                                         f'"angle": {literal}')
    with pytest.raises(PresetError, match=rf"parameter 'angle': {literal} is not allowed"):
        parse_document(text)


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 600, 10_000, 200_000])
def test_deep_nesting_is_refused_before_parsing(depth):
    for where in ("steps", "step"):
        nest = "[" * depth + "]" * depth
        text = doc_text([]) if where == "steps" else doc_text([{"op": "rotate", "params": {}}])
        text = text.replace('"steps": []', f'"steps": {nest}') if where == "steps" else \
            text.replace('"params": {}', f'"params": {{"angle": {nest}}}')
        start = time.perf_counter()
        with pytest.raises(PresetError, match=r"nested \d+ levels deep; .* at most 16 levels"):
            parse_document(text)
        assert time.perf_counter() - start < 2


def test_brackets_inside_strings_do_not_count():
    text = doc_text([{"op": "rotate" + "[" * 1000, "params": {}}], name="{{" + '\\"[[' * 50)
    with pytest.raises(PresetError) as err:
        parse_document(text)
    assert "unknown operator" in str(err.value) and "nested" not in str(err.value)


def test_deep_nesting_from_code_is_a_preset_error():
    """``deepcopy`` of a 600-deep value used to raise RecursionError."""
    value: list = []
    for _ in range(600):
        value = [value]
    with pytest.raises(PresetError, match=r"step 0 \(rotate\): parameter 'angle'.*nested more"):
        load(preset_dict([{"op": "rotate", "params": {"angle": value}}]))


def test_an_oversized_document_is_refused_before_decoding():
    text = doc_text([{"op": "x" * 3_000_000}])
    for data in (text, text.encode()):
        start = time.perf_counter()
        with pytest.raises(PresetError, match=r"2.9 MiB is too large"):
            parse_document(data)
        assert time.perf_counter() - start < 1
    multibyte = '{"name": "' + "\u00e9" * (MAX_DOCUMENT_BYTES // 2 + 1) + '"}'
    with pytest.raises(PresetError, match="too large"):  # the budget is bytes, not characters
        parse_document(multibyte)


def test_a_long_value_is_quoted_cut_and_the_message_stays_small():
    text = doc_text([{"op": "x" * 900_000}])
    start = time.perf_counter()
    with pytest.raises(PresetError) as err:
        parse_document(text)
    assert time.perf_counter() - start < 2
    (problem,) = err.value.problems
    assert problem.startswith("step 0: unknown operator 'xxx") and "..." in problem
    assert len(problem) < 200


def test_the_list_of_problems_is_capped():
    params = {f"p{i}": 1 for i in range(500)}
    with pytest.raises(PresetError) as err:
        parse_document(doc_text([{"op": "rotate", "params": params}]))
    problems = err.value.problems
    assert len(problems) == MAX_PROBLEMS + 1
    assert problems[-1] == f"preset: ... and {500 - MAX_PROBLEMS} more problems"
    assert all(len(p) <= MAX_PROBLEM_CHARS for p in problems)


def test_binary_and_non_object_documents():
    with pytest.raises(PresetError, match=r"not UTF-8 text \(byte 0 is 0xff\)"):
        parse_document(b"\xff\xfe\x00{")
    with pytest.raises(PresetError, match="expected a JSON object, got list"):
        parse_document(b"[1]")
    for bom in ("\ufeff" + FIXTURE.read_text(), b"\xef\xbb\xbf" + FIXTURE.read_bytes()):
        assert parse_document(bom).to_dict() == load(FIXTURE).to_dict()  # a BOM is fine


def test_keys_must_be_strings_in_a_dict_from_code():
    with pytest.raises(PresetError, match=r"key 1 is not allowed; keys are strings"):
        load({**preset_dict([]), 1: "x"})


@pytest.mark.parametrize("case", sorted(absurd_documents()))
def test_every_absurd_document_is_one_bounded_preset_error(case):
    start = time.perf_counter()
    with pytest.raises(PresetError) as err:
        parse_document(absurd_documents()[case], origin=f"{case}.json")
    assert time.perf_counter() - start < 2
    assert EXPECTED[case] in str(err.value) and len(str(err.value)) < 10_000


@pytest.mark.parametrize("text, key", [
    ('{"format": "dali-gallery/preset", "version": 1, "seed": 1, "seed": 2}', "seed"),
    ('{"format": "dali-gallery/preset", "version": 1, "steps": [{"op": "rotate", "params": '
     '{"angle": 10, "angle": 30}}]}', "angle"),
    ('{"format": "dali-gallery/preset", "version": 1, "steps": [{"op": "rotate", '
     '"probability": 0.1, "probability": 1}]}', "probability"),
])
def test_a_key_given_twice_is_refused_not_read_as_its_last_value(text, key):
    # json keeps the last silently: a reader of the file saw angle 10, the preview drew 30
    with pytest.raises(PresetError) as e:
        parse_document(text, origin="upload.json")
    assert e.value.problems[0].startswith(f"upload.json: key '{key}' appears 2 times"), e.value


def test_a_repeated_key_in_a_huge_object_is_found_in_linear_time():
    text = "{" + ",".join(f'"k{i}":1' for i in range(90_000)) + ',"k89999":2}'  # < 1 MiB
    start = time.monotonic()
    with pytest.raises(PresetError, match="key 'k89999' appears 2 times"):
        parse_document(text)
    assert time.monotonic() - start < 2
