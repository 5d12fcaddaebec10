"""The runtime's HTTP server tried as an attacker would: real uvicorn on 127.0.0.1, real sockets.

Each attack here succeeded against the old ``http.server`` implementation (one thread, no
authentication): a foreign-Origin or ``text/plain`` POST decided an approval, an idle connection
stalled every other request, ``Content-Length: abc`` and deeply nested JSON raised tracebacks.
"""

import http.client
import json
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentpack.io.errors import AgentpackError, MissingDependencyError
from agentpack.testing import run_cli
from agentpack_openexperts.runtime.serverconfig import ServerSettings
from agentpack_openexperts.runtime.webhooks import signature

SECRET = "webhook-secret-for-tests"
DEEP = b"[" * 5000 + b"]" * 5000


def ticket(ticket_id, customer="C-1"):
    return {"ticket": {"id": ticket_id, "customer_id": customer}}


def call(rt, method, path, body=None, *, token=None, headers=None, timeout=5.0):
    """One request on a fresh connection: ``(status, parsed JSON or raw bytes)``."""
    port = rt.server.port
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = body if body is None or isinstance(body, bytes) else json.dumps(body).encode()
    sent = {"Content-Type": "application/json"} if data is not None else {}
    if token:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    try:
        conn.request(method, path, data, sent)
        response = conn.getresponse()
        text = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(text)
    except ValueError:
        return response.status, text


def signed(body, secret=SECRET, delivery=None):
    data = json.dumps(body).encode()
    headers = {"X-Hub-Signature-256": signature(secret, data)}
    if delivery:
        headers["X-GitHub-Delivery"] = delivery
    return data, headers


def status_line(port, request, timeout=5.0):
    """Send raw bytes, return the response's status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(request)
        return sock.recv(4096).split(b"\r\n", 1)[0]


@pytest.fixture
def serve(make_runtime, acme, ledger, script):
    """``serve(**settings)``: the example package served with the HTTP broker and a secret for new_ticket."""

    def start(**settings):
        settings.setdefault("webhook_secrets", {"new_ticket": SECRET})
        rt = make_runtime(
            acme, tools=ledger.tools(), driver="scripted", driver_options={"script": script}, broker="http"
        )
        rt.start(http=True, server=ServerSettings(**settings))
        return rt

    return start


def pending_approval(rt):
    """Fire a ticket whose run waits for the approval of helpdesk.set_status; that request."""
    rt.fire("new_ticket", ticket("T-100"))
    deadline = time.monotonic() + 10
    while not rt.desk.pending() and time.monotonic() < deadline:
        time.sleep(0.02)
    return rt.desk.pending()[0]


# -- approvals: token, Origin, Host, Content-Type ------------------------------------------------------
def test_approvals_need_the_token(serve):
    rt = serve()
    token = rt.server.token.value
    request = pending_approval(rt)
    assert request.id.startswith("approval-") and len(request.id) >= len("approval-") + 22  # secrets, 128 bits
    assert call(rt, "GET", "/approvals")[0] == 401
    assert call(rt, "GET", "/approvals", token="x" * 43)[0] == 401
    assert call(rt, "POST", f"/approvals/{request.id}", {"approve": True})[0] == 401
    assert call(rt, "POST", f"/approvals/{request.id}", {"approve": True}, token=token + "x")[0] == 401
    assert call(rt, "POST", f"/approvals/{request.id}", {"approve": True}, headers={"Authorization": token})[0] == 401
    assert [r.id for r in rt.desk.pending()] == [request.id]  # still undecided
    status, body = call(rt, "GET", "/approvals", token=token)
    assert status == 200 and [p["id"] for p in body["pending"]] == [request.id]
    assert call(rt, "POST", f"/approvals/{request.id}", {"approve": True}, token=token) == (
        200,
        {"id": request.id, "approved": True},
    )


def test_cross_site_posts_are_refused(serve):
    rt = serve()
    token = rt.server.token.value
    request = pending_approval(rt)
    path = f"/approvals/{request.id}"
    evil = {"Origin": "http://evil.example"}
    assert call(rt, "POST", path, {"approve": True}, token=token, headers=evil)[0] == 403
    assert call(rt, "POST", path, {"approve": True}, token=token, headers={"Origin": "null"})[0] == 403
    plain = {"Content-Type": "text/plain"}  # what an HTML form can send cross-site without a preflight
    assert call(rt, "POST", path, b'{"approve": true}', headers={**plain, **evil})[0] == 403
    assert call(rt, "POST", path, b'{"approve": true}', headers=plain)[0] == 415  # a client that sends no Origin
    assert call(rt, "POST", path, b'{"approve": true}', token=token, headers=plain)[0] == 415
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    assert call(rt, "POST", "/hooks/new_ticket", b"a=b", headers=form)[0] == 415
    assert [r.id for r in rt.desk.pending()] == [request.id]
    same = {"Origin": f"http://127.0.0.1:{rt.server.port}"}
    assert call(rt, "POST", path, {"approve": False}, token=token, headers=same)[0] == 200


def test_a_foreign_host_name_is_refused(serve):
    """DNS rebinding: a page on evil.example resolved to 127.0.0.1 sends Host: evil.example."""
    rt = serve(allowed_hosts=("experts.internal",))
    token = rt.server.token.value
    port = rt.server.port
    assert call(rt, "GET", "/approvals", token=token, headers={"Host": f"evil.example:{port}"})[0] == 400
    assert call(rt, "POST", "/hooks/new_ticket", {}, headers={"Host": "evil.example"})[0] == 400
    for name in (f"localhost:{port}", f"127.0.0.1:{port}", "experts.internal", f"experts.internal:{port}"):
        assert call(rt, "GET", "/approvals", token=token, headers={"Host": name})[0] == 200, name
    assert call(rt, "GET", "/health", headers={"Host": "anything"})[0] == 200


# -- one slow client never stalls the others ---------------------------------------------------------
def test_an_idle_connection_does_not_stall_the_server(serve):
    rt = serve()
    token = rt.server.token.value
    request = pending_approval(rt)
    with socket.create_connection(("127.0.0.1", rt.server.port)) as idle:
        others = [socket.create_connection(("127.0.0.1", rt.server.port)) for _ in range(20)]
        try:
            # the old server answered nobody while one connection sat idle: these timed out
            assert call(rt, "GET", "/health")[0] == 200
            assert call(rt, "POST", f"/approvals/{request.id}", {"approve": True}, token=token)[0] == 200
            data, headers = signed(ticket("T-200"))
            assert call(rt, "POST", "/hooks/new_ticket", data, headers=headers)[0] == 202
        finally:
            for sock in others:
                sock.close()
        assert idle.fileno() >= 0


def test_slowloris_is_cut_off_and_does_not_block_others(serve):
    rt = serve(head_timeout=0.5)
    with socket.create_connection(("127.0.0.1", rt.server.port), timeout=10) as slow:
        slow.sendall(b"POST /hooks/new_ticket HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        closed = False
        deadline = time.monotonic() + 8
        while not closed and time.monotonic() < deadline:
            assert call(rt, "GET", "/health")[0] == 200  # others are served while the head trickles in
            try:
                slow.sendall(b"X")
                slow.settimeout(0.1)
                closed = slow.recv(1) == b""
            except TimeoutError:
                pass
            except OSError:  # reset by the server
                closed = True
        assert closed, "the server kept a connection whose request head never completed"


def test_a_slow_body_times_out(serve):
    rt = serve(body_timeout=0.5)
    with socket.create_connection(("127.0.0.1", rt.server.port), timeout=10) as slow:
        slow.sendall(
            b"POST /hooks/new_ticket HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100\r\n\r\n{"
        )
        assert slow.recv(4096).split(b"\r\n", 1)[0] == b"HTTP/1.1 408 Request Timeout"


# -- malformed requests are a 4xx, never a traceback -------------------------------------------------
def test_malformed_requests_are_client_errors(serve):
    rt = serve()
    token = rt.server.token.value
    port = rt.server.port
    head = b"POST /hooks/new_ticket HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    assert status_line(port, head + b"Content-Length: abc\r\n\r\n") == b"HTTP/1.1 400 Bad Request"
    assert status_line(port, head + b"Content-Length: -1\r\n\r\n") == b"HTTP/1.1 400 Bad Request"
    big = head + b"X-Big: " + b"a" * 20000 + b"\r\n\r\n"
    assert status_line(port, big) == b"HTTP/1.1 431 Request Header Fields Too Large"
    huge = json.dumps({"pad": "x" * (2 * 1024 * 1024)}).encode()
    data, headers = huge, {"X-Hub-Signature-256": signature(SECRET, huge)}
    assert call(rt, "POST", "/hooks/new_ticket", data, headers=headers)[0] == 413
    status, body = call(rt, "POST", "/approvals/x", DEEP, token=token)
    assert status == 400 and "nests deeper than 256 levels" in body["error"]
    status, body = call(rt, "POST", "/hooks/new_ticket", DEEP, headers={"X-Hub-Signature-256": signature(SECRET, DEEP)})
    assert status == 400 and "deeper" in body["error"]
    bad = b"{not json"
    assert call(rt, "POST", "/hooks/new_ticket", bad, headers={"X-Hub-Signature-256": signature(SECRET, bad)})[0] == 400
    assert call(rt, "GET", "/nowhere", token=token)[0] == 404
    assert call(rt, "GET", "/health")[0] == 200  # and the server is still there


# -- webhooks: signatures and replays ----------------------------------------------------------------
def test_webhooks_need_a_good_signature(serve):
    rt = serve()
    data = json.dumps(ticket("T-1")).encode()
    status, body = call(rt, "POST", "/hooks/new_ticket", data)
    assert status == 401 and "missing signature" in body["error"]
    assert call(rt, "POST", "/hooks/new_ticket", data, headers={"X-Hub-Signature-256": "sha256=" + "0" * 64})[0] == 401
    wrong = {"X-Hub-Signature-256": signature("another-secret", data)}
    assert call(rt, "POST", "/hooks/new_ticket", data, headers=wrong)[0] == 401
    assert (
        call(rt, "POST", "/hooks/new_ticket", data + b" ", headers={"X-Signature-256": signature(SECRET, data)})[0]
        == 401
    )  # the body changed after signing
    assert not rt.store.runs()
    status, body = call(rt, "POST", "/hooks/new_ticket", data, headers={"X-Signature-256": signature(SECRET, data)})
    assert status == 202 and body["accepted"] is True


def test_replayed_deliveries_are_refused(serve):
    rt = serve()
    data, headers = signed(ticket("T-1"), delivery="d-1")
    assert call(rt, "POST", "/hooks/new_ticket", data, headers=headers)[0] == 202
    status, body = call(rt, "POST", "/hooks/new_ticket", data, headers=headers)
    assert status == 409 and body["duplicate"] is True
    headers["X-GitHub-Delivery"] = "d-2"  # a captured delivery resent under a new id: the body gives it away
    assert call(rt, "POST", "/hooks/new_ticket", data, headers=headers)[0] == 409
    data, headers = signed(ticket("T-2"), delivery="d-1")  # a new body under a delivery id already seen
    assert call(rt, "POST", "/hooks/new_ticket", data, headers=headers)[0] == 409
    data, headers = signed(ticket("T-3"), delivery="d-3")
    assert call(rt, "POST", "/hooks/new_ticket", data, headers=headers)[0] == 202
    assert len(rt.store.runs()) == 2


def test_webhook_and_channel_secrets_from_the_environment(serve, monkeypatch):
    rt = serve(webhook_secrets={})
    data = json.dumps(ticket("T-1")).encode()
    status, body = call(rt, "POST", "/hooks/new_ticket", data)
    assert status == 401 and "AGENTPACK_OPENEXPERTS_WEBHOOK_SECRET_NEW_TICKET" in body["error"]
    monkeypatch.setenv("AGENTPACK_OPENEXPERTS_WEBHOOK_SECRET_NEW_TICKET", "from-env")
    assert (
        call(rt, "POST", "/hooks/new_ticket", data, headers={"X-Hub-Signature-256": signature("from-env", data)})[0]
        == 202
    )
    message = json.dumps({"sender_id": "C-9", "message_text": "hi"}).encode()
    status, body = call(rt, "POST", "/channels/support", message)
    assert status == 401 and "AGENTPACK_OPENEXPERTS_CHANNEL_SECRET_SUPPORT" in body["error"]
    monkeypatch.setenv("AGENTPACK_OPENEXPERTS_CHANNEL_SECRET_SUPPORT", "channel-secret")
    headers = {"X-Hub-Signature-256": signature("channel-secret", message)}
    assert call(rt, "POST", "/channels/support", message, headers=headers)[0] == 202
    assert call(rt, "POST", "/channels/support", message, headers=headers)[0] == 409


def test_unsigned_webhooks_only_when_asked_for_on_loopback(serve):
    rt = serve(webhook_secrets={}, insecure_webhooks=True)
    assert call(rt, "POST", "/hooks/new_ticket", ticket("T-1"))[0] == 202
    with pytest.raises(AgentpackError, match="only allowed on a loopback address"):
        ServerSettings(host="192.0.2.10", insecure_webhooks=True, allow_plaintext=True).check()


# -- exposure: binding, TLS, token file --------------------------------------------------------------
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_non_loopback_needs_tls_or_an_explicit_flag(host):
    with pytest.raises(AgentpackError, match=f"refusing to serve on {host} without TLS") as caught:
        ServerSettings(host=host).check()
    assert "--tls-cert" in caught.value.hint and "--allow-plaintext" in caught.value.hint
    ServerSettings(host=host, allow_plaintext=True).check()
    ServerSettings(host=host, tls_cert=Path("c.pem"), tls_key=Path("k.pem")).check()
    with pytest.raises(AgentpackError, match="both a certificate and its key"):
        ServerSettings(host=host, tls_cert=Path("c.pem")).check()


def test_cli_refuses_a_public_bind_without_tls(acme, tmp_path):
    bindings = Path(__file__).parents[2] / "examples" / "openexperts" / "bindings.yaml"
    args = ["experts", "run", str(acme), "--bindings", str(bindings), "--workdir", str(tmp_path / "w")]
    result = run_cli([*args, "--host", "0.0.0.0", "--duration", "0"])
    assert result.exit_code == 2 and "refusing to serve on 0.0.0.0 without TLS" in result.stderr
    result = run_cli([*args, "--insecure-webhooks", "--host", "0.0.0.0", "--allow-plaintext", "--duration", "0"])
    assert result.exit_code == 2 and "--insecure-webhooks is only allowed on a loopback address" in result.stderr
    assert not (tmp_path / "w" / "server-token").exists()


def test_a_port_in_use_is_one_line(make_runtime, acme, ledger):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        rt = make_runtime(acme, tools=ledger.tools(), driver="noop")
        with pytest.raises(AgentpackError, match="already in use"):
            rt.start(http=True, port=busy.getsockname()[1])


def test_the_generated_token_is_private(serve, tmp_path):
    rt = serve()
    token = rt.server.token
    assert token.source == "generated" and token.path == rt.workdir / "server-token"
    assert stat.S_IMODE(token.path.stat().st_mode) == 0o600
    assert token.path.read_text().strip() == token.value and len(token.value) >= 43


def test_a_configured_token(serve, tmp_path, monkeypatch):
    path = tmp_path / "token"
    path.write_text("configured-token-0123456789\n")
    rt = serve(token_file=path)
    assert rt.server.token.value == "configured-token-0123456789" and not (rt.workdir / "server-token").exists()
    assert call(rt, "GET", "/approvals", token="configured-token-0123456789")[0] == 200
    rt.stop()
    monkeypatch.setenv("AGENTPACK_OPENEXPERTS_SERVER_TOKEN", "short")
    with pytest.raises(AgentpackError, match="at least 16 characters"):
        serve()


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")
def test_tls(serve, tmp_path):
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    command = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    command += ["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)]
    subprocess.run(command, check=True, capture_output=True)
    rt = serve(tls_cert=cert, tls_key=key)
    assert rt.url.startswith("https://127.0.0.1:")
    context = ssl.create_default_context(cafile=str(cert))
    conn = http.client.HTTPSConnection("127.0.0.1", rt.server.port, context=context, timeout=5)
    conn.request("GET", "/approvals", headers={"Authorization": f"Bearer {rt.server.token.value}"})
    assert conn.getresponse().status == 200
    conn.close()
    with pytest.raises(AgentpackError, match="cannot use the TLS certificate"):
        serve(tls_cert=key, tls_key=key)


def test_missing_server_dependencies_name_the_extra(make_runtime, acme, ledger, monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    rt = make_runtime(acme, tools=ledger.tools(), driver="noop")
    with pytest.raises(MissingDependencyError) as caught:
        rt.start(http=True)
    assert caught.value.hint == "pip install 'agentpack-openexperts[server]'"


@pytest.mark.parametrize("bound", ["0.0.0.0", "::ffff:127.0.0.1"])
def test_a_foreign_host_name_is_refused_on_any_bind_spelling(serve, bound):
    """The shared check (agentpack.io.hostcheck) builds the names from the bound address, wildcards included."""
    rt = serve(host=bound, allow_plaintext=True)
    token, port = rt.server.token.value, rt.server.port
    assert call(rt, "GET", "/approvals", token=token, headers={"Host": f"evil.example:{port}"})[0] == 400
    assert call(rt, "GET", "/approvals", token=token, headers={"Host": f"localhost:{port}"})[0] == 200
    assert call(rt, "GET", "/approvals", token=token, headers={"Origin": "http://evil.example"})[0] == 403
