"""agentpack.io.llm: ChatClient against a fake OpenAI-compatible server on 127.0.0.1; is_loopback."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from agentpack.io.errors import AgentpackError
from agentpack.io.llm import ChatClient, ChatError, is_loopback

pytest.importorskip("httpx", reason="httpx is needed by ChatClient")


def completion(message: dict, **extra) -> dict:
    return {
        "id": "c1",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
        **extra,
    }


TOOL_CALLS = [
    {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "pluggy", "k": 2}'}},
    {"id": "call_2", "type": "function", "function": {"name": "broken", "arguments": "{not json"}},
    {"id": "call_3", "type": "function", "function": {"name": "as_object", "arguments": {"x": 1}}},
    {"id": "call_4", "type": "function", "function": {"name": "no_args"}},
    {"id": "call_5", "type": "function", "function": {"name": "list_args", "arguments": "[1, 2]"}},
]

RESPONSES = {
    "content": (200, json.dumps(completion({"content": "Hello there."}))),
    "tools": (200, json.dumps(completion({"content": None, "tool_calls": TOOL_CALLS}))),
    "http-error": (500, '{"error": {"message": "model overloaded"}}'),
    "unauthorized": (401, '{"error": "bad key"}'),
    "not-json": (200, "<html>gateway</html>"),
    "no-choices": (200, '{"choices": []}'),
    "message-not-object": (200, '{"choices": [{"message": "hi"}]}'),
    "bad-tool-calls": (200, '{"choices": [{"message": {"tool_calls": ["x"]}}]}'),
    "content-not-string": (200, '{"choices": [{"message": {"content": {"a": 1}}}]}'),
    "list-body": (200, "[1, 2]"),
    "deep": (200, "[" * 5000 + "]" * 5000),  # past the parser's recursion limit: malformed, not a RecursionError
    "nan": (200, '{"choices": [{"message": {"content": "x"}}], "usage": {"total_tokens": NaN}}'),
}


class FakeOpenAI(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict]] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        scenario = self.path.strip("/").split("/")[0]
        FakeOpenAI.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
        status, text = RESPONSES[scenario]
        data = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeOpenAI)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def client(server: str, scenario: str, **kwargs) -> ChatClient:
    return ChatClient(model="fake-model", base_url=f"{server}/{scenario}/v1/", timeout=5, **kwargs)


def test_content_and_request_shape(server):
    FakeOpenAI.requests.clear()
    with client(server, "content", api_key="sk-test", temperature=0.0) as chat:
        result = chat.complete([{"role": "user", "content": "hi"}], response_format={"type": "json_object"}, seed=7)
    assert result.content == "Hello there." and result.tool_calls == []
    assert result.usage["total_tokens"] == 5 and result.finish_reason == "stop" and result.raw["id"] == "c1"
    (request,) = FakeOpenAI.requests
    assert request["path"] == "/content/v1/chat/completions"
    assert request["headers"]["Authorization"] == "Bearer sk-test"
    assert request["body"] == {
        "model": "fake-model",
        "messages": [{"role": "user", "content": "hi"}],
        "seed": 7,
        "temperature": 0.0,
        "response_format": {"type": "json_object"},
    }


def test_tool_calls(server):
    FakeOpenAI.requests.clear()
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    with client(server, "tools") as chat:
        result = chat.complete([{"role": "user", "content": "find"}], tools=tools)
    assert FakeOpenAI.requests[0]["body"]["tools"] == tools
    assert "Authorization" not in FakeOpenAI.requests[0]["headers"]
    assert result.content is None
    assert [(c.id, c.name, c.arguments) for c in result.tool_calls] == [
        ("call_1", "search", {"q": "pluggy", "k": 2}),
        ("call_2", "broken", {"_raw": "{not json"}),
        ("call_3", "as_object", {"x": 1}),
        ("call_4", "no_args", {}),
        ("call_5", "list_args", {"_raw": "[1, 2]"}),
    ]


@pytest.mark.parametrize(
    "scenario, fragment",
    [
        ("http-error", 'answered HTTP 500: {"error": {"message": "model overloaded"}}'),
        ("unauthorized", "answered HTTP 401"),
    ],
)
def test_http_errors_become_chat_errors(server, scenario, fragment):
    with client(server, scenario) as chat, pytest.raises(ChatError) as info:
        chat.complete([{"role": "user", "content": "hi"}])
    assert fragment in info.value.message
    assert isinstance(info.value, AgentpackError)


@pytest.mark.parametrize(
    "scenario",
    [
        "not-json",
        "no-choices",
        "message-not-object",
        "bad-tool-calls",
        "content-not-string",
        "list-body",
        "deep",
        "nan",
    ],
)
def test_malformed_bodies_become_chat_errors(server, scenario):
    with client(server, scenario) as chat, pytest.raises(ChatError, match="malformed response"):
        chat.complete([{"role": "user", "content": "hi"}])


def test_unreachable_endpoint_is_a_chat_error():
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    chat = ChatClient(model="m", base_url=f"http://127.0.0.1:{port}/v1", timeout=2)
    with chat, pytest.raises(ChatError, match="cannot reach chat endpoint"):
        chat.complete([{"role": "user", "content": "hi"}])


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://localhost:8000/v1", True),
        ("http://LOCALHOST/v1", True),
        ("http://127.0.0.1:11434/v1", True),
        ("http://127.5.6.7/", True),
        ("http://[::1]:8080/v1", True),
        ("http://[::ffff:127.0.0.1]/v1", True),
        ("https://user:pw@127.0.0.1/v1", True),
        ("http://0.0.0.0:8000/v1", False),
        ("http://10.0.0.1/v1", False),
        ("https://api.openai.com/v1", False),
        ("http://127.0.0.1.nip.io/v1", False),
        ("http://localhost.evil.example/v1", False),
        ("http://[::2]/v1", False),
        ("http://[::1/v1", False),
        ("not a url", False),
        ("", False),
    ],
)
def test_is_loopback(url, expected):
    assert is_loopback(url) is expected


@pytest.mark.parametrize("name", ["evil.localhost", "localhost.", "api.localhost", "LOCALHOST.evil.example"])
def test_no_name_is_loopback_by_its_spelling(monkeypatch, name):
    """A name counts only by the addresses it resolves to: a resolver that says 'remote' wins."""
    import socket

    def resolve(host, *args, **kwargs):
        assert host == name.lower()
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("203.0.113.7", 0))]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert is_loopback(f"http://{name}:8000/v1") is False


def test_a_name_that_resolves_only_to_loopback_counts(monkeypatch):
    import socket

    answers = {
        "box.internal": [("127.0.0.1", 0), ("::1", 0, 0, 0)],
        "mixed.internal": [("127.0.0.1", 0), ("198.51.100.1", 0)],
    }

    def resolve(host, *args, **kwargs):
        if host not in answers:
            raise socket.gaierror("unknown")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", address) for address in answers[host]]

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    assert is_loopback("http://box.internal/v1") is True
    assert is_loopback("http://mixed.internal/v1") is False
    assert is_loopback("http://nowhere.internal/v1") is False
