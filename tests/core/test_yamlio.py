"""agentpack.io.yamlio: C loader, duplicate keys, line numbers, limits, errors, and property tests."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentpack.io import yamlio
from agentpack.io.errors import YamlError
from agentpack.io.yamlio import join_pointer, load_yaml, parse_yaml


def test_c_loader_is_used_when_present():
    assert hasattr(yaml, "CSafeLoader"), "this PyYAML build has libyaml; the test environment expects it"
    assert yamlio._BaseLoader is yaml.CSafeLoader


def test_data_and_lines():
    doc = parse_yaml("a: 1\nb:\n  c: [x, y]\n  d:\n    - e: true\n      f: 2.5\n", file="f.yaml")
    assert doc.data == {"a": 1, "b": {"c": ["x", "y"], "d": [{"e": True, "f": 2.5}]}}
    assert doc.lines["/a"] == 1
    assert doc.line_of("/b/c/1") == 3
    assert doc.line_of("/b/d/0/f") == 6
    assert doc.line_of("/b/d/0/missing/deeper") == 5  # nearest parent that has a line
    assert doc.where("/b/d") == {"file": "f.yaml", "line": 4, "pointer": "/b/d"}
    assert doc.where("") == {"file": "f.yaml", "line": 1, "pointer": None}
    assert doc.columns["/b/d/0/f"] == 7


def test_pointer_escaping():
    doc = parse_yaml("'a/b':\n  '~x': 1\n")
    assert doc.line_of("/a~1b/~0x") == 2
    assert join_pointer("", "a/b~") == "/a~1b~0"


def test_empty_document():
    assert parse_yaml("").data is None
    assert parse_yaml("# only a comment\n").line_of("/x") is None


def test_duplicate_key_names_both_lines():
    with pytest.raises(YamlError) as info:
        parse_yaml("top:\n  a: 1\n  b: 2\n  a: 3\n", file="dup.yaml")
    error = info.value
    assert (error.file, error.line, error.column) == ("dup.yaml", 4, 3)
    assert "duplicate key 'a'" in error.message and "line 2" in error.message
    assert str(error).startswith("dup.yaml:4:3: ")


def test_duplicate_merge_keys_rejected():
    with pytest.raises(YamlError, match="duplicate merge key"):
        parse_yaml("m:\n  <<: {a: 1}\n  <<: {b: 2}\n")


def test_merge_keys_own_keys_win():
    text = "base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 3\n"
    for strings_only, expected in ((False, {"x": 1, "y": 3}), (True, {"x": "1", "y": "3"})):
        doc = parse_yaml(text, strings_only=strings_only)
        assert doc.data["child"] == expected
        assert doc.line_of("/child/y") == 4 and doc.line_of("/child/x") == 1
        assert doc.merged == {"/child/x"}
    with pytest.raises(YamlError, match="merge key '<<' needs a mapping") as info:
        parse_yaml("a:\n  <<: 3\n")
    assert info.value.line == 2


def test_non_scalar_keys_rejected():
    with pytest.raises(YamlError, match="plain scalars") as info:
        parse_yaml("ok: 1\n? [a, b]\n: c\n")
    assert info.value.line == 2


@pytest.mark.parametrize(
    "text, line, column",
    [
        ("a: [1, 2\nb: 3\n", 2, 2),
        ("a: 'unterminated\n", 2, 1),
        ("a:\n\t- b\n", 2, 1),
        ("key: value: other\n", 1, 11),
        ("a: *nowhere\n", 1, 4),
    ],
)
def test_syntax_errors_have_file_line_column(text, line, column):
    with pytest.raises(YamlError) as info:
        parse_yaml(text, file="bad.yaml")
    error = info.value
    assert error.file == "bad.yaml" and error.message.startswith("invalid YAML")
    assert (error.line, error.column) == (line, column)


@pytest.mark.parametrize(
    "text, line",
    [
        ("a: 1\nb: 2001-02-30\n", 2),  # a timestamp that is not a date
        ("a: !!int nope\n", 1),
        ("a:\n  - !!float nope\n", 2),
    ],
)
def test_value_errors_are_yaml_errors(text, line):
    with pytest.raises(YamlError, match="invalid YAML value") as info:
        parse_yaml(text)
    assert info.value.line == line


def test_control_characters_point_at_the_character():
    with pytest.raises(YamlError, match="U\\+0007") as info:
        parse_yaml("é: 1\nb: x\x07y\n")
    assert (info.value.line, info.value.column) == (2, 5)


def test_alias_bomb_is_stopped(monkeypatch):
    monkeypatch.setattr(yamlio, "MAX_NODES", 5000)
    levels = ["a: &a [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        prev = chr(ord("a") + i - 1)
        levels.append(f"{chr(ord('a') + i)}: &{chr(ord('a') + i)} [{', '.join(['*' + prev] * 10)}]")
    with pytest.raises(YamlError, match="alias bomb"):
        parse_yaml("\n".join(levels) + "\n")


def test_alias_bomb_with_default_limit():
    text = "a: &a [" + ", ".join(["x"] * 100) + "]\n"
    for name, prev in (("b", "a"), ("c", "b"), ("d", "c")):
        text += f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 100) + "]\n"  # 10^8 nodes once expanded
    with pytest.raises(YamlError, match="more than 1000000 nodes"):
        parse_yaml(text)


@pytest.mark.parametrize("depth", [300, 2000])
def test_deep_nesting_is_one_clear_error_whichever_layer_refuses_it(depth, tmp_path):
    """300 levels pass PyYAML and meet our limit; 2,000 meet PyYAML's own (6.0.3 and newer): the user sees the same."""
    with pytest.raises(YamlError, match="nests deeper than 256 levels") as info:
        parse_yaml("[" * depth + "]" * depth)
    assert info.value.line == 1
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * depth + "]" * depth + "\n")
    with pytest.raises(YamlError, match="nests deeper than 256 levels") as info:
        load_yaml(deep, display="deep.yaml")
    assert info.value.file == "deep.yaml"


def test_recursive_aliases_are_refused():
    with pytest.raises(YamlError, match="recursive alias"):
        parse_yaml("a: &x [*x]\n")
    with pytest.raises(YamlError, match="recursive alias"):
        parse_yaml("a: &x {<<: *x}\n")


def test_size_limits(tmp_path, monkeypatch):
    monkeypatch.setattr(yamlio, "MAX_BYTES", 100)
    with pytest.raises(YamlError, match="larger than 100 bytes"):
        parse_yaml("a: " + "x" * 200)
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * 200)
    with pytest.raises(YamlError, match="more than the limit of 100") as info:
        load_yaml(big, display="big.yaml")
    assert info.value.file == "big.yaml"


def test_load_yaml_reads_files(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes(b"\xef\xbb\xbfname: x\r\nversion: 1.0\r\n")
    doc = load_yaml(path)
    assert doc.data == {"name": "x", "version": 1.0} and doc.file == str(path)
    assert load_yaml(path, strings_only=True).data == {"name": "x", "version": "1.0"}
    assert load_yaml(path, display="pack/p.yaml").where("/version")["line"] == 2


def test_load_yaml_io_errors(tmp_path):
    with pytest.raises(YamlError, match="cannot read"):
        load_yaml(tmp_path / "missing.yaml")
    (tmp_path / "latin1.yaml").write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(YamlError, match="not UTF-8") as info:
        load_yaml(tmp_path / "latin1.yaml")
    assert info.value.line == 2


def test_strict_mode_rules():
    for text, what in (
        ("a: [1]\n", "flow-style lists"),
        ("a: {b: 1}\n", "flow-style mappings"),
        ("a: &x 1\n", "anchors"),
        ("a: !!str 1\n", "tags"),
    ):
        with pytest.raises(YamlError, match=what):
            parse_yaml(text, strings_only=True, strict=True)
        parse_yaml(text.replace("*x", "1"), strings_only=True)  # fine when not strict
    with pytest.raises(YamlError, match="indented differently") as info:
        parse_yaml("a:\n  x: 1\nb:\n    y: 2\n", strict=True)
    assert info.value.line == 4
    assert parse_yaml("a:\n  x: 1\nb:\n    y: 2\n").data == {"a": {"x": 1}, "b": {"y": 2}}


# --- properties -------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(st.text(max_size=300), st.booleans())
def test_arbitrary_text_raises_only_yaml_error(text, strings_only):
    try:
        parse_yaml(text, file="x.yaml", strings_only=strings_only, strict=strings_only)
    except YamlError as error:
        assert error.file == "x.yaml"


yaml_chars = st.sampled_from([*list("ab: -[]{}&*!|>'\"#%@`,?\n\t ~.0"), "\r\n", "<<", "---", "..."])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(st.lists(yaml_chars, max_size=60).map("".join), st.booleans())
def test_yaml_ish_text_raises_only_yaml_error(text, strings_only):
    try:
        parse_yaml(text, strings_only=strings_only, strict=strings_only)
    except YamlError:
        pass


def canonical(value):
    """``value`` with the order of mapping keys and the type of every scalar made visible."""
    if isinstance(value, dict):
        return ["map", [(canonical(k), canonical(v)) for k, v in value.items()]]
    if isinstance(value, list):
        return ["seq", [canonical(item) for item in value]]
    if isinstance(value, float) and value != value:
        return ["float", "nan"]
    return [type(value).__name__, value]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(
    st.lists(
        yaml_chars
        | st.sampled_from(
            [
                "1",
                "true",
                "null",
                "~",
                "2001-12-14",
                "!!str ",
                "!!binary ",
                "<<: *a",
                "&a ",
                "0x1F",
                "1.5e3",
                ".inf",
                "\n  ",
                "\n- ",
            ]
        ),
        max_size=60,
    ).map("".join)
)
@example("a: 1\nb: [x, {c: 2001-12-14}]\n1: one\nnull: ~\n")
@example("x: &a {p: 1}\ny: *a\nz:\n  <<: *a\n  q: 2\n")
@example("s: !!set {a, b}\no: !!omap [a: 1]\nb: !!binary aGk=\nf: !!float 1\n")
def test_one_pass_build_matches_pyyaml_constructor(text):
    try:
        expected = yaml.load(text, Loader=yaml.CSafeLoader)
    except (yaml.YAMLError, ValueError, TypeError, OverflowError):
        return
    try:
        doc = parse_yaml(text)
    except YamlError:  # stricter than PyYAML: duplicate keys, non-scalar keys, limits
        return
    assert canonical(doc.data) == canonical(expected)


# NEL/LS/PS excluded: PyYAML's emitter writes them raw and its reader folds them (a PyYAML quirk)
text = st.text(st.characters(exclude_characters="\x85\u2028\u2029", exclude_categories=("Cs",)), max_size=20)
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), text)
json_like = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(text, children, max_size=4)),
    max_leaves=20,
)


def pointers(value, pointer=""):
    yield pointer
    if isinstance(value, dict):
        for key, item in value.items():
            yield from pointers(item, join_pointer(pointer, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from pointers(item, join_pointer(pointer, index))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(json_like, st.booleans())
def test_dumped_data_round_trips_with_a_line_for_every_pointer(value, flow):
    text = yaml.safe_dump(value, default_flow_style=flow, allow_unicode=True, sort_keys=False)
    doc = parse_yaml(text)
    assert json.dumps(doc.data, sort_keys=True) == json.dumps(value, sort_keys=True)
    line_count = max(1, text.count("\n"))
    for pointer in pointers(value):
        assert pointer in doc.lines, pointer
        assert 1 <= doc.lines[pointer] <= line_count + 1


PURE_LOADER = r"""
import yaml
del yaml.CSafeLoader
from agentpack.io import yamlio
from agentpack.io.errors import YamlError
assert yamlio._BaseLoader is yaml.SafeLoader
doc = yamlio.parse_yaml("a: 1\nb:\n  - c: x\n")
assert doc.data == {"a": 1, "b": [{"c": "x"}]} and doc.line_of("/b/0/c") == 3
cases = (("a: 1\na: 2\n", False, (2, 1)), ("a: [1\n", False, (2, 1)), ("a: \x07\n", False, (1, 4)),
         ("a: [1]\n", True, (1, 4)), ("a:\n  x: 1\nb:\n    y: 2\n", True, (4, 5)))
for text, strict, where in cases:
    try:
        yamlio.parse_yaml(text, strings_only=strict, strict=strict)
    except YamlError as error:
        assert (error.line, error.column) == where, (text, error)
    else:
        raise AssertionError(text)
print("ok")
"""


def test_pure_python_loader_fallback_behaves_alike():
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "-c", PURE_LOADER], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "ok", result.stderr


def test_reading_names_the_file_the_line_and_the_reason(tmp_path):
    from agentpack.io.errors import PackError, reading

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nalso fine\n\xff here\n")
    with pytest.raises(PackError) as info, reading("bad.txt"):
        bad.read_text(encoding="utf-8")
    assert (info.value.file, info.value.line, info.value.hint) == ("bad.txt", 3, "save the file as UTF-8")
    with pytest.raises(YamlError, match="cannot read: No such file"), reading("gone.yaml", YamlError):
        (tmp_path / "gone.yaml").read_text()


@pytest.mark.parametrize(
    "text,line", [("a: .nan", 1), ("a:\n  - 1\n  - -.inf", 3), ("base: &b {x: 1}\nc:\n  <<: *b\n  t: .INF", 4)]
)
def test_non_finite_numbers_are_refused_with_their_line(text, line):
    """No field of any format takes NaN or infinity: refused where they are written, in both parsing paths."""
    with pytest.raises(YamlError, match="is not a finite number") as info:
        parse_yaml(text, file="m.yaml")
    assert (info.value.file, info.value.line) == ("m.yaml", line)
    assert parse_yaml("a: '.nan'").data == {"a": ".nan"}
