"""agentpack as a host of MCP-served Agent Skills (SEP-2640): listing, lazy and verified reads, the cache,
origin tags, and the commands that read skills from folders (validate, skill-md to-prompt) with --mcp."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentpack.io.errors import AgentpackError
from agentpack.mcp.client import ServerSpec, parse_server, parse_servers
from agentpack.mcp.skillcache import SkillCache
from agentpack.mcp.skillsource import VerificationError, open_sources
from agentpack.testing import served_url

pytest.importorskip("mcp")

SERVER = Path(__file__).parent / "mcpskills" / "server.py"


def write_skill(root: Path, rel: str, front: str, body: str = "Body\n", files: dict[str, str] | None = None) -> Path:
    folder = root / rel
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\n{front}---\n{body}")
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


@pytest.fixture
def skills(tmp_path: Path) -> Path:
    root = tmp_path / "served"
    write_skill(
        root,
        "alpha",
        "name: alpha\ndescription: Alpha skill.\nmetadata:\n  version: 1.0\n",
        files={"references/guide.md": "guide\n"},
    )
    write_skill(root, "acme/beta", "name: beta\ndescription: Beta skill.\nlicense: MIT\nallowed-tools: Bash\n")
    write_skill(root, "gamma", "name: gamma\ndescription: Gamma skill.\n")
    return root


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SkillCache:
    monkeypatch.setenv("AGENTPACK_MCP_CACHE", str(tmp_path / "cache"))
    return SkillCache()


def sources(servers: dict[str, object], cache: SkillCache):
    specs = [ServerSpec(label, "unused") for label in servers]
    return open_sources(specs, cache=cache, targets=dict(servers))


def test_every_page_is_listed_and_nothing_is_fetched_ahead_of_need(skills_server, skills, cache):
    server = skills_server.build(skills, page_size=1)
    with sources({"docs": server}, cache) as (source,):
        listed = source.skills()
    assert [s.location for s in listed] == [
        "mcp:docs:skill://acme/beta/SKILL.md",
        "mcp:docs:skill://alpha/SKILL.md",
        "mcp:docs:skill://gamma/SKILL.md",
    ]
    assert [m for m, _ in server.calls] == ["skills/list"] * 3
    assert not cache.root.exists()


def test_a_read_is_verified_and_cached_under_label_and_uri(skills_server, skills, cache):
    server = skills_server.build(skills)
    with sources({"docs": server}, cache) as (source,):
        alpha = next(s for s in source.skills() if s.name == "alpha")
        data = source.read(alpha, "skill://alpha/references/guide.md")
        again = source.read(alpha, "skill://alpha/references/guide.md")
    assert data == again == b"guide\n"
    assert server.calls.count(("resources/read", "skill://alpha/references/guide.md")) == 1  # the second from the cache
    assert (
        cache.path("docs", "skill://alpha/references/guide.md") == cache.root / "docs/skill/alpha/references/guide.md"
    )


def test_a_tampered_cache_file_is_fetched_again(skills_server, skills, cache):
    server = skills_server.build(skills)
    with sources({"docs": server}, cache) as (source,):
        gamma = next(s for s in source.skills() if s.name == "gamma")
        source.read(gamma, gamma.entry.uri)
        cache.path("docs", gamma.entry.uri).write_bytes(b"---\nname: gamma\ndescription: Evil.\n---\nrm -rf\n")
        assert source.read(gamma, gamma.entry.uri).startswith(b"---\nname: gamma\ndescription: Gamma skill.")
    assert server.calls.count(("resources/read", gamma.entry.uri)) == 2


@pytest.mark.parametrize(
    ("broken", "message"),
    [
        ("digest", "the bytes hash to sha256:"),
        ("size", "bytes, the entry says"),
        ("frontmatter", "differs from the entry's in description"),
    ],
)
def test_content_that_is_not_what_the_entry_says_is_not_used(skills_server, skills, cache, broken, message):
    with sources({"docs": skills_server.build(skills, {broken})}, cache) as (source,):
        beta = source.skills()[0]
        with pytest.raises(VerificationError, match=message):
            source.read(beta, beta.entry.uri)
    assert not cache.path("docs", beta.entry.uri).exists()


def test_an_unlisted_file_is_a_verification_failure_and_never_read(skills_server, skills, cache):
    server = skills_server.build(skills, {"manifest"})
    with sources({"docs": server}, cache) as (source,):
        alpha = next(s for s in source.skills() if s.name == "alpha")
        with pytest.raises(VerificationError, match="an unlisted file is never read"):
            source.read(alpha, "skill://alpha/references/guide.md")
    assert ("resources/read", "skill://alpha/references/guide.md") not in server.calls


def test_no_skills_call_before_the_server_declares_the_extension(skills_server, skills, cache):
    server = skills_server.build(skills, {"no-extension"})
    with (
        sources({"docs": server}, cache) as (source,),
        pytest.raises(AgentpackError, match="does not declare the Skills extension"),
    ):
        source.skills()
    assert server.calls == []


def test_a_listing_that_never_ends_is_an_error(skills_server, skills, cache):
    from agentpack.mcp.client import PaginationError

    with (
        sources({"docs": skills_server.build(skills, {"cursor-cycle"})}, cache) as (source,),
        pytest.raises(PaginationError, match="returned the cursor 'a' twice"),
    ):
        source.skills()


@pytest.mark.parametrize(("broken", "reason"), [("dynamic", '"dynamic"'), ("limits", "more than the 512")])
def test_dynamic_and_oversized_skills_are_declined_with_the_reason(skills_server, skills, cache, broken, reason):
    with sources({"docs": skills_server.build(skills, {broken})}, cache) as (source,):
        names = [s.name for s in source.skills()]
        assert [d.reason for d in source.declined if reason in d.reason]
    assert len(names) == 3 - (broken == "dynamic")


def test_same_uri_on_two_servers_are_two_skills_in_two_cache_folders(skills_server, skills, cache):
    servers = {"one": skills_server.build(skills), "two": skills_server.build(skills)}
    with sources(servers, cache) as (one, two):
        a, b = one.skills()[2], two.skills()[2]
        assert a.entry.uri == b.entry.uri and a.key != b.key
        assert one.materialize(a) != two.materialize(b)
        assert one.origin_of(a, str(one.materialize(a) / "SKILL.md")) == "mcp:one:skill://gamma/SKILL.md"


def test_server_names_on_the_command_line():
    assert parse_server("docs=https://x.org/mcp").is_url
    assert parse_server("local=python -m srv --flag 'a b'").argv() == ["python", "-m", "srv", "--flag", "a b"]
    for bad, message in [("nolabel", "LABEL=COMMAND_OR_URL"), ("a b=x", "must be 1 to 64"), ("x=", "LABEL=")]:
        with pytest.raises(AgentpackError, match=message):
            parse_server(bad)
    with pytest.raises(AgentpackError, match="names two servers"):
        parse_servers(["a=x", "a=y"])


def test_the_cache_never_sits_in_a_folder_scanned_for_local_skills(tmp_path):
    SkillCache(tmp_path / ".cache" / "mcp").refuse_inside([tmp_path])  # discovery never enters a hidden folder
    with pytest.raises(AgentpackError, match="scanned for local skills"):  # but for the hidden skill roots
        SkillCache(tmp_path / "app" / ".claude" / "skills" / "c").refuse_inside([tmp_path], (".claude/skills",))
    with pytest.raises(AgentpackError, match="scanned for local skills"):
        SkillCache(tmp_path / "skills" / "cache").refuse_inside([tmp_path / "skills"])


# -- the commands, over real transports ------------------------------------------------------------------------


def agentpack(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agentpack", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
    )


def stdio(root: Path, *flags: str) -> str:
    return " ".join([sys.executable, str(SERVER), str(root), *flags])


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"AGENTPACK_MCP_CACHE": str(tmp_path / "cache")}


def findings(report: dict) -> list[tuple[str, str, int | None]]:
    return sorted(
        (f["code"], f["message"], f["line"])
        for item in report["items"]
        for f in item["findings"]
        if f["code"] != "MCP010"
    )


def test_validate_gives_the_verdicts_of_the_same_files_on_disk(tmp_path, env):
    root = tmp_path / "served"
    write_skill(root, "good", "name: good\ndescription: Fine.\n")
    write_skill(root, "Upper", "name: Upper\ndescription: Bad name.\n")
    write_skill(root, "elsewhere", "name: other\ndescription: Folder and name differ.\n")
    write_skill(root, "extra", "name: extra\ndescription: x\nversion: 2\n")
    local = agentpack("validate", str(root), "-o", "json", env=env)
    remote = agentpack("validate", "--mcp", f"docs={stdio(root)}", "-o", "json", env=env)
    assert local.returncode == remote.returncode == 1, remote.stderr
    assert findings(json.loads(remote.stdout)) == findings(json.loads(local.stdout))
    files = {f["file"] for item in json.loads(remote.stdout)["items"] for f in item["findings"]}
    assert files == {
        "mcp:docs:skill://Upper/SKILL.md",
        "mcp:docs:skill://elsewhere/SKILL.md",
        "mcp:docs:skill://extra/SKILL.md",
    }


def test_validate_reports_a_verification_failure_at_its_origin(skills, env):
    result = agentpack("validate", "--mcp", f"docs={stdio(skills, '--break', 'digest')}", env=env)
    assert result.returncode == 1
    assert "mcp:docs:skill://acme/beta/SKILL.md: error MCP001" in result.stdout
    assert "mcp:docs:skill://acme/beta/SKILL.md: info MCP010 'allowed-tools' is ignored" in result.stdout


def test_to_prompt_tags_the_origin_and_never_shadows_a_local_skill(tmp_path, skills, env):
    local = write_skill(tmp_path / "local", "gamma", "name: gamma\ndescription: My own gamma.\n")
    result = agentpack("skill-md", "to-prompt", str(local), "--mcp", f"docs={stdio(skills)}", "--json", env=env)
    assert result.returncode == 0, result.stderr
    entries = {e["name"]: e for e in json.loads(result.stdout)["skills"]}
    assert entries["gamma"]["description"] == "My own gamma." and entries["gamma"]["origin"] == "local"
    assert entries["docs:gamma"]["location"] == "mcp:docs:skill://gamma/SKILL.md"
    assert entries["beta"]["origin"] == "mcp:docs" and "allowed-tools" not in entries["beta"]
    assert "another skill is named 'gamma'; offered as 'docs:gamma'" in result.stderr
    assert not (tmp_path / "cache").exists()  # the prompt needs the listing only


def test_streamable_http_and_a_server_that_cannot_be_reached(skills, env):
    with served_url([sys.executable, str(SERVER), str(skills), "--http", "0"]) as url:
        result = agentpack("validate", "--mcp", f"web={url}", env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "mcp:web:skill://alpha/SKILL.md (agent-skill): ok" in result.stdout
    gone = agentpack("validate", "--mcp", f"web={url}", env=env)
    assert gone.returncode == 2 and "mcp:web: cannot connect to" in gone.stderr
    bad = agentpack("validate", "--mcp", "no label", env=env)
    assert bad.returncode == 2 and "LABEL=COMMAND_OR_URL" in bad.stderr


def test_read_properties_of_a_served_skill_by_its_uri(skills, env):
    server = f"docs={stdio(skills)}"
    result = agentpack("skill-md", "read-properties", "mcp:docs:skill://acme/beta/SKILL.md", "--mcp", server, env=env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "beta", "description": "Beta skill.", "license": "MIT"}
    unknown = agentpack("skill-md", "read-properties", "mcp:docs:skill://nope/SKILL.md", "--mcp", server, env=env)
    assert unknown.returncode == 2 and "No skill is served at skill://nope/SKILL.md (error -32602)" in unknown.stderr
    unlabelled = agentpack(
        "skill-md", "read-properties", "mcp:other:skill://acme/beta/SKILL.md", "--mcp", server, env=env
    )
    assert unlabelled.returncode == 2 and "no --mcp server is labelled 'other'" in unlabelled.stderr
    tampered = f"docs={stdio(skills, '--break', 'frontmatter')}"
    bad = agentpack("skill-md", "read-properties", "mcp:docs:skill://acme/beta/SKILL.md", "--mcp", tampered, env=env)
    assert bad.returncode == 2 and "differs from the entry's in description" in bad.stderr


def test_validate_names_each_declined_entry_and_why(skills, env):
    result = agentpack("validate", "--mcp", f"docs={stdio(skills, '--break', 'dynamic')}", "-o", "json", env=env)
    assert result.returncode == 1
    items = {item["path"]: item for item in json.loads(result.stdout)["items"]}
    (finding,) = items["mcp:docs:skill://acme/beta/SKILL.md"]["findings"]
    assert finding["code"] == "MCP002" and '"dynamic"' in finding["message"]
    assert items["mcp:docs:skill://alpha/SKILL.md"]["ok"]


def test_validate_refuses_a_cache_inside_the_folder_it_validates(tmp_path, skills):
    local = tmp_path / "local"
    local.mkdir()
    env = {"AGENTPACK_MCP_CACHE": str(local / "cache")}
    result = agentpack("validate", str(local), "--mcp", f"docs={stdio(skills)}", env=env)
    assert result.returncode == 2 and "scanned for local skills" in result.stderr
    assert not (local / "cache").exists()


def test_validate_reports_a_listed_file_the_server_cannot_read(skills, env):
    result = agentpack("validate", "--mcp", f"docs={stdio(skills, '--break', 'lost-file')}", "-o", "json", env=env)
    assert result.returncode == 1
    items = {item["path"]: item for item in json.loads(result.stdout)["items"]}
    (finding,) = items["mcp:docs:skill://alpha/SKILL.md"]["findings"]
    assert finding["code"] == "MCP003" and "skill://alpha/references/guide.md" in finding["message"]
    assert items["mcp:docs:skill://gamma/SKILL.md"]["ok"]
