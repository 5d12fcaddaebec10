"""agentpack.io.jsonio: strict JSON with a nesting limit, the same data as json.loads otherwise."""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack.io.jsonio import MAX_DEPTH, JsonError, load_file, loads

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_same_data_as_json_loads(value):
    text = json.dumps(value)
    assert loads(text) == json.loads(text)


@given(st.integers(min_value=1, max_value=MAX_DEPTH))
def test_nesting_up_to_the_limit_is_read(depth):
    assert loads("[" * depth + "]" * depth) is not None


@pytest.mark.parametrize("opener,closer", [("[", "]"), ('{"a":', "}")])
def test_deep_nesting_is_a_clear_error_not_a_recursion_error(opener, closer):
    for depth in (MAX_DEPTH + 1, 5_000, 200_000):
        with pytest.raises(JsonError, match=f"nests deeper than {MAX_DEPTH} levels"):
            loads(opener * depth + "1" + closer * depth, file="reply.json")


def test_brackets_inside_strings_do_not_count():
    text = json.dumps({"s": "[" * 10_000 + "{" * 10_000, "t": ['"]', "\\\\["]})
    assert loads(text)["s"].startswith("[[")


@pytest.mark.parametrize("text", ["NaN", "[1, Infinity]", '{"ok": -Infinity}'])
def test_non_finite_numbers_are_not_json(text):
    with pytest.raises(JsonError, match="not a JSON number"):
        loads(text)


def test_syntax_errors_carry_line_and_column():
    with pytest.raises(JsonError) as info:
        loads('{\n  "a": 1,\n  "b": }', file="x.json")
    assert (info.value.file, info.value.line, info.value.column) == ("x.json", 3, 8)
    assert math.isfinite(loads(b'\xef\xbb\xbf{"a": 1.5}')["a"])


def test_files_that_are_not_json_files(tmp_path):
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling")
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    (tmp_path / "bin").write_bytes(b"\x00\xff\xfe")
    (tmp_path / "ok.json").write_text('{"a": [1]}')
    assert load_file(tmp_path / "ok.json") == {"a": [1]}
    for name, expected in [
        ("dir", "found a folder"),
        ("dangling", "dangling or looping symbolic link"),
        ("loop", "dangling or looping symbolic link"),
        ("bin", "not UTF-8"),
        ("missing", "no such file"),
    ]:
        with pytest.raises(JsonError, match=expected):
            load_file(tmp_path / name)


JSONISH = st.lists(st.sampled_from(["[", "]", "{", "}", '"', "\\", "a", ",", "\n", '"[{"', '"\\"["']), max_size=60)


@settings(max_examples=400, deadline=None)
@given(JSONISH, st.integers(min_value=0, max_value=6))
def test_depth_check_agrees_with_the_token_walk(parts, limit):
    """The fast check (strings removed, brackets summed in C) says "too deep" exactly when the walk over
    string and bracket tokens reaches past the limit, on any text, valid JSON or not."""
    from agentpack.io.jsonio import _too_deep_at, check_depth

    text = "".join(parts)
    try:
        check_depth(text, max_depth=limit)
        raised = False
    except JsonError:
        raised = True
    assert raised == (_too_deep_at(text, limit) is not None)
