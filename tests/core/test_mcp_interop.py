"""Our MCP client against programs we did not write, from the npm registry (marked ``interop``; they skip with
the reason where npm or the registry is missing; CI installs them in ``.ci/run``):

- the official "everything" server (``@modelcontextprotocol/server-everything``): a server without the Skills
  extension is never sent ``skills/*`` and ``mcp check`` says why; the openexperts binding reads its tools
  and keeps its image, resource-link and embedded-resource results;
- the official conformance suite (``@modelcontextprotocol/conformance``, pre-release line, on Node 22 from
  the registry): its SEP-2640 client scenarios against agentpack's host path, every check passing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentpack.testing import npm_tools, served_url

pytestmark = [pytest.mark.interop, pytest.mark.slow]

HERE = Path(__file__).parent / "mcpskills"
SKILL_SCENARIOS = [
    "sep-2640-client-no-prefetch",
    "sep-2640-client-verify-digest",
    "sep-2640-client-verify-size",
    "sep-2640-client-verify-frontmatter",
]


@pytest.fixture(scope="module")
def tools() -> Path:
    pytest.importorskip("mcp")
    return npm_tools(HERE / "package.json")


def everything(tools: Path) -> list[str]:
    return [str(tools / "node"), str(tools / "mcp-server-everything"), "stdio"]


def agentpack(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTPACK_MCP_CACHE": str(tmp_path / "cache")}
    return subprocess.run(
        [sys.executable, "-m", "agentpack", *args], capture_output=True, text=True, env=env, timeout=300
    )


def test_a_server_without_the_extension_gets_no_skills_call_and_a_located_report(tools, tmp_path):
    command = " ".join(everything(tools))
    check = agentpack("mcp", "check", command, "--label", "everything", "-o", "json", tmp_path=tmp_path)
    assert check.returncode == 1, check.stderr
    (item,) = json.loads(check.stdout)["items"]
    assert [(f["code"], f["file"], f["pointer"]) for f in item["findings"]] == [
        ("MCS001", "mcp:everything", "/capabilities/extensions")
    ]
    validate = agentpack("validate", "--mcp", f"everything={command}", tmp_path=tmp_path)
    assert validate.returncode == 2 and "does not declare the Skills extension" in validate.stderr


def test_the_openexperts_binding_reads_the_reference_server(tools):
    from agentpack_openexperts.runtime.mcp_bridge import McpBinding

    binding = McpBinding(everything(tools))
    try:
        assert {"echo", "get-tiny-image", "get-resource-links"} <= set(binding.tools)
        assert binding.call("echo", {"message": "hi"}) == {"text": "Echo: hi"}
        image = binding.call("get-tiny-image", {})
        assert any(block["type"] == "image" and block["mimeType"] == "image/png" for block in image["content"])
        links = binding.call("get-resource-links", {})
        assert any(block["type"] == "resource_link" for block in links["content"])
    finally:
        binding.close()


@pytest.mark.parametrize("scenario", SKILL_SCENARIOS)
def test_the_conformance_suite_s_skills_client_scenarios(tools, tmp_path, scenario):
    client = f"{sys.executable} {HERE / 'conformance_client.py'}"
    run = subprocess.run(
        [str(tools / "node"), str(tools / "conformance"), "client", "--command", client, "--scenario", scenario],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # the suite writes results/ there
        env={**os.environ, "AGENTPACK_MCP_CACHE": str(tmp_path / "cache")},
        timeout=300,
    )
    said = run.stdout + run.stderr  # the suite prints its results on stderr
    assert run.returncode == 0, said[-4000:]
    assert ", 0 failed" in said and "OVERALL: PASSED" in said and "Passed: 0/" not in said


@pytest.fixture
def fixture_url(tmp_path):
    """Our fixture skills server over Streamable HTTP, the first listed skill with a subdirectory."""
    root = tmp_path / "served"
    for rel, extra in [("alpha", "references/guide.md"), ("team/beta", None)]:
        folder = root / rel
        folder.mkdir(parents=True)
        name = rel.rsplit("/", 1)[-1]
        (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: The {name} skill.\n---\nBody\n")
        if extra:
            (folder / extra).parent.mkdir(parents=True)
            (folder / extra).write_text("guide\n")
    with served_url([sys.executable, str(HERE / "server.py"), str(root), "--http", "0"]) as url:
        yield url


@pytest.mark.parametrize(
    "scenario", ["sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory"]
)
def test_the_server_mcp_check_calls_clean_passes_the_suite_s_skills_server_scenarios(
    tools, tmp_path, fixture_url, scenario
):
    """The conforming fixture behind the checker's clean report is conforming by the official suite too."""
    run = subprocess.run(
        [str(tools / "node"), str(tools / "conformance"), "server", "--url", fixture_url, "--scenario", scenario],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    said = run.stdout + run.stderr
    assert run.returncode == 0, said[-4000:]
    assert ", 0 failed, 0 warnings" in said, said[-4000:]
    check = agentpack("mcp", "check", fixture_url, "-o", "json", tmp_path=tmp_path)
    assert check.returncode == 0 and json.loads(check.stdout)["items"][0]["findings"] == []
