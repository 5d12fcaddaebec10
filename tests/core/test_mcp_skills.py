"""``agentpack mcp serve`` publishes Agent Skills through the MCP Skills extension (SEP-2640).

Driven with the official Python SDK client: in process, over stdio (a real server process) and
over Streamable HTTP (a real server on 127.0.0.1), on both protocol eras.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml

from agentpack.kernel.registry import McpContext
from agentpack.mcp.publish import collect
from agentpack.mcp.server import build_server

ROOT = Path(__file__).resolve().parents[2]
DCI_SKILLS = ROOT / "examples" / "dci" / "workspace" / "skills"
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


async def request(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request the SDK has no method for (the extension's), answered as a plain dict."""
    import mcp_types as types
    from pydantic import TypeAdapter

    class Raw(types.Request[Any, Any]):
        method: str
        params: Any = None

    result: dict[str, Any] = await client.session.send_request(Raw(method=method, params=params), TypeAdapter(dict))
    return result


async def every_skill(client: Any) -> list[dict[str, Any]]:
    skills: list[dict[str, Any]] = []
    params: dict[str, Any] = {}
    while True:
        page = await request(client, "skills/list", params)
        assert page["resultType"] == "complete" and page["ttlMs"] >= 0 and page["cacheScope"] in ("public", "private")
        skills += page["skills"]
        if not page.get("nextCursor"):
            return skills
        params = {"cursor": page["nextCursor"]}


async def every_resource(client: Any) -> list[Any]:
    found: list[Any] = []
    cursor = None
    while True:
        page = await client.list_resources(cursor=cursor)
        found += page.resources
        if not page.next_cursor:
            return found
        cursor = page.next_cursor


async def read_bytes(client: Any, uri: str) -> bytes:
    content = (await client.read_resource(uri)).contents[0]
    return content.text.encode("utf-8") if hasattr(content, "text") else base64.b64decode(content.blob)


def frontmatter_of(data: bytes) -> dict[str, Any]:
    """What a standard YAML parser reads from a SKILL.md (dates as ISO text, as JSON carries them)."""
    loaded = yaml.safe_load(data.decode("utf-8").split("---", 2)[1])
    converted: dict[str, Any] = json.loads(json.dumps(loaded, default=lambda value: value.isoformat()))
    return converted


async def check_server(client: Any) -> list[dict[str, Any]]:
    """The SEP-2640 server rules, as a host checks them: returns the entries."""
    assert client.server_capabilities.resources is not None
    skills = await every_skill(client)
    for entry in skills:
        uri, front = entry["uri"], entry["frontmatter"]
        assert uri.startswith("skill://") and uri.endswith("/SKILL.md")
        assert uri.rsplit("/", 2)[1] == front["name"] and isinstance(front["description"], str)
        listed = {r["uri"]: r for r in entry["resources"]}
        assert uri in listed and len(listed) == len(entry["resources"]) <= 512
        assert sum(r["size"] for r in entry["resources"]) <= 16 * 1024 * 1024
        for resource in entry["resources"]:
            data = await read_bytes(client, resource["uri"])
            assert len(data) == resource["size"]
            assert resource["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
            if resource["uri"] == uri:
                assert frontmatter_of(data) == front
        assert (await request(client, "skills/get", {"uri": uri}))["skill"] == entry
    return skills


def test_a_folder_of_skills_over_stdio_on_both_eras():
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

    argv = ["-m", "agentpack", "mcp", "serve", "--pack", str(DCI_SKILLS), "--option", "mcp.page_size=3"]
    params = StdioServerParameters(command=sys.executable, args=argv, env={**os.environ})

    async def main(mode: str) -> tuple[Any, ...]:
        async with Client(params, mode=mode) as client:
            skills = await check_server(client)
            with pytest.raises(MCPError) as unknown:
                await request(client, "skills/get", {"uri": "skill://nope/SKILL.md"})
            root = await request(client, "resources/directory/read", {"uri": "skill://research"})
            with pytest.raises(MCPError) as not_a_directory:
                await request(client, "resources/directory/read", {"uri": "skill://research/web-search/SKILL.md"})
            listed = [r.uri for r in await every_resource(client)]
            return client.server_capabilities, client.instructions, skills, unknown, root, not_a_directory, listed

    for mode in ("auto", "legacy"):
        capabilities, instructions, skills, unknown, root, not_a_directory, listed = anyio.run(main, mode)
        names = sorted(s["frontmatter"]["name"] for s in skills)
        assert len(names) == 10 and "web-search" in names  # recursively, through the category folders
        assert "skill://research/web-search/SKILL.md" in {s["uri"] for s in skills}
        assert unknown.value.error.code == -32602 and "skill://nope/SKILL.md" in unknown.value.error.message
        assert not_a_directory.value.error.code == -32602
        assert [r["uri"] for r in root["resources"]] == [
            "skill://research/deep-research",
            "skill://research/web-search",
        ]
        assert {r["mimeType"] for r in root["resources"]} == {"inode/directory"}
        assert set(listed) >= {s["uri"] for s in skills}  # ordinary resources for any host
        assert "skill://research/web-search/SKILL.md" in instructions
        if mode == "auto":  # 2026-07-28: the extension is declared; 2025 handshakes have no extensions field
            assert capabilities.extensions == {"io.modelcontextprotocol/skills": {"directoryRead": True}}


def test_every_pack_kind_over_streamable_http():
    """ECP pack, openexperts package and one skill, on one real server process."""
    from mcp import Client

    packs = [
        ROOT / "examples" / "ecp" / "conformance-pack",
        ROOT / "examples" / "openexperts" / "acme-support",
        DCI_SKILLS / "writing" / "translator",
    ]
    argv = [sys.executable, "-m", "agentpack", "mcp", "serve", "--transport", "streamable-http", "--port", "0"]
    for pack in packs:
        argv += ["--pack", str(pack)]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env={**os.environ})
    try:
        line = proc.stderr.readline()
        assert "serving on http://127.0.0.1:" in line, line
        url = line.split("serving on ", 1)[1].strip()

        async def main() -> tuple[Any, ...]:
            async with Client(url) as client:
                skills = await check_server(client)
                resources = {r.uri for r in await every_resource(client)}
                summary = await read_bytes(client, "ecp://conformance-pack/expert/context/summaries/overview.md")
                prompts = {p.name for p in (await client.list_prompts()).prompts}
                triage = await client.get_prompt("acme-support_triage-ticket", {"ticket_id": "T-1"})
                tools = {t.name for t in (await client.list_tools()).tools}
                return skills, resources, summary, prompts, triage, tools

        skills, resources, summary, prompts, triage, tools = anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stderr.close()
    uris = {s["uri"] for s in skills}
    assert "skill://conformance-pack/SKILL.md" in uris  # the ECP pack's own skill
    assert "skill://translator/SKILL.md" in uris  # one skill
    assert {"skill://acme-support/classify-ticket/SKILL.md", "skill://acme-support/draft-reply/SKILL.md"} <= uris
    ecp = next(s for s in skills if s["uri"] == "skill://conformance-pack/SKILL.md")
    assert not any("/expert/logs/" in r["uri"] for r in ecp["resources"])  # its .gitignore: runtime state
    assert "openexperts://acme-support/knowledge/troubleshooting-guide.md" in resources
    assert summary.startswith(b"#") or summary
    assert {"conformance-pack", "translator", "acme-support_triage-ticket"} <= prompts
    assert "T-1" in triage.messages[0].content.text
    assert {"expert_query", "experts_dry_run"} <= tools and all(TOOL_NAME.match(t) for t in tools)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def skill_md(name: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: The {name} skill.\n{extra}---\n\n# {name}\n"


def served(host: Any, *packs: Path, **options: str) -> Any:
    return build_server(host, McpContext(packs=list(packs), options=options))


def test_what_is_published_and_what_is_not(agentpack_host, tmp_path, caplog):
    from mcp import Client

    tree = tmp_path / "skills"
    write(tree / "outer" / "SKILL.md", skill_md("outer", "metadata:\n  version: 1.0\n  released: 2024-01-31\n"))
    write(tree / "outer" / "logo.png", b"\x89PNG\r\n\x1a\n\x00\xff")
    write(tree / "outer" / "inner" / "SKILL.md", skill_md("inner", "license: Apache-2.0\n"))
    write(tree / "outer" / ".cache" / "state", "runtime")
    write(tree / "wrong-name" / "SKILL.md", skill_md("other"))
    write(tree / "broken" / "SKILL.md", "no frontmatter\n")
    write(tree / "big" / "SKILL.md", skill_md("big"))
    for n in range(512):
        write(tree / "big" / "parts" / f"{n}.txt", "x")
    secret = write(tmp_path / "secret.txt", "outside")
    write(tree / "linked" / "SKILL.md", skill_md("linked"))
    write(tree / "linked" / "real.md", "inside")
    (tree / "linked" / "alias.md").symlink_to(tree / "linked" / "real.md")
    (tree / "linked" / "escape.md").symlink_to(secret)

    async def main() -> tuple[Any, ...]:
        async with Client(served(agentpack_host, tree)) as client:
            skills = {s["frontmatter"]["name"]: s for s in await check_server(client)}
            logo = (await client.read_resource("skill://outer/logo.png")).contents[0]
            inside = await request(client, "resources/directory/read", {"uri": "skill://outer"})
            return skills, logo, inside

    skills, logo, inside = anyio.run(main)
    assert sorted(skills) == ["inner", "linked", "outer"]
    outer, inner = skills["outer"], skills["inner"]
    # the frontmatter as a YAML parser types it; nested skills are published flat, and their files are
    # supporting files of the enclosing skill
    assert outer["frontmatter"]["metadata"] == {"version": 1.0, "released": "2024-01-31"}
    assert inner["uri"] == "skill://outer/inner/SKILL.md"
    assert {r["uri"] for r in outer["resources"]} == {
        "skill://outer/SKILL.md",
        "skill://outer/logo.png",
        "skill://outer/inner/SKILL.md",
    }
    assert logo.blob and logo.mime_type == "image/png"
    assert [(r["name"], r["mimeType"]) for r in inside["resources"]] == [
        ("SKILL.md", "text/markdown"),
        ("inner", "inode/directory"),
        ("logo.png", "image/png"),
    ]
    linked = {r["uri"] for r in skills["linked"]["resources"]}
    assert "skill://linked/alias.md" in linked and "skill://linked/escape.md" not in linked
    said = caplog.text
    assert "skill " in said and "wrong-name is not published" in said and "must match the skill name" in said
    assert "broken is not published" in said and "big is not published: 513 files" in said
    assert "escape.md is not published: a link out of its folder" in said


def test_a_change_makes_a_new_snapshot_and_says_list_changed(agentpack_host, tmp_path):
    from mcp import Client

    tree = tmp_path / "skills"
    write(tree / "first" / "SKILL.md", skill_md("first"))
    server = served(agentpack_host, tree, **{"mcp.watch_seconds": "0.05"})

    async def main(mode: str) -> tuple[list[str], list[str]]:
        changed = anyio.Event()

        async def on_message(message: Any) -> None:
            if getattr(getattr(message, "root", message), "method", "") == "notifications/resources/list_changed":
                changed.set()

        async with Client(server, mode=mode, message_handler=on_message) as client:
            before = [s["uri"] for s in await every_skill(client)]
            if mode == "auto":
                async with client.listen(resources_list_changed=True) as events:
                    write(tree / "second" / "SKILL.md", skill_md("second"))
                    with anyio.fail_after(60):
                        await events.__anext__()
            else:
                write(tree / "third" / "SKILL.md", skill_md("third"))
                with anyio.fail_after(60):
                    await changed.wait()
            after = [s["uri"] for s in await every_skill(client)]
            return before, after

    before, after = anyio.run(main, "auto")
    assert before == ["skill://first/SKILL.md"] and after == ["skill://first/SKILL.md", "skill://second/SKILL.md"]
    before, after = anyio.run(main, "legacy")
    assert after[-1] == "skill://third/SKILL.md"


def test_reads_come_from_the_snapshot_the_listing_described(agentpack_host, tmp_path):
    """A file changed on disk is not served until a new snapshot (and its listing) describes it."""
    from mcp import Client

    tree = tmp_path / "skills"
    path = write(tree / "first" / "SKILL.md", skill_md("first"))
    server = served(agentpack_host, tree, **{"mcp.watch_seconds": "0"})

    async def main() -> tuple[dict[str, Any], bytes]:
        async with Client(server) as client:
            (entry,) = await every_skill(client)
            path.write_text(skill_md("first", "license: MIT\n"), encoding="utf-8")
            return entry, await read_bytes(client, entry["uri"])

    entry, data = anyio.run(main)
    assert entry["resources"][0]["digest"] == "sha256:" + hashlib.sha256(data).hexdigest()
    assert b"license" not in data


def test_pagination_cursors_and_bad_cursors(agentpack_host):
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    async def main() -> tuple[int, int, Any]:
        async with Client(served(agentpack_host, DCI_SKILLS, **{"mcp.page_size": "4"})) as client:
            first = await request(client, "skills/list", {})
            with pytest.raises(MCPError) as bad:
                await request(client, "skills/list", {"cursor": "not a cursor"})
            return len(first["skills"]), len(await every_skill(client)), bad.value.error

    page, total, bad = anyio.run(main)
    assert (page, total) == (4, 10)
    assert bad.code == -32602 and "cursor" in bad.message


def test_every_registered_tool_name_is_one_every_host_accepts(agentpack_host):
    """Each plugin's tools, for every example pack and for none."""
    examples = ROOT / "examples"
    contexts = [McpContext()] + [
        McpContext(packs=[p])
        for p in (examples / "ecp" / "conformance-pack", examples / "openexperts" / "acme-support", examples / "skills")
    ]
    seen = set()
    for context in contexts:
        for name, tool in agentpack_host.mcp_tools(context).items():
            assert TOOL_NAME.match(name), f"{tool.plugin} registers the tool name {name!r}"
            seen.add(name)
    assert {"expert_query", "experts_dry_run", "fs_hash_tree"} <= seen


def test_long_tools_send_progress_when_asked(agentpack_host):
    from mcp import Client

    package = ROOT / "examples" / "openexperts" / "acme-support"
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append((done, total, message))

    async def main() -> Any:
        async with Client(served(agentpack_host, package)) as client:
            arguments = {"process": "triage-ticket", "inputs": {"ticket_id": "T-1", "customer_id": "C-1"}}
            return await client.call_tool("experts_dry_run", arguments, progress_callback=progress)

    result = anyio.run(main)
    assert not result.is_error
    assert seen[0][0] == 0 and seen[-1][:2] == (3, 3) and all(m for _, _, m in seen)


def test_the_cli_says_why_a_skill_is_left_out_and_refuses_a_bad_option(tmp_path):
    write(tmp_path / "skills" / "wrong" / "SKILL.md", skill_md("other"))
    argv = [sys.executable, "-m", "agentpack", "mcp", "serve", "--pack", str(tmp_path / "skills")]
    served_once = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert served_once.returncode == 0
    assert "wrong is not published: " in served_once.stderr and "SKILL.md:2: directory name 'wrong' must match" in (
        served_once.stderr
    )
    bad = subprocess.run(
        [*argv, "--option", "mcp.page_size=abc"], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2 and "an MCP server option must be a positive number, not 'abc'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_the_instructions_name_the_first_skill_uris_and_say_how_many_more(agentpack_host, tmp_path):
    for n in range(53):
        write(tmp_path / "skills" / f"s{n:02d}" / "SKILL.md", skill_md(f"s{n:02d}"))
    text = served(agentpack_host, tmp_path / "skills").instructions
    assert "- skill://s49/SKILL.md" in text and "skill://s50/SKILL.md" not in text
    assert text.endswith("- and 3 more: skills/list (or resources/list) has them all")


def test_an_expert_pack_publishes_its_skill_without_its_runtime_state(agentpack_host, tmp_path):
    """Logs, staging and backups (what a package of the pack leaves out) are not part of its skill."""
    import shutil

    from mcp import Client

    pack = Path(shutil.copytree(ROOT / "examples" / "ecp" / "conformance-pack", tmp_path / "conformance-pack"))
    server = served(agentpack_host, pack, **{"mcp.watch_seconds": "0"})

    async def main() -> dict[str, Any]:
        async with Client(server) as client:
            (entry,) = await every_skill(client)
            return entry

    before = anyio.run(main)
    listed = {r["uri"] for r in before["resources"]}
    assert "skill://conformance-pack/expert/EXPERT.yaml" in listed
    write(pack / "expert" / "logs" / "2026-11-28.jsonl", '{"event": "query"}\n')
    write(pack / "expert" / "context" / "indexes" / "corpus-fts" / ".backup" / "index.json", "{}")
    write(pack / "expert" / "sources" / "corpus" / "notes.md", "# A new source file\n")
    after = collect(agentpack_host, McpContext(packs=[pack])).snapshot.skills[before["uri"]].entry()
    grown = {r["uri"] for r in after["resources"]} - listed
    assert grown == {"skill://conformance-pack/expert/sources/corpus/notes.md"}  # content, not runtime state
