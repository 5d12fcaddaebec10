"""Property tests: no manifest and no agent reply makes the plugin crash (exit 0, 1 or 2; never 3, no traceback).

Manifests are a valid one with values replaced, removed or added at random
places (wrong types, huge integers, dates, binary, nesting); replies are
arbitrary JSON results and arbitrary bytes. Runs use an in-process agent so
hundreds of them take seconds.
"""

from __future__ import annotations

import copy
import datetime
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentpack.io.jsonio import JsonError
from agentpack.testing import run_cli
from agentpack_agent_rpc.api import validate_manifest
from agentpack_agent_rpc.manifest import model as manifest_module
from agentpack_agent_rpc.protocol import CallError, ProtocolError
from agentpack_agent_rpc.stdio import TailBuffer, parse_line

BASE: dict[str, Any] = {
    "manifest_version": "v1",
    "name": "fuzzed",
    "target": "python agent.py",
    "config": {"tone": "calm", "n": 1},
    "env": {"X": "1"},
    "timeout": 5,
    "scenario_timeout": 10,
    "retries": 1,
    "repeat": 2,
    "pass_threshold": 0.5,
    "isolation": "reset",
    "judge": {"model": "m", "temperature": 0.5},
    "limits": {"stderr_bytes": 100, "max_message_bytes": 2048, "report_text_chars": 200},
    "scenarios": [
        {
            "name": "a",
            "tags": ["t"],
            "timeout": 3,
            "steps": [
                {
                    "input": "x",
                    "timeout": 2,
                    "expect_status": "done",
                    "graders": [
                        {"type": "text_match", "condition": "contains", "value": "x"},
                        {"type": "text_match", "condition": "regex", "pattern": "x+", "field": "evaluation_context"},
                        {"type": "tool_usage", "tool_name": "t", "arguments": {"a": [1, {"b": 2}]}, "count": 1},
                        {"type": "tool_usage", "sequence": ["a", {"name": "b", "arguments": {}}]},
                    ],
                }
            ],
        },
        {"name": "b", "dataset": {"type": "csv", "source": "data.csv", "condition": "contains"}},
    ],
}

leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**300, max_value=10**400)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.dates()
    | st.binary(max_size=4)
)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from _paths(value, (*prefix, key))


PATHS = list(_paths(BASE))[1:]
mutations = st.lists(st.tuples(st.sampled_from(PATHS), values, st.sampled_from(["set", "drop", "add"])), max_size=4)


def mutate(changes: list[tuple[tuple, Any, str]]) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    for path, value, how in changes:
        node = data
        try:
            for key in path[:-1]:
                node = node[key]
            if how == "drop" and isinstance(node, dict):
                node.pop(path[-1], None)
            elif how == "add" and isinstance(node, dict):
                node[f"extra_{path[-1]}"] = value
            else:
                node[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    return data


def write(folder: Path, data: Any) -> Path:
    (folder / "data.csv").write_text("input,output\nq,a\n")
    path = folder / "manifest.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@FUZZ
@given(changes=mutations)
@example(changes=[(("timeout",), 10**400, "set")])  # would overflow float()
@example(changes=[(("config",), {"when": datetime.date(2001, 2, 3)}, "set")])  # not JSON
@example(changes=[(("scenarios", 0, "steps", 0, "graders", 2, "arguments"), {"b": b"\x00"}, "set")])
def test_any_manifest_gives_findings_never_an_exception(tmp_path, changes):
    path = write(tmp_path, mutate(changes))
    manifest, findings = validate_manifest(path)
    errors = [f for f in findings if f.severity == "error"]
    assert (manifest is None) == bool(errors)
    for finding in errors:
        assert finding.file and (finding.line or finding.pointer is not None), finding


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300))
@example(text="timeout: .nan\nname: x\ntarget: a\nscenarios: [{name: a, steps: [{input: x}]}]\n")
@example(text="[" * 5000)
def test_any_text_gives_findings_never_an_exception(tmp_path, text):
    path = tmp_path / "manifest.yaml"
    path.write_text(text)
    manifest, findings = validate_manifest(path)
    assert manifest is not None or findings


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=mutations)
def test_rpc_validate_exits_0_or_1(tmp_path, changes):
    result = run_cli(["rpc", "validate", str(write(tmp_path, mutate(changes))), "--portable"])
    assert result.exit_code in (0, 1), result.stdout + result.stderr


class FakeAgent:
    """An in-process stdio transport: answers initialize and reset, and each step with ``reply(params)``."""

    kind = "stdio"
    pid = None
    scope = None

    def __init__(self, reply: Any) -> None:
        self.reply = reply
        self.stderr = TailBuffer(1024)
        self.warnings: list[str] = []
        self.broken = False
        self.spin = False

    def call(self, data: bytes, request_id: int, deadline: float) -> Any:
        message = json.loads(data)
        method = message["method"]
        if method == "agent/initialize":
            result: Any = {"name": "fake", "protocol_version": "1.0", "capabilities": {"tool_calls": {}}}
        elif method == "agent/reset":
            result = True
        else:
            return self.reply(request_id)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def kill(self) -> None:
        self.broken = True

    def end_input(self) -> None:
        pass

    def close(self, grace: float = 0.5) -> None:
        pass


@contextmanager
def agent_replying(reply: Any) -> Iterator[None]:
    original = manifest_module.Target.open
    manifest_module.Target.open = lambda self, scope=None: FakeAgent(reply)  # type: ignore[method-assign]
    try:
        yield
    finally:
        manifest_module.Target.open = original  # type: ignore[method-assign]


def rpc_run(path: Path) -> int:
    out = path.parent / "out.json"
    result = run_cli(["rpc", "run", "-m", str(path), "--json-out", str(out)])
    assert result.exit_code in (0, 1, 2), result.stdout + result.stderr
    if result.exit_code != 2:
        json.loads(out.read_text())
    return result.exit_code


@FUZZ
@given(changes=mutations)
@example(changes=[(("config",), {"when": datetime.date(2001, 2, 3)}, "set")])  # was a TypeError
@example(changes=[(("scenarios", 0, "steps", 0, "timeout"), 1e300, "set")])  # was an OverflowError in poll()
def test_rpc_run_of_any_manifest_exits_0_1_or_2(tmp_path, changes):
    def reply(request_id: int) -> Any:
        result = {"status": "done", "public_output": "x", "tool_calls": [{"name": "t", "arguments": {"a": [1]}}]}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    data = mutate(changes)
    data["target"] = "fake-agent"  # the run's agent is FakeAgent, whatever the mutation did to the target
    with agent_replying(reply):
        rpc_run(write(tmp_path, data))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
step_results = st.fixed_dictionaries(
    {},
    optional={
        "status": st.sampled_from(["done", "paused", "finished"]) | json_values,
        "public_output": st.text(max_size=20) | json_values,
        "evaluation_context": st.text(max_size=20) | json_values,
        "private_thought": json_values,
        "tool_calls": st.lists(
            st.fixed_dictionaries({"name": st.text(max_size=5) | json_values}, optional={"arguments": json_values})
            | json_values,
            max_size=3,
        )
        | json_values,
        "usage": st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "total_tokens"]), json_values)
        | json_values,
        "logs": json_values,
    },
)
envelopes = st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0"]) | json_values},
    optional={"result": step_results | json_values, "error": json_values, "id": json_values},
)


@FUZZ
@given(envelope=envelopes)
@example(envelope={"jsonrpc": "2.0", "result": {"status": "done", "usage": {"input_tokens": 10**400}}})
def test_rpc_run_with_any_reply_exits_0_1_or_2(tmp_path, envelope):
    path = write(tmp_path, {**copy.deepcopy(BASE), "target": "fake-agent"})

    def reply(request_id: int) -> Any:
        return {"id": request_id, **envelope}

    with agent_replying(reply):
        assert rpc_run(path) in (0, 1)


@settings(max_examples=300, deadline=None)
@given(line=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
@example(line=b'{"jsonrpc": "2.0", "id": 1, "result": ' + b"[" * 5000 + b"]" * 5000 + b"}")
@example(line=b'{"jsonrpc": "2.0", "id": 1, "result": {"v": Infinity}}')
@example(line=b"\xef\xbb\xbf{}")
def test_a_reply_line_parses_or_is_refused_with_a_known_error(line):
    try:
        parse_line(line)
    except ProtocolError as exc:
        assert b'"jsonrpc"' in line and "not usable JSON" in str(exc)
    except JsonError:
        pass


@pytest.mark.parametrize("extra", [{}, {"id": "x"}])
def test_call_errors_are_the_only_errors_of_unwrap(extra):
    from agentpack_agent_rpc.protocol import parse_step_result, unwrap

    with pytest.raises(CallError):
        parse_step_result(unwrap({"jsonrpc": "2.0", "result": {"status": 3}, "id": 1, **extra}, "agent/step", 1))
