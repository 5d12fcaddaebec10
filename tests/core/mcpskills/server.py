"""A Skills-extension server written with the official MCP Python SDK, for our client's and checker's tests.

It serves every skill under a folder (``skill://<folder path>/<file>``) from a snapshot taken at start,
and can break one rule of SEP-2640 on purpose (``--break RULE``), so each of the checker's findings and
each of the host's verification failures has a server that provokes it.

    python server.py ROOT [--break RULE]... [--page-size N] [--http PORT]
"""

from __future__ import annotations

import argparse
import base64
import datetime
import hashlib
import sys
from pathlib import Path
from typing import Any

BREAKS = (
    "no-extension",  # the extension is not declared
    "no-resources",  # declared, but no resources capability
    "name",  # a skill's last path segment is not its name
    "frontmatter",  # an entry's frontmatter differs from its SKILL.md
    "manifest",  # a supporting file is left out of the entry
    "digest",  # a wrong digest
    "size",  # a wrong size
    "cursor",  # pagination never ends: the first page comes back
    "cursor-cycle",  # pagination never ends: empty pages whose cursors go round
    "result-type",  # skills/list without resultType, ttlMs, cacheScope
    "get-error",  # skills/get of an unknown skill is not -32602
    "read-error",  # resources/read of an unknown file is not -32602
    "dir-read",  # declares directoryRead, answers a file URI as a directory
    "dir-mime",  # a subdirectory listed by resources/directory/read as a file
    "resource-meta",  # the SKILL.md resource is named after the file, not the skill
    "limits",  # a skill of 513 files
    "lost-file",  # a listed supporting file cannot be read
    "dynamic",  # a skill with "dynamic" resources
)
EXTENSION = "io.modelcontextprotocol/skills"


def _frontmatter(data: bytes) -> dict[str, Any]:
    import yaml

    text = data.decode("utf-8")
    front = text.split("---", 2)[1]
    parsed = yaml.safe_load(front)

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, datetime.date):
            return value.isoformat()
        return value

    return plain(parsed)


def snapshot(root: Path, breaks: set[str]) -> tuple[list[dict[str, Any]], dict[str, bytes]]:
    """Skill entries and the bytes of every file, by URI."""
    entries: list[dict[str, Any]] = []
    files: dict[str, bytes] = {}
    for skill_md in sorted(root.rglob("SKILL.md")):
        folder = skill_md.parent
        rel = folder.relative_to(root).as_posix()
        base = f"skill://{rel}"
        if "name" in breaks and not entries:
            base = f"skill://{rel}-renamed"
        resources = []
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            uri = f"{base}/{path.relative_to(folder).as_posix()}"
            data = path.read_bytes()
            files[uri] = data
            resources.append({"uri": uri, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)})
        entry = {"uri": f"{base}/SKILL.md", "frontmatter": _frontmatter(skill_md.read_bytes()), "resources": resources}
        entries.append(entry)
    if entries:
        first = entries[0]
        if "frontmatter" in breaks:
            first["frontmatter"] = {**first["frontmatter"], "description": "Something else"}
        if "manifest" in breaks:
            several = next(e for e in entries if len(e["resources"]) > 1)
            several["resources"] = [r for r in several["resources"] if r["uri"] == several["uri"]]
        if "digest" in breaks:
            first["resources"][0] = {**first["resources"][0], "digest": "sha256:" + "0" * 64}
        if "size" in breaks:
            first["resources"][0] = {**first["resources"][0], "size": first["resources"][0]["size"] + 1}
        if "dynamic" in breaks:
            first["resources"] = "dynamic"
    if "limits" in breaks:
        base = "skill://huge"
        body = b"---\nname: huge\ndescription: Too many files.\n---\nBody\n"
        files[f"{base}/SKILL.md"] = body
        resources = [
            {"uri": f"{base}/SKILL.md", "digest": "sha256:" + hashlib.sha256(body).hexdigest(), "size": len(body)}
        ]
        for i in range(512):
            uri = f"{base}/f{i}.txt"
            files[uri] = b"x"
            resources.append({"uri": uri, "digest": "sha256:" + hashlib.sha256(b"x").hexdigest(), "size": 1})
        entries.append(
            {
                "uri": f"{base}/SKILL.md",
                "frontmatter": {"name": "huge", "description": "Too many files."},
                "resources": resources,
            }
        )
    return entries, files


def build(root: Path, breaks: set[str] | frozenset[str] = frozenset(), page_size: int = 2) -> Any:
    """The server (``mcp.server.Server``) for the skills under ``root``."""
    import mcp_types as types
    from mcp.server import Server
    from mcp.shared.exceptions import MCPError

    class UriParams(types.RequestParams):
        uri: str
        cursor: str | None = None

    breaks = set(breaks)
    entries, files = snapshot(root, breaks)
    by_uri = {e["uri"]: e for e in entries}

    def mime(uri: str) -> str:
        return "text/markdown" if uri.endswith(".md") else "application/octet-stream"

    def resource(uri: str) -> Any:
        front = by_uri[uri]["frontmatter"] if uri in by_uri else None
        if front is None or "resource-meta" in breaks:
            return types.Resource(uri=uri, name=uri.rsplit("/", 1)[-1], mime_type=mime(uri))
        return types.Resource(uri=uri, name=front["name"], description=front["description"], mime_type=mime(uri))

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[resource(uri) for uri in files])

    async def read_resource(ctx: Any, params: Any) -> types.ReadResourceResult:
        uri = str(params.uri)
        if "lost-file" in breaks and not uri.endswith("/SKILL.md"):
            raise MCPError(-32602, f"No resource at {uri}")
        if uri not in files:
            if "read-error" in breaks:
                raise MCPError(-32603, f"internal trouble with {uri}")
            raise MCPError(-32602, f"No resource at {uri}")
        data = files[uri]
        try:
            content: Any = types.TextResourceContents(uri=uri, mime_type=mime(uri), text=data.decode("utf-8"))
        except UnicodeDecodeError:
            content = types.BlobResourceContents(uri=uri, mime_type=mime(uri), blob=base64.b64encode(data).decode())
        return types.ReadResourceResult(contents=[content])

    handlers: dict[str, Any] = {}
    if "no-resources" not in breaks:
        handlers = {"on_list_resources": list_resources, "on_read_resource": read_resource}
    server = Server("skills-fixture", version="1.0", **handlers)
    if "no-extension" not in breaks:
        server.extensions[EXTENSION] = {"directoryRead": True}

    def cacheable(result: dict[str, Any]) -> dict[str, Any]:
        if "result-type" in breaks:
            return result
        return {"resultType": "complete", **result, "ttlMs": 0, "cacheScope": "private"}

    async def skills_list(ctx: Any, params: Any) -> dict[str, Any]:
        cursor = getattr(params, "cursor", None)
        if "cursor-cycle" in breaks:
            return cacheable({"skills": [] if cursor else entries, "nextCursor": "b" if cursor == "a" else "a"})
        start = int(cursor) if cursor else 0
        page = entries[start : start + page_size]
        result: dict[str, Any] = {"skills": page}
        if start + page_size < len(entries):
            result["nextCursor"] = "0" if "cursor" in breaks else str(start + page_size)
        return cacheable(result)

    async def skills_get(ctx: Any, params: Any) -> dict[str, Any]:
        uri = params.uri
        entry = by_uri.get(uri)
        if entry is None:
            if "get-error" in breaks:
                raise MCPError(-32603, f"nothing at {uri}")
            raise MCPError(-32602, f"No skill is served at {uri}")
        return cacheable({"skill": entry})

    async def directory_read(ctx: Any, params: Any) -> dict[str, Any]:
        uri = params.uri
        prefix = uri.rstrip("/") + "/"
        children: dict[str, dict[str, Any]] = {}
        for file_uri in files:
            if file_uri.startswith(prefix):
                head, _, rest = file_uri[len(prefix) :].partition("/")
                child = prefix + head
                kind = "inode/directory" if rest and "dir-mime" not in breaks else mime(file_uri)
                children[child] = {"uri": child, "name": head, "mimeType": kind}
        if not children and not ("dir-read" in breaks and uri in files):
            raise MCPError(-32602, f"{uri} is not a directory resource")
        return {"resultType": "complete", "resources": list(children.values())}

    calls: list[tuple[str, str | None]] = []

    def recorded(method: str, handler: Any) -> Any:
        async def run(ctx: Any, params: Any) -> Any:
            calls.append((method, getattr(params, "uri", None)))
            return await handler(ctx, params)

        return run

    server.add_request_handler("skills/list", types.PaginatedRequestParams, recorded("skills/list", skills_list))
    server.add_request_handler("skills/get", UriParams, recorded("skills/get", skills_get))
    server.add_request_handler("resources/directory/read", UriParams, recorded("directory", directory_read))
    if "no-resources" not in breaks:
        server.add_request_handler(
            "resources/read", types.ReadResourceRequestParams, recorded("resources/read", read_resource)
        )
    server.calls = calls  # what clients asked, for tests of lazy retrieval
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("root", type=Path)
    parser.add_argument("--break", dest="breaks", action="append", default=[], choices=BREAKS)
    parser.add_argument("--page-size", type=int, default=2)
    parser.add_argument("--http", type=int, help="serve Streamable HTTP on this port of 127.0.0.1 (0: any)")
    args = parser.parse_args(argv)
    server = build(args.root, set(args.breaks), args.page_size)
    if args.http is None:
        import anyio
        from mcp.server.stdio import stdio_server

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
        return
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", args.http))
    sock.listen(128)  # a client that connects as soon as the URL is printed waits in the backlog
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])


if __name__ == "__main__":
    main()
