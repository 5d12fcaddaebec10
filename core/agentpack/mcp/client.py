"""agentpack as an MCP client: name a server on the command line, connect, and speak the Skills extension.

A server is named ``LABEL=COMMAND_OR_URL`` (``--mcp``, repeatable): the label is the host-assigned
identity every skill is keyed by (never the server's self-reported ``serverInfo.name``); a target
starting with ``http://`` or ``https://`` is a Streamable HTTP endpoint, anything else a command line
started over stdio. ``Connection`` returns the raw JSON of each result, so both the host side
(``mcp.skillsource``) and the conformance check (``mcp.check``) see what the server sent.
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from agentpack.io.errors import AgentpackError, require
from agentpack.kernel.version import __version__

EXTENSION = "io.modelcontextprotocol/skills"
INVALID_PARAMS = -32602
LABEL_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_PAGES = 10_000
"""A listing that has not ended after this many pages is a cursor loop."""
CONNECT_TIMEOUT = 60.0


class McpCallError(AgentpackError):
    """A request the server answered with a JSON-RPC error (``code``), or could not answer."""

    def __init__(self, origin: str, detail: str, *, method: str, code: int | None = None) -> None:
        super().__init__(f"{origin}: {detail}")
        self.detail = detail
        self.method = method
        self.code = code


class PaginationError(McpCallError):
    """A paginated listing that never ends (a cursor comes back)."""


@dataclass(frozen=True)
class ServerSpec:
    """A server as the user named it: the host-assigned ``label`` and a command line or URL."""

    label: str
    target: str

    @property
    def is_url(self) -> bool:
        return self.target.startswith(("http://", "https://"))

    @property
    def origin(self) -> str:
        """How outputs name the server: ``mcp:LABEL``."""
        return f"mcp:{self.label}"

    def argv(self) -> list[str]:
        return shlex.split(self.target)


def parse_server(text: str) -> ServerSpec:
    """``LABEL=COMMAND_OR_URL`` as a ``ServerSpec``; a clear error for anything else."""
    label, sep, target = text.partition("=")
    label, target = label.strip(), target.strip()
    if not sep or not target:
        raise AgentpackError(
            f"--mcp {text!r}: expected LABEL=COMMAND_OR_URL",
            hint="for example --mcp docs=https://example.org/mcp or --mcp local='python server.py'",
        )
    if not LABEL_PATTERN.match(label):
        raise AgentpackError(
            f"--mcp {text!r}: the label {label!r} must be 1 to 64 letters, digits, '_' or '-'",
            hint="the label is how agentpack names the server in every output and in its cache",
        )
    spec = ServerSpec(label, target)
    if not spec.is_url:
        try:
            argv = spec.argv()
        except ValueError as exc:
            raise AgentpackError(f"--mcp {text!r}: cannot split the command line: {exc}") from None
        if not argv:
            raise AgentpackError(f"--mcp {text!r}: the command is empty")
    return spec


def parse_servers(texts: tuple[str, ...] | list[str]) -> list[ServerSpec]:
    """Every ``--mcp`` value; two servers with one label are an error (the label is their identity)."""
    specs = [parse_server(text) for text in texts]
    seen: set[str] = set()
    for spec in specs:
        if spec.label in seen:
            raise AgentpackError(f"--mcp: the label {spec.label!r} names two servers; give each its own label")
        seen.add(spec.label)
    return specs


def content_bytes(content: dict[str, Any]) -> bytes:
    """The raw bytes of one ``resources/read`` content item (``text`` as UTF-8, ``blob`` from base64)."""
    if isinstance(content.get("text"), str):
        return str(content["text"]).encode("utf-8")
    if isinstance(content.get("blob"), str):
        try:
            return base64.b64decode(content["blob"], validate=True)
        except ValueError as exc:
            raise ValueError(f"blob is not valid base64: {exc}") from None
    raise ValueError("the content has neither 'text' nor 'blob'")


class Connection:
    """One open session with a server; each method returns the result's JSON as the server sent it."""

    def __init__(self, spec: ServerSpec, client: Any) -> None:
        self.spec = spec
        self.client = client

    @property
    def capabilities(self) -> dict[str, Any]:
        caps = self.client.server_capabilities
        dumped: dict[str, Any] = caps.model_dump(by_alias=True, mode="json", exclude_none=True)
        return dumped

    @property
    def protocol_version(self) -> str:
        return str(self.client.protocol_version)

    def extension(self) -> dict[str, Any] | None:
        """The settings of the Skills extension the server declared, or None when it declared none."""
        settings = (self.capabilities.get("extensions") or {}).get(EXTENSION)
        return settings if isinstance(settings, dict) else None

    def require_extension(self) -> dict[str, Any]:
        """The extension's settings; an error when the server did not declare it (no ``skills/*`` call is made)."""
        settings = self.extension()
        if settings is None:
            raise AgentpackError(
                f"{self.spec.origin}: the server does not declare the Skills extension ({EXTENSION})",
                hint="agentpack calls skills/list only on servers that declare it",
            )
        return settings

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        import mcp_types as types
        from mcp.shared.exceptions import MCPError
        from pydantic import TypeAdapter, ValidationError

        request = types.Request[dict[str, Any] | None, str](method=method, params=params or {})
        try:
            result: dict[str, Any] = await self.client.session.send_request(request, TypeAdapter(dict[str, Any]))
        except MCPError as exc:
            raise McpCallError(
                self.spec.origin, f"{method} failed: {exc.message} (error {exc.code})", method=method, code=exc.code
            ) from None
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = "/" + "/".join(map(str, problem.get("loc", ())))
            raise McpCallError(
                self.spec.origin,
                f"{method} returned a malformed result at {where}: {problem.get('msg')}",
                method=method,
            ) from None
        return result

    async def pages(self, method: str, key: str, params: dict[str, Any] | None = None) -> AsyncIterator[dict[str, Any]]:
        """Every page of a paginated method, following ``nextCursor``; a repeated cursor is an error."""
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            page = await self.request(method, {**(params or {}), **({"cursor": cursor} if cursor is not None else {})})
            if not isinstance(page.get(key), list):
                raise McpCallError(self.spec.origin, f"{method} result has no '{key}' list", method=method)
            yield page
            cursor = page.get("nextCursor")
            if cursor is None:
                return
            if not isinstance(cursor, str) or cursor in seen:
                raise PaginationError(
                    self.spec.origin,
                    f"{method} returned the cursor {cursor!r} twice: the listing never ends",
                    method=method,
                )
            seen.add(cursor)
        raise PaginationError(self.spec.origin, f"{method} did not end after {MAX_PAGES} pages", method=method)

    async def read(self, uri: str) -> tuple[bytes, dict[str, Any]]:
        """The bytes of the resource at ``uri`` and its content item (``resources/read``)."""
        result = await self.request("resources/read", {"uri": uri})
        contents = [c for c in result.get("contents") or () if isinstance(c, dict)]
        matching = [c for c in contents if c.get("uri") == uri] or contents
        if not matching:
            raise McpCallError(self.spec.origin, f"resources/read {uri} returned no content", method="resources/read")
        try:
            return content_bytes(matching[0]), matching[0]
        except ValueError as exc:
            raise McpCallError(self.spec.origin, f"resources/read {uri}: {exc}", method="resources/read") from None


def client_info() -> Any:
    """How agentpack introduces itself to servers (``clientInfo``)."""
    import mcp_types as types

    return types.Implementation(name="agentpack", version=__version__)


def make_client(target: Any, *, read_timeout: float | None = CONNECT_TIMEOUT) -> Any:
    """An SDK ``Client`` for ``target`` (a URL, a ``StdioServerParameters`` or an in-process server) as agentpack.

    The SDK's response cache is off: every read is checked against the entry it belongs to. A stdio server's
    stderr goes to ours, or to the process's own when ours is no file (agentpack used as a library).
    """
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    if isinstance(target, StdioServerParameters):
        target = stdio_client(target, errlog=_errlog())
    return Client(target, client_info=client_info(), cache=None, read_timeout_seconds=read_timeout)


def _errlog() -> Any:
    import io
    import sys

    try:
        sys.stderr.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        return sys.__stderr__
    return sys.stderr


def transport_target(spec: ServerSpec) -> Any:
    """What ``make_client`` connects to for ``spec``: the URL, or the command started over stdio."""
    if spec.is_url:
        return spec.target
    from mcp.client.stdio import StdioServerParameters

    argv = spec.argv()
    return StdioServerParameters(command=argv[0], args=argv[1:])


@asynccontextmanager
async def connect(spec: ServerSpec, target: Any = None) -> AsyncIterator[Connection]:
    """An open ``Connection`` to ``spec`` (``target`` overrides how to reach it: tests pass a server object)."""
    require("mcp", distribution="agentpack-core", extra="mcp", feature="reading skills from MCP servers")
    client = make_client(transport_target(spec) if target is None else target)
    try:
        await client.__aenter__()
    except Exception as exc:
        raise AgentpackError(f"{spec.origin}: cannot connect to {spec.target}: {reason(exc)}") from None
    try:
        yield Connection(spec, client)
    finally:
        try:
            await client.__aexit__(None, None, None)
        except Exception:  # the server may already be gone; what it said was already read
            pass


def reason(exc: BaseException) -> str:
    """The first real cause inside an exception group (anyio wraps transport failures in them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__
