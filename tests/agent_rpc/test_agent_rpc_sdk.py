"""The agent SDK: stays light to import, dispatches JSON-RPC correctly, serves stdio."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import agentpack.agents as sdk


def test_import_pulls_in_only_the_standard_library():
    """No third-party module and no other agentpack module: only the SDK, its package and json (and the
    ``typing`` the ``agentpack`` package imports for its annotations)."""
    code = (
        "import sys; before = set(sys.modules); import agentpack.agents; "
        "print(' '.join(sorted(set(sys.modules) - before)))"
    )
    added = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    ours = {"agentpack", "agentpack.agents", "agentpack.agents.agent", "agentpack.agents.wire"}
    assert {"json", "agentpack.agents.agent"} <= set(added)
    assert [m for m in added if m not in ours and m.split(".")[0] not in sys.stdlib_module_names] == []
    assert {m.split(".")[0] for m in added if m not in ours} <= {"json", "_json", "typing", "_typing", "collections"}


def make_agent() -> sdk.Agent:
    agent = sdk.Agent("unit", capabilities={"tool_calls": {}})
    seen = []

    @agent.initialize
    def init(config):
        seen.append(config)
        return {"description": "unit agent"}

    @agent.step
    def step(text):
        print("this goes to stderr, not the protocol stream")
        if text == "dict":
            return {"status": "done", "public_output": "raw"}
        if text == "none":
            return None
        if text == "rpc":
            raise sdk.RpcError(-32050, "custom")
        return sdk.Result(public_output=text.upper(), private_thought="legacy", logs="l", usage={"input_tokens": 1})

    agent.seen = seen
    return agent


def test_dispatch_rules():
    agent = make_agent()
    init = agent.handle(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "agent/initialize",
            "params": {"protocol_version": "1.3", "config": {"k": 1}},
        }
    )
    assert init["result"] == {
        "name": "unit",
        "protocol_version": "1.0",
        "capabilities": {"tool_calls": {}},
        "description": "unit agent",
    }
    assert agent.seen == [{"k": 1}]
    bad = agent.handle({"jsonrpc": "2.0", "id": 2, "method": "agent/initialize", "params": {"protocol_version": "2.0"}})
    assert bad["error"]["code"] == sdk.VERSION_UNSUPPORTED
    step = agent.handle({"jsonrpc": "2.0", "id": 3, "method": "agent/step", "params": {"input": "hi"}})["result"]
    assert step == {
        "status": "done",
        "public_output": "HI",
        "evaluation_context": "legacy",
        "private_thought": "legacy",
        "tool_calls": None,
        "logs": "l",
        "usage": {"input_tokens": 1},
    }
    assert (
        agent.handle({"jsonrpc": "2.0", "id": 4, "method": "agent/step", "params": {"input": "none"}})["result"][
            "public_output"
        ]
        is None
    )
    assert agent.handle({"jsonrpc": "2.0", "id": 5, "method": "agent/step", "params": {"input": "rpc"}})["error"] == {
        "code": -32050,
        "message": "custom",
    }
    assert (
        agent.handle({"jsonrpc": "2.0", "id": 6, "method": "agent/step", "params": {"input": 3}})["error"]["code"]
        == sdk.INVALID_PARAMS
    )
    assert agent.handle({"jsonrpc": "2.0", "id": 7, "method": "agent/reset"})["result"] is True
    assert agent.handle({"jsonrpc": "2.0", "id": 8, "method": "nope"})["error"]["code"] == sdk.METHOD_NOT_FOUND
    assert agent.handle({"jsonrpc": "2.0", "method": "nope"}) is None
    assert agent.handle({"id": 9, "method": "agent/reset"})["error"]["code"] == sdk.INVALID_REQUEST
    assert agent.handle([1])["error"]["code"] == sdk.INVALID_REQUEST


def test_serve_stdio_keeps_the_stream_clean(capsys):
    agent = make_agent()
    lines = [
        json.dumps({"jsonrpc": "2.0", "id": 1, "method": "agent/step", "params": {"input": "x"}}),
        "",
        "{oops",
        json.dumps({"jsonrpc": "2.0", "method": "agent/reset"}),
        json.dumps({"jsonrpc": "2.0", "id": 2, "method": "agent/step", "params": {"input": "dict"}}),
    ]
    out = io.BytesIO()
    agent.serve_stdio(io.BytesIO(("\n".join(lines) + "\n").encode()), out)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [a.get("id") for a in answers] == [1, None, 2]
    assert answers[1]["error"]["code"] == sdk.PARSE_ERROR and answers[2]["result"]["public_output"] == "raw"
    assert "this goes to stderr" in capsys.readouterr().err


def test_module_level_decorators_use_the_default_agent(monkeypatch):
    monkeypatch.setattr(sdk, "default_agent", sdk.Agent())
    sdk.step(lambda text: f"<{text}>")
    sdk.default_agent.name = "default"
    answer = sdk.default_agent.handle({"jsonrpc": "2.0", "id": 1, "method": "agent/step", "params": {"input": "a"}})
    assert answer["result"]["public_output"] == "<a>"


def test_stdio_agent_process_is_conformant(agentpack_cli, agents):
    result = agentpack_cli("rpc", "conformance", f"{sys.executable} {agents / 'sdk_agent.py'}", "--json")
    assert result.exit_code == 0, result.stdout
    report = result.json()
    assert report["conformant"] and report["failed"] == 0 and report["transport"] == "stdio"


def test_conformance_flags_a_broken_agent(agentpack_cli, agents, tmp_path):
    result = agentpack_cli(
        "rpc",
        "conformance",
        f"{sys.executable} {agents / 'bad_agent.py'} bad_result",
        "--json-out",
        tmp_path / "c.json",
    )
    report = json.loads((tmp_path / "c.json").read_text())
    failed = {c["name"] for c in report["checks"] if not c["passed"]}
    assert "unknown method is an error" in failed and not report["conformant"] and result.exit_code == 1
    missing = agentpack_cli("rpc", "conformance", "no-such-program-xyz")
    assert missing.exit_code == 2 and "cannot start agent" in missing.stdout
