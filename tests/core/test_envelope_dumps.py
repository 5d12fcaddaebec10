"""``envelope.dumps`` prints what ``json.dumps(indent=2, ensure_ascii=False, default=str)`` prints."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack.io.envelope import dumps

# strings with what an encoded string escapes or could be mistaken for a separator in
TEXT = st.text(st.sampled_from(list('ab ,:"\\{}[]\n\té—\u2028\x00\x7f')), max_size=12)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | TEXT
    | st.builds(PurePosixPath, st.sampled_from(["a/b", "c"]))  # through default=str
)
KEYS = TEXT | st.integers(-5, 5) | st.floats(allow_nan=False, width=16) | st.booleans() | st.none()
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple) | st.dictionaries(KEYS, inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=600, deadline=None)
@given(VALUES)
def test_the_text_of_json_dumps_indented(value) -> None:
    assert dumps(value) == json.dumps(value, indent=2, ensure_ascii=False, default=str)


def test_a_report_sized_value() -> None:
    report = {"candidates": [{"id": f"s{i}", "scores": {"a": i / 7, "b": None}, "why": ['x, "y"']} for i in range(50)]}
    assert dumps(report) == json.dumps(report, indent=2, ensure_ascii=False, default=str)


def test_keys_json_cannot_write_are_refused_as_json_refuses_them() -> None:
    with pytest.raises(TypeError):
        dumps({(1, 2): "tuple key"})
