"""A record's tokens are built from the name's tokens once; the same as tokenizing the joined strings."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack_dci.discovery import _parse
from agentpack_dci.text import tokenize

NAMES = st.from_regex(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,3}", fullmatch=True)
TEXT = st.text(st.sampled_from(list("abcσςΣ éİß-_/.:1 ")), max_size=40)


@settings(max_examples=200, deadline=None)
@given(name=NAMES, description=TEXT, folder=st.sampled_from([".", "same", "group/same", "x-y"]))
def test_tokens_equal_those_of_the_joined_strings(tmp_path_factory, name, description, folder) -> None:
    rel = name if folder == "same" else f"group/{name}" if folder == "group/same" else folder
    text = f'---\nname: {name}\ndescription: "{description.strip() or "x"}"\n---\n'
    directory = tmp_path_factory.mktemp("ws") / name
    parsed = _parse(directory, rel, "workspace-local", f"skills/{name}", text)
    record = parsed.record
    assert record is not None, parsed.reason
    assert Counter(record.terms) == Counter(tokenize(f"{name} {description.strip() or 'x'}"))
    assert frozenset(record.namepath_tokens) == frozenset(tokenize(f"{name} {rel}" if rel != "." else f"{name} "))


def test_a_flat_skill_s_name_and_path_tokens_are_its_name_s(tmp_path: Path) -> None:
    text = "---\nname: web-search\ndescription: Searches the web.\n---\n"
    record = _parse(tmp_path / "web-search", "web-search", "workspace-local", "skills/web-search", text).record
    assert record is not None and record.namepath_tokens == ("web", "search")
