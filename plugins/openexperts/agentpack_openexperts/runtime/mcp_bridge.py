"""Bind tools to MCP servers, over stdio or Streamable HTTP, with the official ``mcp`` SDK (v2 ``Client``).

One asyncio loop on one thread serves every MCP binding of a runtime; worker
threads submit calls to it and wait for the result. The client introduces itself
as agentpack (``clientInfo``), reads every page of ``tools/list``, and keeps the
blocks of a result that are not text (image, audio, resource links, embedded
resources) under ``content``.
"""

from __future__ import annotations

import asyncio
import threading
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError, require

from .bindings import ToolError

CALL_TIMEOUT = 120.0


class McpLoop:
    """The shared event loop thread (started on first use)."""

    _instance: McpLoop | None = None
    _lock = threading.Lock()

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="openexperts-mcp", daemon=True)
        self.thread.start()

    @classmethod
    def get(cls) -> McpLoop:
        with cls._lock:
            if cls._instance is None:
                cls._instance = cls()
            return cls._instance

    def run(self, coro, timeout: float | None = CALL_TIMEOUT) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)


class McpBinding:
    """Tools of one MCP server: a ``command`` started over stdio, or a Streamable HTTP ``url``."""

    def __init__(
        self,
        command: list[str] | None = None,
        *,
        url: str | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        tool_names: dict[str, str] | None = None,
    ) -> None:
        require("mcp", distribution="agentpack-openexperts", extra="mcp", feature="binding tools to MCP servers")
        if (command is None) == (url is None):
            raise AgentpackError("an MCP binding takes either a command or a url")
        self.command = command
        self.url = url
        self.env = env
        self.cwd = cwd
        self.tool_names = tool_names or {}
        self._loop = McpLoop.get()
        self._stack: AsyncExitStack | None = None
        self._client: Any = None
        self.tools: list[str] = []
        try:
            self._loop.run(self._open(), timeout=60)
        except Exception as exc:
            from agentpack.mcp.client import reason

            what = url or " ".join(command or ())
            raise AgentpackError(f"cannot start MCP server {what}: {reason(exc)}") from None

    async def _open(self) -> None:
        from agentpack.mcp.client import make_client

        target: Any = self.url
        if self.command is not None:
            from mcp.client.stdio import StdioServerParameters

            target = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env, cwd=self.cwd)
        self._stack = AsyncExitStack()
        self._client = await self._stack.enter_async_context(make_client(target, read_timeout=CALL_TIMEOUT))
        self.tools = await self._list_tools()

    async def _list_tools(self) -> list[str]:
        """The names on every page of ``tools/list`` (a cursor that comes back ends the listing)."""
        names: list[str] = []
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            listed = await self._client.list_tools(cursor=cursor)
            names += [t.name for t in listed.tools]
            cursor = listed.next_cursor
            if not cursor or cursor in seen:
                return names
            seen.add(cursor)

    def call(self, operation: str, arguments: dict[str, Any]) -> Any:
        name = self.tool_names.get(operation, operation)
        if name not in self.tools:
            raise ToolError(f"MCP server offers no tool '{name}' (tools: {', '.join(self.tools) or 'none'})")
        result = self._loop.run(self._client.call_tool(name, arguments))
        blocks = [block.model_dump(by_alias=True, mode="json", exclude_none=True) for block in result.content]
        texts = [block["text"] for block in blocks if block.get("type") == "text"]
        text = "\n".join(t for t in texts if t)
        if result.is_error:
            raise ToolError(text or f"MCP tool '{name}' failed")
        if result.structured_content is not None:
            return result.structured_content
        if len(texts) < len(blocks):  # images, audio, resource links: kept, with the text beside them
            return {"text": text, "content": blocks}
        try:
            return jsonio.loads(text)  # deep or NaN: not JSON, kept as text
        except ValueError:
            return {"text": text}

    def close(self) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            try:
                self._loop.run(stack.aclose(), timeout=10)
            except Exception:  # the server may already be gone
                pass


def mcp_binder(config: dict[str, Any], context: Any) -> McpBinding:
    spec = config["mcp"]
    cwd = spec.get("cwd")
    base: Path = context.base
    return McpBinding(
        spec.get("command"),
        url=spec.get("url"),
        env=spec.get("env"),
        cwd=str(base / cwd) if cwd else str(base),
        tool_names=spec.get("tool_names"),
    )
