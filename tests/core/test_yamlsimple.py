"""The fast reader of usual SKILL.md frontmatter against the composed YAML parse it stands in for."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentpack.io.errors import YamlError
from agentpack.io.frontmatter import parse_frontmatter_text
from agentpack.io.yamlio import YamlDocument, parse_yaml
from agentpack.io.yamlsimple import parse_simple


def composed(text: str) -> YamlDocument | YamlError:
    """What the strings-only strict YAML parse gives (or the error it raises)."""
    try:
        return parse_yaml(text, file="f", strings_only=True, strict=True)
    except YamlError as exc:
        return exc


# mostly the usual shape, so that the fast reader accepts a good share; the rest probes its edges
INDENTS = ["", "", "", "", "", "  ", "  ", "  ", " ", "    ", "\t"]
KEYS = ["name", "description", "metadata", "a", "a.b", "x_1", "1", "<<", "-a", "é", "a b", "'q'", "~", "a#"]
SEPARATORS = [": ", ": ", ": ", ": ", ":", ":  ", " : ", ": \t", ""]
USUAL = ["word", "two words", "x", "1.0", "yes", "null", "C#", "a#b", "Q&A", "it!", "a, b", "é—ü", "P(a,b) E(c)"]
TRICKY = [
    *["~", "[a]", "{b}", " ", "  ", ":", ": ", " :x", "a:b", " #", "#", "# c", "-", "- x", "?", "|", ">", "&x"],
    *["*x", "!t", "%", "@", "`", '"', "'", "''", '"q"', "'s'", '"a\\nb"', "\\", "\u2028", "\x85", "\ufeff"],
    *["\x7f", "\t", "...", "---", "DCI/1^strict"],
]


@st.composite
def frontmatter(draw: st.DrawFn) -> str:
    """A usual mapping (some keys holding a nested one), each line perturbed now and then."""

    def usual_or_tricky(usual: list[str], tricky: list[str]) -> str:
        return draw(st.sampled_from(usual if draw(st.integers(0, 7)) else tricky))

    def value() -> str:
        return "".join(usual_or_tricky(USUAL, TRICKY) for _ in range(draw(st.integers(1, 3))))

    lines = []
    for n in range(draw(st.integers(0, 5))):
        key = usual_or_tricky(KEYS[:6], KEYS) + ("" if draw(st.booleans()) else str(n))
        separator = usual_or_tricky([": "], SEPARATORS)
        if draw(st.integers(0, 3)):
            lines.append(f"{key}{separator}{value()}")
            continue
        lines.append(key + usual_or_tricky([":"], SEPARATORS))
        indent = usual_or_tricky(["  "], INDENTS)
        for m in range(draw(st.integers(0, 3))):
            lines.append(f"{usual_or_tricky([indent], INDENTS)}{usual_or_tricky(KEYS[:6], KEYS)}{m}: {value()}")
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n", "\n  \n"]))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(frontmatter())
@example("name: a\nmetadata:\n  contract: 'DCI/1 P(x)'\n  version: 1.0\n")
@example("name: a\nmetadata:\n  b: c\nother:\n  d: e\n")
@example("name: a\nmetadata:\n  b: c\nother:\n   d: e\n")
@example("name: a\nname: b\n")
@example("name: a\nmetadata:\n  b: c\n  b: d\n")
def test_the_fast_reader_builds_what_the_parser_builds(text: str) -> None:
    fast = parse_simple(text, "f")
    if fast is not None:
        assert composed(text) == fast


@pytest.mark.parametrize(
    "text",
    [
        "name: pdf\ndescription: Extract text from PDFs: fast. Use when asked.\n",  # ': ' inside: YAML refuses
        "name: a\ndescription: b # a comment\n",
        "name: a\ndescription: |\n  block\n",
        "name: a\ndescription:\n",
        "name: a\ndescription: >-\n  folded\n",
        "name: a\n  continued\n",
        'name: a\ndescription: "escaped \\" quote"\n',
        "name: [a]\n",
        "name: a\n\tdescription: b\n",
        "# comment\nname: a\n",
        "name: a\u2028b\n",
        "",
    ],
)
def test_anything_else_is_left_to_the_yaml_parser(text: str) -> None:
    assert parse_simple(text) is None


def test_the_usual_frontmatter_is_read_fast_with_lines_and_columns() -> None:
    text = (
        "name: web-search\n"
        "description: Search the web and summarise results (Q&A, C#, 100%).\n"
        "license: Apache-2.0\n"
        "metadata:\n"
        '  contract: "DCI/1 P(web-search) E(query-text)"\n'
        "  author: 'O''Brien'\n"
    )
    document = parse_simple(text, "f")
    assert document is not None and document == composed(text)
    assert document.data["metadata"] == {"contract": "DCI/1 P(web-search) E(query-text)", "author": "O'Brien"}
    assert document.where("/metadata/author") == {"file": "f", "line": 6, "pointer": "/metadata/author"}
    assert document.columns["/metadata/author"] == 3


def test_frontmatter_of_the_usual_shape_is_read_without_pyyaml() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from agentpack.io.frontmatter import parse_frontmatter_text\n"
        "doc = parse_frontmatter_text('name: a\\ndescription: b\\n', strings_only=True)\n"
        "assert doc.data == {'name': 'a', 'description': 'b'}, doc.data\n"
        "print('yaml' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert parse_frontmatter_text("name: a\ndescription: |\n  b\n", strings_only=True).data["description"] == "b\n"


def test_a_long_line_that_does_not_match_fails_at_once() -> None:
    # with backtracking into runs of ordinary characters this took exponential time (25 characters: 1 s)
    assert parse_simple("a: " + "x" * 5000 + ": y") is None
    assert parse_simple("a: " + "x y" * 5000 + " #") is None


TYPED = [
    *[
        "1",
        "0",
        "-3",
        "+7",
        "007",
        "0x1f",
        "1_000",
        "1:20",
        "1.0",
        "1.",
        "-2.50",
        ".5",
        "1e5",
        "1.0e+5",
        ".inf",
        ".NaN",
    ],
    *["yes", "No", "ON", "off", "TRUE", "fAlse", "y", "n", "null", "Null", "nULL", "~", "=", "<<"],
    *[
        "2024-01-31",
        "2024-02-30",
        "2024-1-5",
        "2024-01-31T10:00:00Z",
        "2024-01-31 10:00",
        "'1.0'",
        '"yes"',
        "'2024-01-31'",
    ],
    *["1.0.0", "v1", "Apache-2.0", "a: b"],
]


def safe_loaded(text: str) -> object:
    """What PyYAML's ``safe_load`` reads, in the JSON form MCP skill entries carry (or the error)."""
    import yaml

    from agentpack.io.frontmatter import _json_form

    try:
        return _json_form(yaml.safe_load(text), None)
    except (yaml.YAMLError, ValueError) as exc:
        return exc


@st.composite
def typed_frontmatter(draw: st.DrawFn) -> str:
    """Frontmatter whose values and keys YAML 1.1 may read as numbers, booleans, nulls or dates."""
    lines = []
    for n in range(draw(st.integers(1, 5))):
        key = draw(st.sampled_from(["name", "version", "1", "yes", "2024-01-31", "1.5", "null"])) + str(n) * (n % 2)
        if draw(st.integers(0, 3)):
            lines.append(f"{key}: {draw(st.sampled_from(TYPED))}")
        else:
            lines.append(f"{key}:")
            lines += [f"  k{m}: {draw(st.sampled_from(TYPED))}" for m in range(draw(st.integers(1, 3)))]
    return "\n".join(lines) + "\n"


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(st.one_of(typed_frontmatter(), frontmatter()))
@example("name: a\nversion: 1.0\ncreated: 2024-01-31\nbeta: yes\nmetadata:\n  n: 3\n  quoted: '3'\n  none: ~\n")
def test_the_typed_fast_reader_reads_what_safe_load_reads(text: str) -> None:
    fast = parse_simple(text, "f", typed=True)
    if fast is not None:
        assert safe_loaded(text) == fast.data


def test_typed_frontmatter_in_json_form() -> None:
    from agentpack.io.errors import PackError
    from agentpack.io.frontmatter import frontmatter_json

    text = "name: a\nversion: 1.0\ncreated: 2024-01-31\nbeta: yes\ntags: [x, 2]\nat: 2024-01-31 10:00:00\n"
    assert frontmatter_json(text) == {
        "name": "a",
        "version": 1.0,
        "created": "2024-01-31",
        "beta": True,
        "tags": ["x", 2],
        "at": "2024-01-31T10:00:00",
    }
    assert parse_simple("name: a\nversion: 1.0\n", typed=True) is not None  # the usual shape needs no PyYAML
    with pytest.raises(PackError, match="no JSON form"):
        frontmatter_json("name: a\nx: .nan\n")
    with pytest.raises(PackError, match="must be a YAML mapping"):
        frontmatter_json("- a\n")
