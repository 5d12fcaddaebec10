"""DNS rebinding and cross-site requests against agentpack's HTTP servers (issue 24): one mechanism,
``agentpack.io.hostcheck``, in front of the viewer, ``mcp serve`` and the openexperts server.

The servers run as real processes on real sockets; a rebinding page is a request whose ``Host`` is
the attacker's name (``evil.example``), a cross-site one carries a foreign ``Origin``.
"""

import os
import re
import socket
import subprocess
import sys

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentpack.io.hostcheck import HostGuard, split_host
from agentpack.io.netutil import is_loopback_host

from .conftest import seed, serving

PORT = 8123


# -- the rules ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bound", ["127.0.0.1", "::ffff:127.0.0.1", "localhost", "::1", "0.0.0.0", "::", "127.0.0.2"])
def test_a_rebinding_name_is_refused_on_every_bind_spelling(bound):
    guard = HostGuard.of(bound, PORT)
    for host in ("evil.example", f"evil.example:{PORT}", "localhost.evil.example", "EVIL.example", None, ""):
        assert guard.host_problem(host), (bound, host)
    for host in (f"localhost:{PORT}", "localhost", f"127.0.0.1:{PORT}", f"[::1]:{PORT}", "LOCALHOST."):
        assert guard.host_problem(host) is None, (bound, host)
    assert guard.host_problem(f"localhost:{PORT + 1}")  # another port


def test_an_address_bind_answers_to_its_own_address_in_any_spelling():
    guard = HostGuard.of("192.0.2.10", PORT, ["expert.example"])
    assert (
        guard.host_problem(f"192.0.2.10:{PORT}") is None and guard.host_problem(f"[::ffff:192.0.2.10]:{PORT}") is None
    )
    assert guard.host_problem(f"expert.example:{PORT}") is None
    assert guard.host_problem("localhost") and guard.host_problem("192.0.2.11")
    wildcard = HostGuard.of("0.0.0.0", PORT)
    assert wildcard.host_problem(f"192.0.2.11:{PORT}") is None  # an IP literal cannot be rebound
    assert wildcard.host_problem(f"{socket.gethostname()}:{PORT}") is None


@pytest.mark.parametrize("host", ["a:b:c", "[::1", "[::1]x", "h:99999999", "h:-1", "h:", ":80", "[]:80"])
def test_a_malformed_host_is_refused(host):
    assert split_host(host) is None and HostGuard.of("127.0.0.1", PORT).host_problem(host)


@given(st.text(max_size=40))
def test_property_any_host_header_is_parsed_or_refused_never_raises(text):
    guard = HostGuard.of("0.0.0.0", PORT)
    assert guard.host_problem(text) is None or isinstance(guard.host_problem(text), str)


def test_origin_is_checked_on_everything_but_get():
    guard = HostGuard.of("127.0.0.1", PORT)
    host = {"host": f"127.0.0.1:{PORT}", "origin": "http://evil.example"}
    assert guard.problem("GET", host) is None and guard.problem("POST", host)[0] == 403
    assert guard.problem("GET", host, origin_on_safe=True)[0] == 403
    same = {"host": f"localhost:{PORT}", "origin": f"http://localhost:{PORT}"}
    assert guard.problem("POST", same) is None
    assert guard.problem("DELETE", {**same, "origin": f"http://localhost:{PORT + 1}"})[0] == 403


def test_an_ipv4_mapped_loopback_address_is_loopback():
    assert is_loopback_host("::ffff:127.0.0.1") and not is_loopback_host("::ffff:192.0.2.1")


# -- the viewer ---------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    with serving(seed(tmp_path_factory.mktemp("viewer"))) as url:
        yield url


def test_a_rebinding_page_cannot_read_the_viewer(viewer):
    port = int(re.search(r":(\d+)/", viewer).group(1))
    for path in ("", "api/runs", "runs/3"):
        refused = httpx.get(viewer + path, headers={"Host": f"evil.example:{port}"}, timeout=10)
        assert refused.status_code == 400 and "not a name of this server" in refused.json()["error"]
        assert "data-run" not in refused.text and "smoke" not in refused.text
    assert httpx.get(viewer + "api/runs", headers={"Host": f"localhost:{port}"}, timeout=10).status_code == 200
    foreign = httpx.post(viewer + "api/runs", headers={"Origin": "http://evil.example"}, timeout=10)
    assert foreign.status_code == 403


# -- mcp serve over HTTP -----------------------------------------------------------------------------------------
MCP = [sys.executable, "-m", "agentpack", "mcp", "serve", "--transport", "streamable-http", "--port", "0"]
PING = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
JSON_SSE = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def mcp_server(*args, env=None):
    """Start ``mcp serve``; ``(process, url)``."""
    proc = subprocess.Popen([*MCP, *args], stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})
    line = proc.stderr.readline()
    assert "serving on http://" in line, line + (proc.stderr.read() if proc.poll() is not None else "")
    return proc, line.split("serving on ", 1)[1].strip()


def stop(proc):
    proc.terminate()
    proc.wait(timeout=10)
    proc.stderr.close()


def test_mcp_refuses_a_non_loopback_bind_without_a_token():
    env = {k: v for k, v in os.environ.items() if k != "AGENTPACK_MCP_TOKEN"}
    done = subprocess.run([*MCP, "--host", "0.0.0.0"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and "without a token" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("bound", ["::ffff:127.0.0.1", "0.0.0.0"])
def test_mcp_checks_host_and_origin_on_every_bind_spelling(bound, tmp_path):
    if ":" in bound and not socket.has_ipv6:
        pytest.skip("no IPv6 sockets here")
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    proc, url = mcp_server("--host", bound, "--token-file", str(token))
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    local = f"http://127.0.0.1:{port}/mcp"
    bearer = {**JSON_SSE, "authorization": "Bearer s3cret-token"}
    try:
        rebound = httpx.post(local, json=PING, headers={**bearer, "host": f"evil.example:{port}"}, timeout=10)
        assert rebound.status_code == 400 and "not a name of this server" in rebound.json()["error"]
        foreign = httpx.post(local, json=PING, headers={**bearer, "origin": "http://evil.example"}, timeout=10)
        assert foreign.status_code == 403
        assert httpx.post(local, json=PING, headers=bearer, timeout=10).status_code == 200
    finally:
        stop(proc)
