"""Bind tools to MCP servers over stdio with the official ``mcp`` SDK (v2 ``Client``).

One asyncio loop on one thread serves every MCP binding of a runtime; worker
threads submit calls to it and wait for the result.
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
    def __init__(
        self,
        command: list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        tool_names: dict[str, str] | None = None,
    ) -> None:
        require("mcp", distribution="agentpack-openexperts", extra="mcp", feature="binding tools to MCP servers")
        self.command = command
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
            raise AgentpackError(f"cannot start MCP server {' '.join(command)}: {exc}") from None

    async def _open(self) -> None:
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        params = StdioServerParameters(command=self.command[0], args=self.command[1:], env=self.env, cwd=self.cwd)
        self._stack = AsyncExitStack()
        self._client = await self._stack.enter_async_context(Client(params))
        listed = await self._client.list_tools()
        self.tools = [t.name for t in listed.tools]

    def call(self, operation: str, arguments: dict[str, Any]) -> Any:
        name = self.tool_names.get(operation, operation)
        if name not in self.tools:
            raise ToolError(f"MCP server offers no tool '{name}' (tools: {', '.join(self.tools) or 'none'})")
        result = self._loop.run(self._client.call_tool(name, arguments))
        text = "\n".join(getattr(block, "text", "") for block in result.content if getattr(block, "text", None))
        if result.is_error:
            raise ToolError(text or f"MCP tool '{name}' failed")
        if result.structured_content is not None:
            return result.structured_content
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
        spec["command"],
        env=spec.get("env"),
        cwd=str(base / cwd) if cwd else str(base),
        tool_names=spec.get("tool_names"),
    )
