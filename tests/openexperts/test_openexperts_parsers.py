"""Property tests for the small parsers: durations, payload paths, channel payloads, presets, lanes, queue."""

import base64
import json
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack_openexperts.dotpath import MISSING, PathSyntaxError, parse_path, resolve
from agentpack_openexperts.durations import DurationError, parse_duration
from agentpack_openexperts.runtime.events import gmail_enrich, lane_for, map_inputs, normalise_channel

UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@given(st.lists(st.tuples(st.integers(0, 10_000), st.sampled_from(sorted(UNITS))), min_size=1, max_size=4))
def test_duration_sums_its_parts(parts):
    text = "".join(f"{n}{u}" for n, u in parts)
    assert parse_duration(text) == pytest.approx(sum(n * UNITS[u] for n, u in parts))


@given(st.text(max_size=20))
def test_duration_never_crashes(text):
    try:
        assert parse_duration(text) >= 0
    except DurationError as exc:
        assert "expected a number and a unit" in str(exc)


@pytest.mark.parametrize("bad", ["", "5", "m", "5 m", "-5m", "5min", "1h 30m", None, 5])
def test_bad_durations(bad):
    with pytest.raises(DurationError):
        parse_duration(bad)


KEYS = st.text(alphabet=st.characters(blacklist_characters=".[]", blacklist_categories=("Cs",)), min_size=1, max_size=6)
TOKENS = st.lists(st.one_of(KEYS, st.integers(0, 3)), min_size=1, max_size=5).filter(lambda t: isinstance(t[0], str))


def build(tokens, leaf):
    value = leaf
    for token in reversed(tokens):
        value = [None] * token + [value] if isinstance(token, int) else {token: value}
    return value


def render(tokens):
    out = ""
    for token in tokens:
        out += f"[{token}]" if isinstance(token, int) else (f".{token}" if out else token)
    return out


@given(TOKENS, st.integers())
def test_paths_parse_and_resolve(tokens, leaf):
    path = render(tokens)
    assert parse_path(path) == tokens
    assert resolve(build(tokens, leaf), path) == leaf


@given(TOKENS)
def test_missing_paths_resolve_to_missing(tokens):
    assert resolve({}, render(tokens)) is MISSING


@given(st.text(max_size=15))
def test_path_parser_never_crashes(text):
    try:
        tokens = parse_path(text)
    except PathSyntaxError:
        return
    assert tokens


def test_path_examples():
    payload = {"messages": [{"id": "m-1", "to": [{"a": 1}, {"a": 2}]}], "[": 0}
    assert resolve(payload, "messages[0].id") == "m-1"
    assert resolve(payload, "messages[0].to[1].a") == 2
    assert resolve(payload, "messages[1].id") is MISSING
    assert resolve([{"x": 1}], "[0].x") == 1
    for bad in ("a..b", ".a", "a.", "a[x]", "a.[0]", "a[0", "a]"):
        with pytest.raises(PathSyntaxError):
            parse_path(bad)


@given(st.text(min_size=1, max_size=10), st.text(max_size=30), st.sampled_from(["plain", "slack", "telegram"]))
def test_channel_payloads_normalise(sender, text, shape):
    raw = {
        "plain": {"sender_id": sender, "message_text": text},
        "slack": {"event": {"user": sender, "text": text}},
        "telegram": {"message": {"from": {"id": sender}, "text": text}},
    }[shape]
    message = normalise_channel("chan", raw)
    assert message == {"sender_id": sender, "message_text": text, "channel_name": "chan", "raw": raw}


def test_channel_payload_errors():
    for raw in ([], {"text": "no sender"}, {"sender_id": "a"}):
        with pytest.raises(ValueError):
            normalise_channel("c", raw)


def test_gmail_preset_shapes():
    listed = gmail_enrich({"messages": [{"id": "m1", "threadId": "t1", "from": "Bo <BO@x.org>"}]})
    assert (listed["message_id"], listed["thread_id"], listed["sender_email"], listed["contact_id"]) == (
        "m1",
        "t1",
        "bo@x.org",
        "bo@x.org",
    )
    data = base64.b64encode(json.dumps({"emailAddress": "Me@x.org", "historyId": 9}).encode()).decode()
    push = gmail_enrich({"message": {"data": data, "messageId": "p1"}})
    assert (push["message_id"], push["history_id"], push["contact_id"]) == ("p1", 9, "me@x.org")
    assert gmail_enrich({"messages": [], "contact_id": "keep"})["contact_id"] == "keep"
    assert gmail_enrich("not a dict") == "not a dict"
    for hostile in (b"[" * 5000 + b"]" * 5000, b'{"historyId": NaN}', b"\xff"):  # a push body is not ours
        pushed = gmail_enrich({"message": {"data": base64.b64encode(hostile).decode(), "messageId": "p2"}})
        assert pushed["message_id"] == "p2" and "history_id" not in pushed


def test_inputs_and_lanes():
    assert map_inputs({"a": 1}, None) == ({"a": 1}, [])
    assert map_inputs([1], None) == ({"payload": [1]}, [])
    inputs, warnings = map_inputs({"m": [{"id": 3}]}, {"x": "m[0].id", "y": "nope"})
    assert inputs == {"x": 3} and "nope" in warnings[0]
    assert lane_for("t", "parallel", None, {}, "isolated") == (None, [])
    assert lane_for("t", "serial", None, {}, "isolated") == ("serial:t", [])
    assert lane_for("t", "serial_per_key", "k", {"k": 5}, "isolated") == ("key:t:5", [])
    lane, warnings = lane_for("t", "serial_per_key", "k", {}, "isolated")
    assert lane == "serial:t" and warnings
    assert lane_for("t", "parallel", None, {}, "main") == ("session:main", [])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.booleans()), min_size=1, max_size=40))
def test_queue_orders_each_lane(jobs):
    from agentpack_openexperts.runtime.queue import InProcessQueue, Job

    seen, lock = {}, threading.Lock()

    def handler(job):
        with lock:
            seen.setdefault(job.data["lane"], []).append(job.data["n"])

    queue = InProcessQueue(workers=3)
    queue.start(handler)
    try:
        for n, (key, keyed) in enumerate(jobs):
            lane = f"k{key}" if keyed else None
            queue.submit(Job(f"r{n}", {"lane": lane, "n": n}), lane)
        assert queue.join(10)
    finally:
        queue.stop()
    for lane, ns in seen.items():
        if lane is not None:
            assert ns == sorted(ns)
    assert sum(len(v) for v in seen.values()) == len(jobs)
