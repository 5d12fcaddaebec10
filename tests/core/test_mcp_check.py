"""``agentpack mcp check``: a clean report on a conforming Skills server and a located failure for each rule a
deliberately broken server (tests/core/mcpskills/server.py, written with the official SDK) violates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentpack.mcp.check import check_server
from agentpack.mcp.client import ServerSpec

pytest.importorskip("mcp")

SERVER = Path(__file__).parent / "mcpskills" / "server.py"


@pytest.fixture(scope="module")
def skills(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("served")
    for rel, front, extra in [
        (
            "alpha",
            "name: alpha\ndescription: Alpha.\nmetadata:\n  version: 1.0\n  when: 2026-01-02\n",
            {"ref/g.md": "g\n"},
        ),
        ("acme/beta", "name: beta\ndescription: Beta.\nlicense: MIT\n", {"data.bin": "\x00\x01"}),
        ("gamma", "name: gamma\ndescription: Gamma.\n", {}),
    ]:
        folder = root / rel
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(f"---\n{front}---\nBody\n")
        for name, text in extra.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
    return root


def check(skills_server, root: Path, *breaks: str, page_size: int = 2):
    return check_server(ServerSpec("srv", "unused"), skills_server.build(root, set(breaks), page_size))


def test_a_conforming_server_gets_a_clean_report(skills_server, skills):
    assert check(skills_server, skills, page_size=1) == []


@pytest.mark.parametrize(
    ("broken", "code", "file", "pointer"),
    [
        ("no-extension", "MCS001", "mcp:srv", "/capabilities/extensions"),
        ("no-resources", "MCS002", "mcp:srv", "/capabilities/resources"),
        ("cursor", "MCS012", "mcp:srv", None),
        ("cursor-cycle", "MCS012", "mcp:srv", "/nextCursor"),
        ("result-type", "MCS011", "mcp:srv", "/ttlMs"),
        ("name", "MCS021", "mcp:srv:skill://acme/beta-renamed/SKILL.md", "/uri"),
        ("manifest", "MCS035", "mcp:srv:skill://acme/beta/SKILL.md", "/resources"),
        ("size", "MCS032", "mcp:srv:skill://acme/beta/SKILL.md", "/resources/0/size"),
        ("digest", "MCS033", "mcp:srv:skill://acme/beta/SKILL.md", "/resources/0/digest"),
        ("frontmatter", "MCS034", "mcp:srv:skill://acme/beta/SKILL.md", "/frontmatter/description"),
        ("get-error", "MCS041", "mcp:srv:skill://agentpack-check-not-served/SKILL.md", None),
        ("read-error", "MCS042", "mcp:srv:skill://acme/beta/agentpack-check-not-served.md", None),
        ("dir-read", "MCS043", "mcp:srv:skill://acme/beta/SKILL.md", None),
        ("dir-mime", "MCS043", "mcp:srv:skill://alpha", None),
        ("resource-meta", "MCS044", "mcp:srv:skill://acme/beta/SKILL.md", "/name"),
        ("lost-file", "MCS036", "mcp:srv:skill://acme/beta/data.bin", None),
        ("limits", "MCS050", "mcp:srv:skill://huge/SKILL.md", "/resources"),
        ("dynamic", "MCS030", "mcp:srv:skill://acme/beta/SKILL.md", "/resources"),
    ],
)
def test_each_broken_rule_is_a_located_finding(skills_server, skills, broken, code, file, pointer):
    found = [f for f in check(skills_server, skills, broken) if f.code == code]
    assert found, [f"{f.code} {f.message}" for f in check(skills_server, skills, broken)]
    assert (found[0].file, found[0].pointer) == (file, pointer)


def test_the_command_over_stdio_in_every_report_format(skills, tmp_path):
    command = f"{sys.executable} {SERVER} {skills} --break digest"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "agentpack",
            "mcp",
            "check",
            command,
            "--label",
            "docs",
            "-o",
            "json",
            "--report",
            str(tmp_path / "out.sarif"),
        ],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert run.returncode == 1, run.stderr
    report = json.loads(run.stdout)
    (item,) = report["items"]
    assert [(f["code"], f["file"]) for f in item["findings"]] == [("MCS033", "mcp:docs:skill://acme/beta/SKILL.md")]
    sarif = json.loads((tmp_path / "out.sarif").read_text())
    assert sarif["runs"][0]["results"][0]["ruleId"] == "MCS033"
    clean = subprocess.run(
        [sys.executable, "-m", "agentpack", "mcp", "check", f"{sys.executable} {SERVER} {skills}", "-o", "junit"],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=120,
    )
    assert clean.returncode == 0 and 'failures="0"' in clean.stdout


@pytest.mark.parametrize(
    "pack",
    [
        "examples/dci/workspace/skills",
        "examples/ecp/conformance-pack",
        "examples/skills",
        "examples/openexperts/acme-support",
    ],
    ids=["skill-md-folder", "ecp", "skill-yaml-tree", "openexperts"],
)
def test_our_own_server_gets_a_clean_report(pack):
    """``agentpack mcp check`` on ``agentpack mcp serve`` over stdio: every pack kind publishes by the rules."""
    root = Path(__file__).resolve().parents[2]
    server = f"{sys.executable} -m agentpack mcp serve --pack {root / pack}"
    done = subprocess.run(
        [sys.executable, "-m", "agentpack", "mcp", "check", server, "--json"], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (item,) = json.loads(done.stdout)["items"]
    assert item["findings"] == []
    if pack == "examples/skills":
        return  # skill.yaml skills with no SKILL.md: no Agent Skill to publish, and the check says so cleanly
    listed = subprocess.run(  # and the server did publish skills for the check to look at
        [sys.executable, "-m", "agentpack", "skill-md", "to-prompt", "--mcp", f"srv={server}"],
        capture_output=True,
        text=True,
    )
    assert listed.returncode == 0 and listed.stdout.count("<skill>") >= 1, listed.stdout + listed.stderr
