"""SARIF and GitHub annotations name files as CI sees them (relative to the repository root or the working
directory), whether a plugin gave them relative to the pack, relative to the working directory or absolute."""

from __future__ import annotations

import json
import re

import pytest

from agentpack.kernel.models import CaseResult, EvalReport, Finding, Report, SuiteResult, ValidationItem
from agentpack.results.reporters import github, sarif


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository with a pack ``packs/ws`` holding ``skills/a/SKILL.md``; the working directory is its root."""
    root = tmp_path / "repo"
    (root / "packs" / "ws" / "skills" / "a").mkdir(parents=True)
    (root / "packs" / "ws" / "skills" / "a" / "SKILL.md").write_text("---\n")
    (root / "packs" / "ws" / "evals.yaml").write_text("cases: []\n")
    monkeypatch.chdir(root)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    return root


def report(item_path: str, file: str | None, case_file: str | None = None) -> Report:
    finding = Finding.error("X001", "bad", file=file, line=3)
    case = CaseResult(id="c", status="failed", file=case_file, line=2)
    evaluation = EvalReport(name="ws", format="f", path=item_path, suites=[SuiteResult(id="s", cases=[case])])
    return Report(
        command="validate", items=[ValidationItem(path=item_path, findings=[finding])], evaluations=[evaluation]
    )


def files(rendered: Report) -> tuple[list[str], list[str]]:
    """The files SARIF and the GitHub annotations name, in order."""
    runs = json.loads(sarif.render(rendered))["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in runs]
    annotations = re.findall(r"file=([^,]*)", github.render(rendered))
    return uris, annotations


@pytest.mark.parametrize(
    ("item_path", "file"),
    [
        ("packs/ws", "skills/a/SKILL.md"),  # relative to the pack (DCI, ECP)
        ("packs/ws", "packs/ws/skills/a/SKILL.md"),  # relative to the working directory (the path given)
        ("./packs/ws", "packs/ws/skills/a/SKILL.md"),
        ("packs/ws", "{root}/packs/ws/skills/a/SKILL.md"),  # absolute
        ("{root}/packs/ws", "skills/a/SKILL.md"),  # the pack given absolute, the file relative to it
    ],
)
def test_every_form_becomes_relative_to_the_working_directory(repo, item_path, file):
    rendered = report(item_path.format(root=repo), file.format(root=repo), case_file="evals.yaml")
    uris, annotations = files(rendered)
    assert uris[0] == annotations[0] == "packs/ws/skills/a/SKILL.md"
    assert uris[1] == annotations[1] == "packs/ws/evals.yaml"


def test_inside_the_pack_folder(repo, monkeypatch):
    monkeypatch.chdir(repo / "packs" / "ws")
    assert files(report(".", "skills/a/SKILL.md", "evals.yaml")) == (["skills/a/SKILL.md", "evals.yaml"],) * 2


def test_relative_to_the_repository_root_on_github(repo, monkeypatch):
    monkeypatch.chdir(repo / "packs")
    monkeypatch.setenv("GITHUB_WORKSPACE", str(repo))
    assert files(report("ws", "skills/a/SKILL.md"))[1][0] == "packs/ws/skills/a/SKILL.md"
    monkeypatch.setenv("GITHUB_WORKSPACE", str(repo / "elsewhere"))  # not around the working directory: ignored
    assert files(report("ws", "skills/a/SKILL.md"))[1][0] == "ws/skills/a/SKILL.md"


def test_a_missing_file_is_taken_relative_to_the_pack(repo):
    assert files(report("packs/ws", "schemas/input.json"))[0][0] == "packs/ws/schemas/input.json"
    assert files(report("packs/ws", None))[0][0] == "packs/ws"  # a finding about the pack itself


def test_files_outside_stay_absolute(repo, tmp_path):
    outside = tmp_path / "other" / "x.yaml"
    uris, annotations = files(report("packs/ws", str(outside), case_file=str(outside)))
    assert annotations == [outside.as_posix()] * 2 and uris[0] == outside.as_posix()
