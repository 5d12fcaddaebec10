"""``agentpack ecp agent``: a pack served as an agent of the evaluation protocol, graded by ``agentpack rpc run``."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from agentpack_ecp.agent.expert import citation_line, expert_agent
from agentpack_ecp.pack.manifest import load_pack

from .conftest import REPO

BIN = Path(sys.executable).parent


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}


def _rpc(handle, method: str, params: dict | None = None, req_id: int = 1) -> dict:
    return handle({"jsonrpc": "2.0", "id": req_id, "method": method, "params": params or {}})


def test_step_answers_with_citations_and_retrieval(example_pack: Path) -> None:
    handle = expert_agent(load_pack(example_pack)).handle
    init = _rpc(handle, "agent/initialize", {"protocol_version": "1.3", "config": {"top_k": 2, "mode": "keyword"}})
    assert init["result"]["name"] == "conformance-pack"
    assert init["result"]["protocol_version"] == "1.0"
    assert set(init["result"]["capabilities"]) == {"tool_calls", "evaluation_context", "reset"}
    result = _rpc(handle, "agent/step", {"input": "How is the prediction cache invalidated?"}, 2)["result"]
    assert result["status"] == "done"
    assert "[1]" in result["public_output"]
    lines = result["evaluation_context"].splitlines()
    assert len(lines) == 2 and lines[0].startswith("[1] docs/caching.md:1-11 (source corpus, revision ")
    assert result["private_thought"] == result["evaluation_context"]
    # mode keyword: only the keyword index is searched, with the session's top_k
    assert [c["arguments"] for c in result["tool_calls"]] == [
        {
            "index_id": "corpus-keyword",
            "format": "keyword-index-v2",
            "question": "How is the prediction cache invalidated?",
            "top_k": 2,
        }
    ]
    assert result["tool_calls"][0]["name"] == "expert.search"
    assert result["tool_calls"][0]["result"]["status"] == "ok"
    assert _rpc(handle, "agent/reset", req_id=3)["result"] is True


def test_protocol_errors_keep_the_agent_serving(example_pack: Path) -> None:
    agent = expert_agent(load_pack(example_pack))
    handle = agent.handle
    assert _rpc(handle, "agent/initialize", {"protocol_version": "2.0"})["error"]["code"] == -32001
    assert _rpc(handle, "agent/initialize", {"protocol_version": "one"})["error"]["code"] == -32602
    assert _rpc(handle, "agent/step", {"input": 3})["error"]["code"] == -32602
    assert _rpc(handle, "agent/nope")["error"]["code"] == -32601
    assert handle({"jsonrpc": "2.0", "method": "agent/nope"}) is None  # a notification is never answered
    assert handle([1])["error"]["code"] == -32600
    writer = io.BytesIO()
    lines = b'not json\n\n{"jsonrpc":"2.0","id":7,"method":"agent/step","params":{"input":"datum"}}\n'
    agent.serve_stdio(io.BytesIO(lines), writer)
    first, second = (json.loads(line) for line in writer.getvalue().splitlines())
    assert first["error"]["code"] == -32700
    assert second["id"] == 7 and second["result"]["status"] == "done"


def test_citation_line_without_location() -> None:
    citation = {"source_id": "db", "uri": "sqlite:///x.db", "revision": {"query_hash": "abcdef0123456789"}}
    assert citation_line(4, citation) == "[4] sqlite:///x.db (source db, revision abcdef012345)"
    assert citation_line(1, {"source_id": "s", "artifact_path": "a.md"}) == "[1] a.md (source s)"


def test_rpc_run_grades_the_example_manifest(tmp_path: Path) -> None:
    """End to end: `agentpack rpc run` spawns `agentpack ecp agent` and grades it like any agent."""
    examples = tmp_path / "ecp"
    shutil.copytree(REPO / "examples" / "ecp", examples, ignore=shutil.ignore_patterns("logs", ".lifecycle"))
    proc = subprocess.run(
        [str(BIN / "agentpack"), "rpc", "run", "-m", str(examples / "agent-manifest.yaml"), "--json", "--no-record"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["ok"] and report["totals"]["passed"] == report["totals"]["scenarios"] == 3
    assert report["agent"]["name"] == "conformance-pack"
    assert not [w for w in report["warnings"] if "does not declare" in w]


def test_http_agent(example_pack: Path) -> None:
    agent = subprocess.Popen(
        [str(BIN / "agentpack"), "ecp", "agent", str(example_pack), "--http", "--port", "0", "-k", "1"],
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    try:
        assert agent.stderr is not None
        line = agent.stderr.readline()
        url = line.split("listening on ", 1)[1].strip()

        def post(message: dict, accept: str = "application/json") -> tuple[int, str, bytes]:
            request = urllib.request.Request(
                url, data=json.dumps(message).encode(), headers={"Accept": accept, "Content-Type": "application/json"}
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers["Content-Type"], response.read()

        status, ctype, body = post({"jsonrpc": "2.0", "id": 1, "method": "agent/step", "params": {"input": "datum"}})
        assert status == 200 and ctype == "application/json"
        assert json.loads(body)["result"]["evaluation_context"].count("\n") == 0  # -k 1: one citation
        status, ctype, body = post({"jsonrpc": "2.0", "id": 2, "method": "agent/reset"}, accept="text/event-stream")
        assert ctype == "text/event-stream" and body.startswith(b"event: message\ndata: ")
        assert post({"jsonrpc": "2.0", "method": "agent/reset"})[0] == 202
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(url, timeout=30)
        assert info.value.code == 405
        info.value.close()  # the error holds the response and its connection
    finally:
        agent.terminate()
        agent.wait(timeout=30)
        agent.stderr.close()


def test_port_in_use_is_one_line(example_pack: Path) -> None:
    from agentpack.io.netutil import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        busy = subprocess.run(
            [str(BIN / "agentpack"), "ecp", "agent", str(example_pack), "--http", "--port", str(port)],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
    finally:
        sock.close()
    assert busy.returncode == 2
    assert f"port {port} on 127.0.0.1 is already in use" in busy.stderr and "Traceback" not in busy.stderr
