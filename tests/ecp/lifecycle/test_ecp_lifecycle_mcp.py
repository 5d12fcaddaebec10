"""The ECP-MCP tools: handlers directly, through the official SDK in-process, and over real
``agentpack mcp serve`` subprocesses (stdio and Streamable HTTP)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from agentpack.io.errors import AgentpackError
from agentpack.io.proc import kill_group, spawn
from agentpack.kernel.host import Host
from agentpack.kernel.plugins import create_plugin_manager, set_host
from agentpack.kernel.registry import McpContext
from agentpack.testing import run_cli
from agentpack_ecp.index.build import build_pack
from agentpack_ecp.mcp import register_tools

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))
NAMES = ["expert_query", "expert_refresh", "expert_run_evals", "expert_status"]


@pytest.fixture
def ecp_host(monkeypatch):
    """A host with only the ECP plugin (other plugins of the tree are not under test here)."""
    monkeypatch.setenv("AGENTPACK_PLUGINS", "ecp")
    host = Host(create_plugin_manager())
    previous = set_host(host)
    yield host
    set_host(previous)


@pytest.fixture
def built(tmp_path: Path, make_pack) -> Path:
    pack = make_pack(tmp_path, logs={"enabled": True})
    build_pack(pack)
    return pack


def tools_for(*packs: Path) -> dict:
    found = {}
    register_tools(lambda tool: found.setdefault(tool.name, tool), McpContext(packs=list(packs)))
    return found


def strip_times(value):
    if isinstance(value, dict):
        return {k: strip_times(v) for k, v in value.items() if k not in ("retrieved_at", "checked_at", "age_seconds")}
    if isinstance(value, list):
        return [strip_times(v) for v in value]
    return value


def test_registration(built: Path, tmp_path: Path) -> None:
    assert tools_for() == {} and tools_for(tmp_path) == {}
    tools = tools_for(built)
    assert sorted(tools) == NAMES
    assert tools["expert_query"].input_schema["required"] == ["question"]
    assert "pack" not in tools["expert_query"].input_schema["properties"]
    assert sorted(tools_for(built, built / "SKILL.md")) == NAMES  # the same pack twice is served once
    assert "pack" not in tools_for(built, built / "SKILL.md")["expert_status"].input_schema["properties"]


def test_query_handler_matches_the_cli(ecp_host, built: Path) -> None:
    tool = tools_for(built)["expert_query"]
    response = tool.handler({"question": "How are signing keys rotated?", "top_k": 3})
    cli = run_cli(["query", built, "How are signing keys rotated?", "-k", "3", "--json"]).json()["response"]
    assert strip_times(response) == strip_times(cli)
    assert {"answer", "as_of", "citations", "chunks", "synthesis"} <= set(response)
    filtered = tool.handler({"question": "setup", "filters": {"path_prefix": ["guide/"]}})
    assert all(c["artifact_path"].startswith("guide/") for c in filtered["citations"])
    logs = list((built / "expert/logs/queries").glob("*.jsonl"))
    records = [json.loads(line) for line in logs[0].read_text().splitlines()]
    assert next(r["actor"] for r in records) == "service:mcp"
    assert "signing keys" not in logs[0].read_text()


def test_query_explain_matches_the_cli_option(ecp_host, built: Path) -> None:
    tool = tools_for(built)["expert_query"]
    assert tool.input_schema["properties"]["explain"]["type"] == "boolean"
    response = tool.handler({"question": "How are signing keys rotated?", "top_k": 3, "explain": True})
    argv = ["query", built, "How are signing keys rotated?", "-k", "3", "--option", "explain=true", "--json"]
    cli = run_cli(argv).json()["response"]
    assert strip_times(response) == strip_times(cli)
    assert all({"role", "file_chunk", "final"} <= set(c["explain"]) for c in response["chunks"])
    assert all("explain" not in c for c in tool.handler({"question": "signing keys"})["chunks"])


def test_query_as_of_must_be_the_published_state(built: Path) -> None:
    tool = tools_for(built)["expert_query"]
    current = tool.handler({"question": "keys"})["as_of"]
    assert tool.handler({"question": "keys", "as_of": current})["answer"]
    with pytest.raises(AgentpackError, match="only the published state is served"):
        tool.handler({"question": "keys", "as_of": {"source_id": "docs", "revision": {"hash": "f" * 64}}})


def test_several_packs_need_a_pack_argument(tmp_path: Path, make_pack) -> None:
    a = make_pack(tmp_path / "a", name="alpha-expert")
    b = make_pack(tmp_path / "b", name="beta-expert")
    build_pack(a)
    build_pack(b)
    tools = tools_for(a, b)
    assert "pack" in tools["expert_status"].input_schema["properties"]
    with pytest.raises(AgentpackError, match="several packs"):
        tools["expert_status"].handler({})
    assert tools["expert_status"].handler({"pack": "beta-expert"})["skill"] == "beta-expert"
    with pytest.raises(AgentpackError, match="not served"):
        tools["expert_status"].handler({"pack": "gamma"})


def test_status_refresh_evals_handlers_match_the_cli(ecp_host, built: Path) -> None:
    tools = tools_for(built)
    status = tools["expert_status"].handler({})
    assert strip_times(status) == strip_times(run_cli(["ecp", "status", built, "--json"]).json())
    assert status["stale"] is False and status["sources"][0]["source_id"] == "docs"
    dry = tools["expert_refresh"].handler({"dry_run": True})
    assert dry["ok"] and dry["decision"] == "dry-run"
    evals = tools["expert_run_evals"].handler({"suite_id": ["smoke"]})
    cli = run_cli(["eval", built, "--suite", "smoke", "--json"]).json()
    assert evals["ok"] is True and evals["command"] == "eval"
    assert [s["id"] for s in evals["evaluations"][0]["suites"]] == [s["id"] for s in cli["evaluations"][0]["suites"]]
    with pytest.raises(AgentpackError, match="no eval suite"):
        tools["expert_run_evals"].handler({"suite_id": "nope"})


# -- through the official SDK ------------------------------------------------------------------
def test_sdk_client_in_process(ecp_host, built: Path) -> None:
    from mcp import Client  # here: the SDK costs collection about 0.4 s

    from agentpack.mcp.server import build_server

    server = build_server(ecp_host, McpContext(packs=[built]))
    (built / "expert/sources/docs/tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\n")

    async def main():
        async with Client(server) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            before = await client.call_tool("expert_query", {"question": "access tokens expire"})
            refreshed = await client.call_tool("expert_refresh", {})
            after = await client.call_tool("expert_query", {"question": "access tokens expire"})
            status = await client.call_tool("expert_status", {})
            bad = await client.call_tool("expert_query", {"question": ""})
            wrong = await client.call_tool(
                "expert_query", {"question": "x", "as_of": {"source_id": "docs", "revision": {"hash": "0"}}}
            )
            return listed, before, refreshed, after, status, bad, wrong

    listed, before, refreshed, after, status, bad, wrong = anyio.run(main)
    assert sorted(n for n in listed if n.startswith("expert_")) == NAMES
    assert listed["expert_query"].output_schema["required"] == ["answer", "as_of", "citations"]
    assert not before.is_error and "one hour" in before.structured_content["chunks"][0]["snippet"]
    assert json.loads(before.content[0].text) == before.structured_content
    assert refreshed.structured_content["decision"] == "published"
    assert "two hours" in after.structured_content["chunks"][0]["snippet"]
    assert status.structured_content["last_refresh"]["decision"] == "published"
    assert bad.is_error and "invalid arguments" in bad.content[0].text
    assert wrong.is_error and "only the published state" in wrong.content[0].text


def _env() -> dict[str, str]:
    return {**os.environ, "AGENTPACK_PLUGINS": "ecp"}


def test_stdio_subprocess(built: Path) -> None:
    from mcp import Client, StdioServerParameters  # here: the SDK costs collection about 0.4 s

    params = StdioServerParameters(command=AGENTPACK, args=["mcp", "serve", "--pack", str(built)], env=_env())

    async def main():
        async with Client(params, read_timeout_seconds=60) as client:
            names = sorted(t.name for t in (await client.list_tools()).tools)
            answer = await client.call_tool("expert_query", {"question": "How are signing keys rotated?"})
            status = await client.call_tool("expert_status", {})
            evals = await client.call_tool("expert_run_evals", {})
            return names, answer, status, evals

    names, answer, status, evals = anyio.run(main)
    assert names == NAMES
    assert "ninety" in answer.structured_content["answer"]
    assert answer.structured_content["citations"][0]["artifact_path"] == "keys.md"
    assert status.structured_content["ok"] and evals.structured_content["ok"] is True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_streamable_http_subprocess(built: Path) -> None:
    from mcp import Client  # here: the SDK costs collection about 0.4 s

    pytest.importorskip("uvicorn")
    port = _free_port()
    proc = spawn(
        [AGENTPACK, "mcp", "serve", "--transport", "streamable-http", "--port", str(port), "--pack", str(built)],
        env=_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(200):  # bounded: at most 20 s
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if proc.poll() is not None:
                pytest.fail(proc.stderr.read().decode())
            time.sleep(0.1)

        async def main():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await client.call_tool("expert_query", {"question": "How are signing keys rotated?"})

        result = anyio.run(main)
        assert not result.is_error and "ninety" in result.structured_content["answer"]
    finally:
        kill_group(proc)
        proc.stderr.close()
