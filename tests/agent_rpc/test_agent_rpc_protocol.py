"""The wire contract: result validation agrees with the bundled schemas; SSE parsing ignores chunking."""

from __future__ import annotations

import json

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from agentpack_agent_rpc.protocol import AgentRpcError, ProtocolError, negotiate, parse_step_result, unwrap
from agentpack_agent_rpc.schema_store import AGENT_RESULT, store
from agentpack_agent_rpc.sse import SseParser

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5), st.floats(allow_nan=False))
values = st.recursive(
    scalars,
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=4), c, max_size=3)),
    max_leaves=6,
)
tool_calls = st.one_of(
    st.none(),
    values,
    st.lists(
        st.one_of(
            values,
            st.fixed_dictionaries(
                {"name": st.one_of(st.text(max_size=4), values)}, optional={"arguments": st.one_of(st.none(), values)}
            ),
        ),
        max_size=3,
    ),
)
results = st.fixed_dictionaries(
    {},
    optional={
        "status": st.one_of(st.sampled_from(["done", "paused", "finished"]), values),
        "public_output": st.one_of(st.none(), st.text(max_size=5), values),
        "evaluation_context": st.one_of(st.none(), st.text(max_size=5)),
        "private_thought": st.one_of(st.none(), st.text(max_size=5), values),
        "logs": st.one_of(st.none(), st.text(max_size=5)),
        "tool_calls": tool_calls,
        "usage": st.one_of(
            st.none(),
            values,
            st.fixed_dictionaries(
                {},
                optional={
                    "input_tokens": st.one_of(st.integers(-2, 5), st.booleans(), st.none()),
                    "total_tokens": values,
                },
            ),
        ),
    },
)


@settings(max_examples=300, deadline=None)
@given(results)
@example({"public_output": None, "status": "done", "usage": {"total_tokens": 0.0}})  # found by hypothesis
def test_hand_written_validation_agrees_with_the_schema(result):
    schema_ok = store().is_valid(AGENT_RESULT, result)
    try:
        parse_step_result(result)
        ours = True
    except ProtocolError:
        ours = False
    assert ours == schema_ok, json.dumps(result, default=str)


def test_alias_is_mirrored_both_ways():
    a = parse_step_result({"status": "done", "private_thought": "t"})
    b = parse_step_result({"status": "done", "evaluation_context": "c"})
    assert (a.evaluation_context, a.private_thought, b.private_thought) == ("t", "t", "c")


@pytest.mark.parametrize(
    "result,message",
    [
        ([], "agent/step result must be an object, got array"),
        (
            {"status": "done", "tool_calls": [{"name": ""}]},
            "agent/step result.tool_calls[0].name must be a non-empty string, got ''",
        ),
        (
            {"status": "done", "tool_calls": [{"name": "a", "arguments": [1]}]},
            "agent/step result.tool_calls[0].arguments must be an object, got array",
        ),
        (
            {"status": "done", "usage": {"input_tokens": -1}},
            "agent/step result.usage.input_tokens must be a non-negative integer, got -1",
        ),
        ({"status": "done", "logs": 5}, "agent/step result.logs must be a string or null, got integer"),
    ],
)
def test_precise_messages(result, message):
    with pytest.raises(ProtocolError) as info:
        parse_step_result(result)
    assert str(info.value) == message


def test_envelopes_and_versions():
    assert unwrap({"jsonrpc": "2.0", "id": 4, "result": True}, "agent/reset", 4) is True
    with pytest.raises(AgentRpcError, match="agent returned error -32601: nope"):
        unwrap({"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "nope"}}, "m", 4)
    with pytest.raises(ProtocolError, match="id mismatch: expected 4, got True"):
        unwrap({"jsonrpc": "2.0", "id": True, "result": 1}, "m", 4)
    with pytest.raises(ProtocolError, match=r'must have "jsonrpc": "2\.0"'):
        unwrap({"id": 4, "result": 1}, "m", 4)
    assert negotiate(None) == ("0.1", True) and negotiate("1.7") == ("1.0", False)
    with pytest.raises(ProtocolError, match="major versions differ"):
        negotiate("2.0")


def _events(stream: bytes, cuts: list[int]) -> list[tuple]:
    parser = SseParser()
    found = []
    last = 0
    for cut in [*sorted(set(c for c in cuts if 0 < c < len(stream))), len(stream)]:
        found += parser.feed(stream[last:cut])
        last = cut
    parser.close()
    return [(e.event, e.data, e.id) for e in found]


lines = st.lists(
    st.one_of(
        st.builds(
            lambda t: f"data: {t}",
            st.text(alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\r\n"), max_size=8),
        ),
        st.sampled_from(["", ": comment", "event: message", "event: progress", "id: 7", "data:x", "retry: 10", "data"]),
    ),
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(lines, st.sampled_from(["\n", "\r\n", "\r"]), st.lists(st.integers(0, 200), max_size=8))
def test_sse_events_do_not_depend_on_chunking(body, newline, cuts):
    stream = (newline.join(body) + newline + newline).encode("utf-8")
    assert _events(stream, cuts) == _events(stream, [])


def test_sse_parsing_rules():
    stream = '\ufeff: hi\r\nevent: message\ndata: {"a":\ndata:  1}\nid: 9\n\ndata: tail-without-blank-line'
    assert _events(stream.encode(), [1, 2, 3, 5]) == [("message", '{"a":\n 1}', "9")]
    assert _events("data: é\n\n".encode(), [7]) == [("message", "é", None)]


def test_bundled_schemas_are_valid_draft_2020_12():
    from jsonschema import Draft202012Validator

    for schema_id in store().ids():
        Draft202012Validator.check_schema(store().schema(schema_id))
    assert len(store().ids()) == 4


junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 3),
    st.floats(-1, 2, allow_nan=False),
    st.sampled_from(["", " ", "x", "v1", "reset", "contains", "regex", "csv", "text_match"]),
    st.just([]),
    st.just({}),
)
text = st.sampled_from(["a", "hello", "x y"])
field = st.sampled_from(["public_output", "evaluation_context", "private_thought"])
graders = st.one_of(
    st.fixed_dictionaries(
        {
            "type": st.just("text_match"),
            "condition": st.sampled_from(["contains", "equals", "does_not_contain"]),
            "value": text,
        },
        optional={"field": field, "case_sensitive": st.booleans()},
    ),
    st.fixed_dictionaries(
        {"type": st.just("text_match"), "condition": st.sampled_from(["regex", "not_regex"]), "pattern": st.just("a+")},
        optional={"name": text},
    ),
    st.fixed_dictionaries(
        {"type": st.just("tool_usage")},
        optional={
            "tool_name": text,
            "arguments": st.just({"k": [1, {"a": None}]}),
            "not_called": st.booleans(),
            "min_count": st.integers(0, 3),
            "sequence": st.lists(
                st.one_of(text, st.fixed_dictionaries({"name": text}, optional={"arguments": st.just({})})),
                min_size=1,
                max_size=2,
            ),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.just("llm_judge"), "prompt": text},
        optional={"model": text, "temperature": st.floats(0, 2), "field": field},
    ),
    st.fixed_dictionaries({"type": st.just("plugin_grader")}, optional={"anything": junk}),
)
steps = st.fixed_dictionaries(
    {"input": text},
    optional={
        "graders": st.lists(graders, max_size=3),
        "timeout": st.floats(0.1, 5),
        "expect_status": st.sampled_from(["done", "paused"]),
        "constraints": st.just({"k": 1}),
    },
)
scenarios = st.fixed_dictionaries(
    {"name": text, "steps": st.lists(steps, max_size=3)},
    optional={
        "tags": st.lists(text, max_size=2, unique=True),
        "repeat": st.integers(1, 3),
        "pass_threshold": st.floats(0, 1),
        "retries": st.integers(0, 3),
        "skip": st.one_of(st.booleans(), text),
        "dataset": st.fixed_dictionaries({"type": st.sampled_from(["csv", "jsonl"]), "source": text}),
    },
)
valid_manifests = st.fixed_dictionaries(
    {
        "name": text,
        "target": st.one_of(text, st.lists(text, min_size=1, max_size=2), st.just("http://h:1/ecp")),
        "scenarios": st.lists(scenarios, min_size=1, max_size=3),
    },
    optional={
        "manifest_version": st.just("v1"),
        "isolation": st.sampled_from(["reset", "process"]),
        "timeout": st.integers(1, 30),
        "env": st.dictionaries(text, st.one_of(text, st.integers(), st.booleans()), max_size=2),
        "judge": st.fixed_dictionaries(
            {}, optional={"model": text, "temperature": st.floats(0, 2), "base_url": st.just("http://127.0.0.1:1/v1")}
        ),
        "limits": st.fixed_dictionaries({}, optional={"max_message_bytes": st.integers(1024, 10**6)}),
    },
)


def _mutate(data, draw):
    """Replace, drop or add one thing somewhere in ``data``."""
    if isinstance(data, dict) and data and draw(st.integers(0, 3)):
        key = draw(st.sampled_from(sorted(data)))
        return {**data, key: _mutate(data[key], draw)}
    if isinstance(data, list) and data and draw(st.integers(0, 3)):
        index = draw(st.integers(0, len(data) - 1))
        return [*data[:index], _mutate(data[index], draw), *data[index + 1 :]]
    choice = draw(st.integers(0, 2))
    if choice == 0 and isinstance(data, dict) and data:
        key = draw(st.sampled_from(sorted(data)))
        return {k: v for k, v in data.items() if k != key}
    if choice == 1 and isinstance(data, dict):
        return {**data, draw(st.sampled_from(["extra", "type", "name", "value", "pattern"])): draw(junk)}
    return draw(junk)


manifest_st = st.one_of(
    valid_manifests,
    st.builds(lambda pair: pair, st.data()).flatmap(lambda data: valid_manifests.map(lambda m: _mutate(m, data.draw))),
)


@settings(max_examples=250, deadline=None)
@given(manifest_st)
def test_fast_check_agrees_with_jsonschema_on_manifests(manifest):
    from unittest import mock

    from agentpack.io.quickschema import is_valid
    from agentpack_agent_rpc import schema_store
    from agentpack_agent_rpc.manifest.loader import _fast_valid
    from agentpack_agent_rpc.schema_store import MANIFEST, bundled

    verdict = is_valid(bundled("manifest.json"), manifest)
    assert verdict is not None, "the quick check must decide every manifest (no jsonschema on the run path)"
    assert verdict == store().is_valid(MANIFEST, manifest)
    with mock.patch.object(schema_store, "store", None):  # the split check (skeleton, graders by type) decides alone
        assert _fast_valid(manifest) == verdict


def test_a_carriage_return_at_the_end_of_the_stream_completes_the_event():
    parser = SseParser()
    assert parser.feed(b"data: done\n\r") == []  # the \r may be the start of \r\n
    assert [e.data for e in parser.close()] == ["done"]
    parser = SseParser()
    assert parser.feed(b"data: cut off\n") == [] and parser.close() == []  # no blank line: discarded
