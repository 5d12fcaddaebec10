"""A small client for OpenAI-compatible chat completions, shared by graders, synthesis and drivers.

Needs ``httpx`` (installed by the plugins that use it). One ``httpx.Client``
per ``ChatClient`` keeps connections alive across calls.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError, require

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class ChatError(AgentpackError):
    """The chat endpoint could not be reached or answered with an error."""


def is_loopback(url: str) -> bool:
    """True when ``url``'s host is on this machine, judged by IP address only.

    An IP literal counts when it is loopback (127.0.0.0/8, ::1, ::ffff:127.x). A name counts only when it
    resolves, and every address it resolves to is loopback: no name is loopback by its spelling
    (``evil.localhost`` or ``localhost.`` may resolve anywhere). A pack with secrets sends text to a
    model only when this is true; the request resolves the name again, so a name whose resolver the
    user does not control should be given as an IP literal instead.
    """
    try:
        host = (urlparse(url).hostname or "").strip("[]").lower()
    except ValueError:  # e.g. an unbalanced '[' in the URL
        return False
    if not host:
        return False
    try:
        return _loopback_ip(host)
    except ValueError:
        pass
    import socket

    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(_loopback_ip(str(address).split("%", 1)[0]) for address in addresses)


def _loopback_ip(text: str) -> bool:
    """Whether IP literal ``text`` is loopback; ``ValueError`` when it is not an IP literal."""
    address = ipaddress.ip_address(text)
    mapped = getattr(address, "ipv4_mapped", None)
    return bool((mapped or address).is_loopback)


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class ChatResult:
    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    finish_reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict)


def _tool_call(call: dict[str, Any]) -> ToolCall:
    """One ``tool_calls`` entry; arguments arrive as a JSON string (or, from some servers, an object)."""
    fn = call.get("function") or {}
    raw = fn.get("arguments")
    if isinstance(raw, dict):
        arguments: dict[str, Any] = raw
    else:
        try:
            decoded = jsonio.loads(raw or "{}")
        except (TypeError, ValueError):
            decoded = None
        arguments = decoded if isinstance(decoded, dict) else {"_raw": raw}
    return ToolCall(id=str(call.get("id") or ""), name=str(fn.get("name") or ""), arguments=arguments)


class ChatClient:
    """POST ``{base_url}/chat/completions``; ``complete(messages, tools=...)`` returns a ``ChatResult``."""

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        temperature: float | None = None,
        timeout: float = 60.0,
        distribution: str = "agentpack-core",
    ) -> None:
        httpx = require("httpx", distribution=distribution, feature="calling a chat model")
        self.model = model
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.temperature = temperature
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(headers=headers, timeout=timeout)
        self._httpx = httpx

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        response_format: dict[str, Any] | None = None,
        **extra: Any,
    ) -> ChatResult:
        body: dict[str, Any] = {"model": self.model, "messages": messages, **extra}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if tools:
            body["tools"] = tools
        if response_format:
            body["response_format"] = response_format
        url = f"{self.base_url}/chat/completions"
        try:
            response = self._client.post(url, json=body)
        except self._httpx.HTTPError as exc:
            raise ChatError(f"cannot reach chat endpoint {url}: {exc}") from None
        if response.status_code >= 400:
            raise ChatError(f"chat endpoint {url} answered HTTP {response.status_code}: {response.text[:300]}")
        try:
            data = jsonio.loads(response.content)  # deep or NaN: malformed, not a RecursionError
            choice = data["choices"][0]
            message = choice["message"]
            calls = [_tool_call(call) for call in message.get("tool_calls") or []]
            content = message.get("content")
            if content is not None and not isinstance(content, str):
                raise TypeError("content is not a string")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise ChatError(f"chat endpoint {url} sent a malformed response: {response.text[:300]}") from None
        usage = data.get("usage")
        return ChatResult(
            content=content,
            tool_calls=calls,
            usage=usage if isinstance(usage, dict) else {},
            finish_reason=choice.get("finish_reason"),
            raw=data,
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
