"""The viewer's diffs: word level for text (never inside a word), structural for JSON."""

from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack.results.viewer.diff import MISSING, diff_block, json_changes, word_ops

WORDS = st.lists(st.sampled_from(["the", "order", "shipped", "Monday", "Tuesday", "42", ",", " ", "\n", "é"]))


@settings(deadline=None)  # a loaded machine is no counterexample
@given(WORDS.map("".join), WORDS.map("".join))
def test_word_ops_rebuild_both_sides(before, after):
    ops = word_ops(before, after)
    assert "".join(text for op, text in ops if op != "+") == before
    assert "".join(text for op, text in ops if op != "-") == after
    assert all(text for _, text in ops)


@settings(deadline=None)
@given(st.text(), st.text())
def test_word_ops_rebuild_any_text(before, after):
    ops = word_ops(before, after)
    assert "".join(text for op, text in ops if op != "+") == before
    assert "".join(text for op, text in ops if op != "-") == after


def test_a_change_is_whole_words_and_neighbouring_words_join():
    assert word_ops("shipped on Monday morning", "shipped on Tuesday morning") == [
        ("=", "shipped on "),
        ("-", "Monday"),
        ("+", "Tuesday"),
        ("=", " morning"),
    ]
    assert word_ops("Yes, it is in stock.", "Yes, three are in stock.")[1:3] == [("-", "it is"), ("+", "three are")]
    assert word_ops("release-channel-for-customers", "release-channel-for-partners")[-2:] == [
        ("-", "customers"),
        ("+", "partners"),
    ]


def test_json_changes_by_path():
    before = {"status": "shipped", "items": [1, 2], "same": {"a": 1}, "odd key": 1}
    after = {"status": "pending", "items": [1, 2, 3], "same": {"a": 1}, "new": True, "odd key": "1"}
    assert list(json_changes(before, after)) == [
        ("$.status", "shipped", "pending"),
        ("$.items[2]", MISSING, 3),
        ('$["odd key"]', 1, "1"),
        ("$.new", MISSING, True),
    ]
    assert list(json_changes([True], [1])) == [("$[0]", True, 1)]  # a type change is a change


def test_diff_block_picks_json_or_words_and_is_empty_when_equal():
    assert diff_block("same", "same") == "" and diff_block(None, "x") == ""
    assert diff_block({"a": 1}, '{"a": 1}') == ""  # a string that holds the same JSON
    assert 'class="json-diff"' in diff_block('{"a": 1}', {"a": 2})
    words = diff_block("a <b>", "a <i>")
    assert "<span>a &lt;</span><del>b</del><ins>i</ins><span>&gt;</span>" in words  # escaped, by word
