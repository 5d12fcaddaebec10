"""The official MCP conformance suite's server scenarios against ``agentpack mcp serve``, four pack kinds.

``@modelcontextprotocol/conformance`` (the pre-release line, with the 2026-07-28 and SEP-2640
scenarios) and Node 22 come from the npm registry; the test skips with the reason where it cannot
be reached. The suite's server leg speaks Streamable HTTP only (``--url``): stdio is covered by
``test_mcp_skills.py`` with the official Python client.

Applicable scenarios: those that exercise what a server declares. Left out: scenarios that call the
suite's own fixture tools, resources and prompts (``test_simple_text``, ``test://static-text`` ...),
``resources/subscribe`` (not declared), logging (deprecated), elicitation, sampling, tasks and
input-required flows (not used by any agentpack tool). Inside a scenario, a check the suite itself
reports as "Not testable" (a diagnostic fixture tool the server does not have) is not applicable;
every other check must pass.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agentpack.testing import npm_tools

pytestmark = pytest.mark.interop

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = [
    "server-initialize",
    "server-session-lifecycle",
    "ping",
    "tools-list",
    "resources-list",
    "prompts-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
    "caching",
    "server-stateless",
    "sep-2164-resource-not-found",
    "http-header-validation",
    "sep-2640-skills-enumeration",
    "sep-2640-skills-manifest",
    "sep-2640-skills-directory",
]


def skills_folder(target: Path) -> Path:
    """A folder of plain SKILL.md skills in category folders, each with supporting files in a subfolder."""
    for category, name in (("research", "web-search"), ("research", "deep-research"), ("writing", "summarizer")):
        skill = target / category / name
        (skill / "references").mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: The {name} skill, with a reference.\nlicense: Apache-2.0\n"
            f"metadata:\n  version: 1.0\n---\n\n# {name}\n\nRead [the guide](references/GUIDE.md).\n",
            encoding="utf-8",
        )
        (skill / "references" / "GUIDE.md").write_text(f"# Guide to {name}\n", encoding="utf-8")
    return target


@pytest.fixture(scope="module")
def suite() -> Path:
    return npm_tools(ROOT / "tests" / "core" / "mcpskills" / "package.json")  # its .bin: the suite and Node 22


@pytest.mark.parametrize("kind", ["ecp", "skill-yaml-tree", "openexperts", "skill-md-folder"])
def test_the_official_server_scenarios_pass(suite, kind, tmp_path):
    packs = {
        "ecp": ROOT / "examples" / "ecp" / "conformance-pack",
        "skill-yaml-tree": ROOT / "examples" / "skills",
        "openexperts": ROOT / "examples" / "openexperts" / "acme-support",
    }
    if kind == "skill-md-folder":
        pack = skills_folder(tmp_path / "skills")
    else:  # a copy: the suite calls tools, and an ECP query writes its log into the pack
        pack = Path(shutil.copytree(packs[kind], tmp_path / packs[kind].name, symlinks=True))
    argv = [sys.executable, "-m", "agentpack", "mcp", "serve", "--transport", "streamable-http", "--port", "0"]
    env = {**os.environ, "AGENTPACK_RUNS": str(tmp_path / "runs.sqlite")}
    server = subprocess.Popen([*argv, "--pack", str(pack)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = server.stderr.readline()
        assert "serving on http://" in line, line
        url = line.split("serving on ", 1)[1].strip()
        bin_dir = suite
        run_env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}

        def run(scenario: str) -> list[str]:
            out = tmp_path / "results" / scenario
            subprocess.run(
                ["conformance", "server", "--url", url, "--scenario", scenario, "-o", str(out)],
                capture_output=True,
                text=True,
                env=run_env,
                timeout=300,
                check=False,
            )
            results = list(out.glob("**/checks.json"))
            if not results:
                return [f"{scenario}: the suite wrote no results"]
            return [
                f"{scenario}: {check['id']}: {check.get('errorMessage')}"
                for check in json.loads(results[0].read_text())
                if check["status"] == "FAILURE" and not (check.get("errorMessage") or "").startswith("Not testable")
            ]

        with ThreadPoolExecutor(max_workers=4) as pool:  # each scenario is its own Node process
            failed = [problem for problems in pool.map(run, SCENARIOS) for problem in problems]
    finally:
        server.terminate()
        server.wait(timeout=30)
        server.stderr.close()
    assert failed == []
