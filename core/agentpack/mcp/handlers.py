"""The request handlers of ``agentpack mcp serve``: tools, the Skills extension, resources and prompts.

Everything but tools is answered from one ``Publication`` (a snapshot of the files); a watch task
builds a new one when the served files change and tells every client (``list_changed``: on the
handshake sessions directly, on 2026-07-28 ones through ``subscriptions/listen``).
"""

from __future__ import annotations

import base64
import json
import logging
import weakref
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from agentpack.kernel.version import __version__
from agentpack.mcp.publish import Publication, Watch, collect
from agentpack.mcp.skills import DIRECTORY, EXTENSION, as_text, mime_type
from agentpack.mcp.tools import call_tool, instructions, served_tools

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence

    from agentpack.kernel.host import Host
    from agentpack.kernel.registry import McpContext

log = logging.getLogger("agentpack.mcp")
PAGE = 100
"""Entries per page of every list (``--option mcp.page_size=N``)."""
FIXED = 3_600_000
"""ttlMs of what is fixed for the life of the process (the tool and template lists)."""
FRESH = 60_000
"""ttlMs of the skill listings and reads: a change is announced by list_changed."""
WATCH_SECONDS = 2.0
"""How often the served files are looked at for changes (``--option mcp.watch_seconds=S``; 0: never)."""


class Handlers:
    """One server's state (the publication, the sessions to notify) and its handlers."""

    def __init__(self, host: Host, context: McpContext) -> None:
        self.host = host
        self.context = context
        self.tools, self.names = served_tools(host, context)
        self.publication: Publication = collect(host, context)
        self.page = _positive(context.options.get("mcp.page_size"), PAGE, int)
        self.watch_seconds = _positive(context.options.get("mcp.watch_seconds"), WATCH_SECONDS, float, zero=True)
        self.connections: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        """Handshake-era connections (to a session that can notify on them), told of changes directly."""

    def server(self) -> Any:
        import mcp_types as types
        from mcp.server import Server
        from mcp.server.caching import CacheHint
        from mcp.server.lowlevel.server import NotificationOptions

        class Announcing(Server):
            """Says, on handshake sessions too, that the resource and prompt lists change (this server tells)."""

            def create_initialization_options(self, notification_options: Any = None, *args: Any, **kw: Any) -> Any:
                changes = notification_options or NotificationOptions(prompts_changed=True, resources_changed=True)
                return super().create_initialization_options(changes, *args, **kw)

        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        self.bus = InMemorySubscriptionBus()
        fixed = CacheHint(ttl_ms=FIXED, scope="private")
        fresh = CacheHint(ttl_ms=FRESH, scope="private")
        server = Announcing(
            "agentpack",
            version=__version__,
            instructions=instructions(self.host, self.context, self.tools, sorted(self.publication.snapshot.skills)),
            cache_hints={
                "tools/list": fixed,
                "resources/templates/list": fixed,
                "resources/list": fresh,
                "resources/read": fresh,
                "prompts/list": fresh,
            },
            lifespan=self.lifespan,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_templates,
            on_read_resource=self.read_resource,
            on_list_prompts=self.list_prompts,
            on_get_prompt=self.get_prompt,
            on_subscriptions_listen=ListenHandler(self.bus),
        )

        class SkillParams(types.RequestParams):
            uri: str

        class DirectoryParams(types.PaginatedRequestParams):
            uri: str

        server.add_request_handler("skills/list", types.PaginatedRequestParams, self.list_skills)
        server.add_request_handler("skills/get", SkillParams, self.get_skill)
        server.add_request_handler("resources/directory/read", DirectoryParams, self.read_directory)
        server.extensions[EXTENSION] = {"directoryRead": True}
        return server

    # -- changes -----------------------------------------------------------
    @asynccontextmanager
    async def lifespan(self, server: Any) -> AsyncIterator[dict[str, Any]]:
        import anyio

        async with anyio.create_task_group() as tasks:
            if self.watch_seconds and self.context.packs:
                tasks.start_soon(self.watch)
            yield {}
            tasks.cancel_scope.cancel()

    async def watch(self) -> None:
        import anyio

        watch = Watch(list(self.context.packs))
        while True:
            await anyio.sleep(self.watch_seconds)
            if await anyio.to_thread.run_sync(watch.changed):
                await self.refresh()

    async def refresh(self) -> None:
        """Build a new publication; when a client would see a difference, tell every client."""
        import anyio
        from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged

        fresh = await anyio.to_thread.run_sync(collect, self.host, self.context)
        if fresh.fingerprint() == self.publication.fingerprint():
            return
        prompts_changed = sorted(fresh.prompts) != sorted(self.publication.prompts)
        self.publication = fresh
        log.info("the served skills changed: %d skills", len(fresh.snapshot.skills))
        await self.bus.publish(ResourcesListChanged())
        if prompts_changed:
            await self.bus.publish(PromptsListChanged())
        for connection, session in list(self.connections.items()):
            try:
                await session.send_resource_list_changed()
                if prompts_changed:
                    await session.send_prompt_list_changed()
            except Exception as exc:  # a connection gone away: nothing to tell it
                log.debug("a client was not told of the change: %r", exc)
                self.connections.pop(connection, None)

    def _seen(self, ctx: Any) -> None:
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # the SDK makes a session per request and names no connection publicly: one per connection
            self.connections.setdefault(ctx.session._connection, ctx.session)

    # -- tools -------------------------------------------------------------
    async def list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        self._seen(ctx)
        listed = [
            types.Tool(
                name=t.name,
                title=t.title,
                description=t.description,
                input_schema=t.input_schema,
                output_schema=t.output_schema,
                annotations=_annotations(types, t),
            )
            for t in self.tools.values()
        ]
        page, cursor = self._page(listed, params)
        return types.ListToolsResult(tools=page, next_cursor=cursor)

    async def call_tool(self, ctx: Any, params: Any) -> Any:
        import anyio
        import mcp_types as types
        from mcp.shared.exceptions import MCPError

        self._seen(ctx)
        name = self.names.get(params.name)
        if name is None:
            known = ", ".join(sorted(self.tools)) or "none"
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name} (tools: {known})")
        tool = self.tools[name]
        session = ctx.session

        def report(done: float, total: float | None = None, message: str | None = None) -> None:
            anyio.from_thread.run(session.report_progress, done, total, message)

        result, error = await anyio.to_thread.run_sync(call_tool, tool, params.arguments or {}, report)
        if error is not None:
            return types.CallToolResult(content=[types.TextContent(type="text", text=error)], is_error=True)
        text = json.dumps(result, ensure_ascii=False, default=str)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=result)

    # -- skills --------------------------------------------------------------
    async def list_skills(self, ctx: Any, params: Any) -> dict[str, Any]:
        self._seen(ctx)
        skills = self.publication.snapshot.skills
        page, cursor = self._page([skills[uri] for uri in sorted(skills)], params)
        result: dict[str, Any] = {"resultType": "complete", "skills": [s.entry() for s in page]}
        if cursor:
            result["nextCursor"] = cursor
        return {**result, "ttlMs": FRESH, "cacheScope": "private"}

    async def get_skill(self, ctx: Any, params: Any) -> dict[str, Any]:
        skill = self.publication.snapshot.skills.get(params.uri)
        if skill is None:
            raise _invalid(f"No skill is served at {params.uri}")
        return {"resultType": "complete", "skill": skill.entry(), "ttlMs": FRESH, "cacheScope": "private"}

    async def read_directory(self, ctx: Any, params: Any) -> dict[str, Any]:
        snapshot = self.publication.snapshot
        children = snapshot.directories.get(params.uri)
        if children is None:
            what = "not a directory resource" if params.uri in snapshot.files else "not served here"
            raise _invalid(f"{params.uri} is {what}")
        listed: list[dict[str, Any]] = []
        for uri in sorted(children):
            name = uri.rsplit("/", 1)[-1]
            if children[uri]:
                listed.append({"uri": uri, "name": name, "mimeType": DIRECTORY})
            else:
                item = snapshot.files[uri]
                listed.append({"uri": uri, "name": name, "mimeType": item.mime_type, "size": len(item.data)})
        page, cursor = self._page(listed, params)
        result: dict[str, Any] = {"resultType": "complete", "resources": page}
        if cursor:
            result["nextCursor"] = cursor
        return result

    # -- resources -----------------------------------------------------------
    async def list_resources(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        self._seen(ctx)
        publication = self.publication
        listed: list[Any] = []
        described = {s.uri: s for s in publication.snapshot.skills.values()}
        for uri in sorted(publication.snapshot.files):
            item = publication.snapshot.files[uri]
            skill = described.get(uri)
            listed.append(
                types.Resource(
                    uri=uri,
                    name=skill.name if skill else uri.rsplit("/", 1)[-1],
                    description=str(skill.frontmatter["description"]) if skill else None,
                    mime_type=item.mime_type,
                    size=len(item.data),
                )
            )
        for resource in publication.resources.values():
            listed.append(
                types.Resource(
                    uri=resource.uri,
                    name=resource.name,
                    description=resource.description,
                    mime_type=resource.mime_type,
                )
            )
        page, cursor = self._page(listed, params)
        return types.ListResourcesResult(resources=page, next_cursor=cursor)

    async def list_templates(self, ctx: Any, params: Any) -> Any:
        """No resource templates: every resource has its own URI (the list is fixed, cache hints say so)."""
        import mcp_types as types

        return types.ListResourceTemplatesResult(resource_templates=[])

    async def read_resource(self, ctx: Any, params: Any) -> Any:
        import anyio
        import mcp_types as types

        from agentpack.io.errors import AgentpackError

        publication = self.publication
        item = publication.snapshot.files.get(params.uri)
        if item is not None:
            data, mime = item.data, item.mime_type
        elif params.uri in publication.resources:
            resource = publication.resources[params.uri]
            try:
                data = await anyio.to_thread.run_sync(resource.read)
            except (AgentpackError, OSError) as exc:
                raise _invalid(f"{params.uri} cannot be read: {exc}") from None
            mime = resource.mime_type or mime_type(params.uri, data)
        else:
            where = (
                " (a directory: use resources/directory/read)" if params.uri in publication.snapshot.directories else ""
            )
            raise _invalid(f"Resource not found: {params.uri}{where}")
        text = as_text(data)
        content: Any
        if text is not None:
            content = types.TextResourceContents(uri=params.uri, mime_type=mime, text=text)
        else:
            blob = base64.b64encode(data).decode("ascii")
            content = types.BlobResourceContents(uri=params.uri, mime_type=mime, blob=blob)
        return types.ReadResourceResult(contents=[content])

    # -- prompts -------------------------------------------------------------
    async def list_prompts(self, ctx: Any, params: Any) -> Any:
        import mcp_types as types

        self._seen(ctx)
        listed = [
            types.Prompt(
                name=p.name,
                title=p.title,
                description=p.description,
                arguments=[types.PromptArgument(name=n, description=d, required=r) for n, d, r in p.arguments] or None,
            )
            for p in self.publication.prompts.values()
        ]
        page, cursor = self._page(listed, params)
        return types.ListPromptsResult(prompts=page, next_cursor=cursor)

    async def get_prompt(self, ctx: Any, params: Any) -> Any:
        import anyio
        import mcp_types as types

        from agentpack.io.errors import AgentpackError

        prompt = self.publication.prompts.get(params.name)
        if prompt is None:
            raise _invalid(f"Unknown prompt: {params.name}")
        arguments = dict(params.arguments or {})
        missing = [n for n, _, required in prompt.arguments if required and n not in arguments]
        if missing:
            raise _invalid(f"prompt {prompt.name} needs the argument(s) {', '.join(missing)}")
        try:
            text = await anyio.to_thread.run_sync(prompt.render, arguments)
        except AgentpackError as exc:
            raise _invalid(str(exc)) from None
        message = types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))
        return types.GetPromptResult(description=prompt.description, messages=[message])

    # -- pagination ------------------------------------------------------------
    def _page(self, items: Sequence[Any], params: Any) -> tuple[list[Any], str | None]:
        """One page of ``items`` from the request's cursor, and the cursor of the next page (None: the last)."""
        cursor = getattr(params, "cursor", None) if params is not None else None
        start = 0
        if cursor:
            try:
                start = int(base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii").removeprefix("at:"))
            except (ValueError, UnicodeError):
                raise _invalid(f"invalid cursor {cursor!r}: pass back the nextCursor of a previous page") from None
            if not 0 <= start <= len(items):
                raise _invalid(f"cursor {cursor!r} is past the end of the list (the list changed: start again)")
        end = start + self.page
        following = base64.urlsafe_b64encode(f"at:{end}".encode("ascii")).decode("ascii") if end < len(items) else None
        return list(items[start:end]), following


def _invalid(message: str) -> Exception:
    """A JSON-RPC error -32602 (Invalid params) with ``message``."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    return MCPError(code=types.INVALID_PARAMS, message=message)


def _positive(raw: Any, default: Any, kind: type, *, zero: bool = False) -> Any:
    from agentpack.io.errors import AgentpackError

    if raw is None:
        return default
    try:
        value = kind(raw)
    except (TypeError, ValueError):
        value = -1
    if value < 0 or (value == 0 and not zero):
        raise AgentpackError(
            f"an MCP server option must be a {'non-negative' if zero else 'positive'} number, not {raw!r}"
        )
    return value


def _annotations(types: Any, tool: Any) -> Any:
    hints = tool.hints
    if hints is None:
        return None
    return types.ToolAnnotations(
        title=tool.title,
        read_only_hint=hints.read_only,
        destructive_hint=hints.destructive,
        idempotent_hint=hints.idempotent,
        open_world_hint=hints.open_world,
    )
