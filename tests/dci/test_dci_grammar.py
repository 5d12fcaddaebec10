"""The contract grammar: parsing, errors with columns, canonical form, and property-based round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack_dci.grammar import (
    CONTROL_CHARACTERS,
    Capability,
    Contract,
    ContractParseError,
    escape,
    parse_contract,
    serialize_contract,
)
from agentpack_dci.tokens import is_capability, token_problem

SPEC_EXAMPLE = (
    "DCI/1^strict P(option-evaluation) E(evaluation-criteria) A(output-format=json,output-template=raw) "
    "R(web-search) O(critical-thinking) Pol(min-total-score=0.45,on-missing-required=offer-emulation)"
)


def test_spec_example_parses_and_is_canonical():
    c = parse_contract(SPEC_EXAMPLE)
    assert c.version == 1 and c.mode == "strict" and c.mode_declared
    assert [t.value for t in c.provides] == ["option-evaluation"]
    assert [t.value for t in c.expects] == ["evaluation-criteria"]
    assert c.accepts == (("output-format", "json"), ("output-template", "raw"))
    assert [t.value for t in c.required] == ["web-search"]
    assert [t.value for t in c.optional] == ["critical-thinking"]
    assert dict(c.policy) == {"min-total-score": "0.45", "on-missing-required": "offer-emulation"}
    assert serialize_contract(c) == SPEC_EXAMPLE


def test_mode_defaults_to_best_effort_and_canonical_form_is_explicit():
    c = parse_contract("DCI/1 P(a)")
    assert c.mode == "best-effort" and not c.mode_declared
    assert c.canonical() == "DCI/1^best-effort P(a)"


def test_long_forms_are_normalised_to_short_forms():
    c = parse_contract("DCI/1 Provides(a) Expects(b) Accepts(k=v) Required(c) Optional(d) Policy(max-candidates=2)")
    assert c.canonical() == "DCI/1^best-effort P(a) E(b) A(k=v) R(c) O(d) Pol(max-candidates=2)"
    assert [n[0] for n in c.notes].count("long-form") == 6


UPSTREAM_CONSUMER = (
    Path(__file__).parents[2] / ".." / "shared" / "reference" / "upstream" / "interop3" / "dci" / "consumer"
)


@pytest.mark.skipif(
    not UPSTREAM_CONSUMER.is_dir(), reason=f"the origin's example consumer is not at {UPSTREAM_CONSUMER}"
)
def test_requires_is_the_long_form_of_r():
    """The origin's current text (pax dff1667) spells R's long form ``Requires``; its own example contract,
    written with every long form it lists, keeps its required capability (it used to vanish as unknown)."""
    from agentpack.skills.skillmd import read_skill

    contract = read_skill(UPSTREAM_CONSUMER / "skills" / "option-evaluation").metadata["contract"]
    long = contract
    for short, spelled in (("P", "Provides"), ("E", "Expects"), ("A", "Accepts"), ("R", "Requires"), ("O", "Optional")):
        long = long.replace(f" {short}(", f" {spelled}(")
    assert "Requires(web-search)" in long
    parsed, original = parse_contract(long), parse_contract(contract)
    assert [c.value for c in parsed.required] == ["web-search"]
    assert parsed.canonical() == original.canonical()
    assert "unknown clause 'Requires'" not in [n[1] for n in parsed.notes]
    assert (
        parse_contract("DCI/1 Required(web-search)").required == parse_contract("DCI/1 Requires(web-search)").required
    )


def test_whitespace_is_trimmed_and_escapes_decoded():
    c = parse_contract("  DCI/1   P( web-search ,  summarization )  A( k = a\\,b\\=c\\ d )  ")
    assert [t.value for t in c.provides] == ["web-search", "summarization"]
    assert c.accepts == (("k", "a,b=c d"),)
    assert c.canonical() == "DCI/1^best-effort P(web-search,summarization) A(k=a\\,b\\=c\\ d)"


def test_escaped_space_at_the_edge_is_kept():
    c = parse_contract("DCI/1 P(\\ a)")
    assert c.provides[0].value == " a" and not c.provides[0].valid


def test_split_at_first_unescaped_equals():
    c = parse_contract("DCI/1 A(expr=a=b)")
    assert c.accepts == (("expr", "a=b"),)
    assert c.canonical() == "DCI/1^best-effort A(expr=a\\=b)"


def test_invalid_tokens_are_kept_without_rewriting():
    c = parse_contract("DCI/1 P(Web-Search,web--search,-web,web_search,ok) R(x)")
    values = [(t.value, t.valid) for t in c.provides]
    assert values == [
        ("Web-Search", False),
        ("web--search", False),
        ("-web", False),
        ("web_search", False),
        ("ok", True),
    ]
    assert len(c.invalid_tokens()) == 4


def test_repeated_clauses_merge_and_duplicates_are_noted():
    c = parse_contract("DCI/1 P(a) P(b,a)")
    assert [t.value for t in c.provides] == ["a", "b", "a"]
    codes = [n[0] for n in c.notes]
    assert "merged-clause" in codes and "duplicate-token" in codes


def test_unknown_clauses_are_kept_for_round_trips():
    c = parse_contract("DCI/1 P(a) X-Future(anything\\,here)")
    assert c.unknown == (("X-Future", "anything\\,here"),)
    assert parse_contract(c.canonical()) == c


@pytest.mark.parametrize(
    "text, column, fragment",
    [
        ("", 1, "must start with 'DCI/"),
        ("dci/1 P(a)", 1, "must start with 'DCI/"),
        ("DCI/ P(a)", 5, "version number"),
        ("DCI/1^fast P(a)", 7, "unknown mode 'fast'"),
        ("DCI/1", 6, "at least one clause"),
        ("DCI/1P(a)", 6, "expected a space"),
        ("DCI/1 P(a", 7, "not closed"),
        ("DCI/1 P(a(b))", 10, "unescaped '('"),
        ("DCI/1 P(a\\x)", 10, "invalid escape"),
        ("DCI/1 P()", 7, "is empty"),
        ("DCI/1 A(novalue)", 9, "expected key=value"),
        ("DCI/1 A(=v)", 9, "missing key"),
        ("DCI/1 A(k=)", 10, "missing value"),
        ("DCI/1 A(k=a b)", 12, "not allowed in a value"),
        ("DCI/1 A(k*=v)", 10, "not allowed in a key"),
        ("DCI/1 A(k=1,k=2)", 13, "appears twice"),
        ("DCI/1 P(a) junk", 12, "expected a clause"),
        ("DCI/1 P(a)\\", 11, "expected a space"),
    ],
)
def test_errors_point_at_the_column(text, column, fragment):
    with pytest.raises(ContractParseError) as info:
        parse_contract(text)
    assert fragment in info.value.message
    assert info.value.column == column


def test_non_string_input_is_a_parse_error():
    with pytest.raises(ContractParseError):
        parse_contract(42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value, ok",
    [
        ("a", True),
        ("web-search", True),
        ("a1-b2", True),
        ("x" * 64, True),
        ("x" * 65, False),
        ("", False),
        ("Web", False),
        ("-a", False),
        ("a-", False),
        ("a--b", False),
        ("a_b", False),
        ("é", False),
        ("a\n", False),
    ],
)
def test_capability_token_rules(value, ok):
    assert is_capability(value) is ok
    assert (token_problem(value) is None) is ok


# -- properties ---------------------------------------------------------------------------------
@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_arbitrary_text_raises_only_parse_errors(text):
    try:
        parse_contract(text)
    except ContractParseError as exc:
        assert exc.column >= 1


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="DCI/1^strbe-fot PEARO()ol,=\\ \tabxyz", max_size=60))
def test_grammar_shaped_text_round_trips_when_it_parses(text):
    try:
        first = parse_contract(text)
    except ContractParseError:
        return
    canonical = serialize_contract(first)
    assert parse_contract(canonical) == first
    assert serialize_contract(parse_contract(canonical)) == canonical


_value_chars = st.characters(blacklist_categories=("Cs",)).filter(lambda c: not CONTROL_CHARACTERS.match(c))
_token = st.text(_value_chars, min_size=1, max_size=12).filter(lambda s: s == s.strip() or s.strip(" ") != s)
_safe_value = st.text(st.sampled_from("abcXYZ019-_.:/@,()=\\ "), min_size=1, max_size=10)
_key = st.text(st.sampled_from("abc-_19"), min_size=1, max_size=8)


def _cap(value: str) -> Capability:
    return Capability(value, token_problem(value))


@st.composite
def contracts(draw):
    def caps():
        values = draw(st.lists(_token, max_size=4))
        return tuple(_cap(v) for v in values if v.strip() == v or v.strip(" ") == v.strip())

    def pairs():
        return tuple(draw(st.dictionaries(_key, _safe_value, max_size=3)).items())

    return Contract(
        version=draw(st.integers(0, 99)),
        mode=draw(st.sampled_from(["strict", "best-effort"])),
        provides=caps() or (_cap("a"),),
        expects=caps(),
        required=caps(),
        optional=caps(),
        accepts=pairs(),
        policy=pairs(),
    )


def _representable(contract: Contract) -> bool:
    """A value the parser can produce: no unescapable whitespace at a token's edges, no empty tokens."""
    for clause in ("P", "E", "R", "O"):
        for cap in contract.capabilities(clause):
            v = cap.value
            if not v or v[0] in "\t\n\r\x0b\x0c" or v[-1] in "\t\n\r\x0b\x0c" or (v.strip() == "" and " " not in v):
                return False
            if any(ch.isspace() and ch != " " for ch in (v[0], v[-1])):
                return False
    return True


@settings(max_examples=300, deadline=None)
@given(contracts())
def test_serialise_then_parse_gives_the_same_value(contract):
    if not _representable(contract):
        return
    text = serialize_contract(contract)
    assert parse_contract(text) == contract


def test_escape_covers_every_reserved_character():
    assert escape("a,b(c)d=e\\f g") == "a\\,b\\(c\\)d\\=e\\\\f\\ g"


# -- the plain-contract fast path reads exactly what the general parser reads --------------------
def _full(contract: Contract) -> tuple:
    caps = tuple(
        (c.value, c.problem, c.column) for clause in ("P", "E", "R", "O") for c in contract.capabilities(clause)
    )
    return contract, caps, contract.mode_declared, contract.notes


_plain_token = st.text(st.sampled_from("ab1-"), min_size=0, max_size=5)
_plain_clause = st.tuples(
    st.sampled_from(["P", "E", "R", "O", "A", "Pol", "Provides", "X", "p"]),
    st.lists(st.one_of(_plain_token, st.builds("{}={}".format, _key, _safe_value)), min_size=1, max_size=4),
)
_valid_token = st.from_regex(r"[a-z0-9]{1,4}(-[a-z0-9]{1,3}){0,2}", fullmatch=True)
_plain_value = st.text(st.sampled_from("aZ09-_.:/@="), min_size=1, max_size=6)


@st.composite
def plain_shaped(draw):
    """Mostly grammar-valid plain contracts, some with one thing the fast path must hand over."""
    head = (
        "DCI/"
        + draw(st.sampled_from(["1", "2", "01", ""]))
        + draw(st.sampled_from(["", "^strict", "^best-effort", "^fast"]))
    )
    if draw(st.booleans()):  # valid by construction: distinct clauses, distinct valid tokens
        names = draw(st.lists(st.sampled_from(["P", "E", "R", "O", "A", "Pol"]), min_size=1, max_size=6, unique=True))
        clauses = [
            (
                n,
                [f"{k}={v}" for k, v in draw(st.dictionaries(_key, _plain_value, min_size=1, max_size=3)).items()]
                if n in ("A", "Pol")
                else draw(st.lists(_valid_token, min_size=1, max_size=4, unique=True)),
            )
            for n in names
        ]
        spaces = draw(st.lists(st.sampled_from([" ", "  "]), min_size=len(clauses), max_size=len(clauses)))
    else:
        clauses = draw(st.lists(_plain_clause, min_size=0, max_size=4))
        spaces = draw(st.lists(st.sampled_from([" ", "  ", "\t", ""]), min_size=len(clauses), max_size=len(clauses)))
    return head + "".join(f"{sp}{name}({','.join(items)})" for sp, (name, items) in zip(spaces, clauses, strict=True))


@settings(max_examples=600, deadline=None)
@given(st.one_of(plain_shaped(), st.text(alphabet="DCI/1^strbe-fot PEARO()ol,=\\ \tabxyz", max_size=60)))
def test_plain_fast_path_agrees_with_the_general_parser(text):
    from agentpack_dci.grammar import _parse_general, _parse_plain

    fast = _parse_plain(text)
    try:
        general = _parse_general(text)
    except ContractParseError:
        assert fast is None
        return
    if fast is not None:
        assert _full(fast) == _full(general)


def test_plain_fast_path_takes_the_common_form():
    from agentpack_dci.grammar import _parse_plain

    assert _parse_plain("DCI/1^strict P(web-search,summarize) E(input-text) A(format=json) Pol(k=a=b)")
    for text in (
        "DCI/1 P(a,a)",
        "DCI/1 P(A)",
        "DCI/1 Provides(a)",
        "DCI/1 P(a) P(b)",
        " DCI/1 P(a)",
        "DCI/1 P(a\\,b)",
        "DCI/1 P( a)",
        "DCI/1 A(k=v,k=w)",
        "DCI/1 P(a) ",
    ):
        assert _parse_plain(text) is None, text


def test_equality_ignores_where_a_contract_was_written_and_nothing_else() -> None:
    a = parse_contract("DCI/1 P(web-search, summarize)")
    b = parse_contract("DCI/1   P( web-search ,summarize )")  # other columns
    assert a == b and hash(a) == hash(b) and not (a != b)  # noqa: SIM202 - checks __ne__ itself
    assert a.provides[0].column != b.provides[0].column and a.provides[0] == b.provides[0]
    assert a != parse_contract("DCI/1 P(web-search)") and a != tuple(a) and tuple(a) != a  # not a plain tuple
    assert {a: 1}[b] == 1
