"""``envelope.dumps`` prints what ``json.dumps(indent=2, ensure_ascii=False, default=str)`` prints."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack.io.envelope import Streamed, dumps, write, write_chunks

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


def _streamed(value):
    """``value`` with every list made a ``Streamed`` array of its items, and the value ``json`` sees."""
    if isinstance(value, list):
        return Streamed(iter([_streamed(v) for v in value]))
    if isinstance(value, dict):
        return {k: _streamed(v) for k, v in value.items()}
    return value


@settings(max_examples=300, deadline=None)
@given(VALUES)
def test_streamed_arrays_are_written_as_the_lists_of_their_items(value) -> None:
    pieces: list[str] = []
    write(_streamed(value), pieces.append)
    assert "".join(pieces) == json.dumps(value, indent=2, ensure_ascii=False, default=str)
    assert dumps(_streamed(value)) == dumps(value)


def test_a_streamed_array_s_items_are_made_while_it_is_written() -> None:
    pieces: list[str] = []
    written_when_made: list[int] = []

    def entries():
        for i in range(3):
            written_when_made.append(len("".join(pieces)))
            yield {"id": i}

    write({"head": 1, "candidates": Streamed(entries()), "tail": Streamed(iter(()))}, pieces.append)
    text = "".join(pieces)
    assert json.loads(text) == {"head": 1, "candidates": [{"id": 0}, {"id": 1}, {"id": 2}], "tail": []}
    # each entry is made after the ones before it were written: none is held waiting for the rest
    assert written_when_made[0] < written_when_made[1] < written_when_made[2] < len(text)
    assert text[: written_when_made[2]].endswith('"id": 1\n    }')


def test_print_json_writes_a_large_value_in_pieces_with_the_same_text(capsys) -> None:
    from agentpack.cli.clikit import print_json

    value = {"rows": [{"i": i, "text": "x" * 100} for i in range(2000)]}  # about 300 KB: several pieces
    print_json({"rows": Streamed(iter(value["rows"]))})
    assert capsys.readouterr().out == json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _sortable(value) -> bool:
    """Whether ``json`` can sort ``value``'s keys (not when a mapping mixes key types)."""
    try:
        json.dumps(value, sort_keys=True, default=str)
    except TypeError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(VALUES.filter(_sortable))
def test_sorted_keys_give_the_text_of_json_dumps_sorted(value) -> None:
    chunks: list[str] = []
    write_chunks(_streamed(value), chunks.append, sort_keys=True, size=7)
    assert "".join(chunks) == json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=True)
