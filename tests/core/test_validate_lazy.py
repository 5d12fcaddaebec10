"""``agentpack validate`` builds no pydantic model for a valid pack: a LazyReport, rendered as it is by text.

Speed checked without timing: a cold process validating a valid skill never imports pydantic, and the
lazy report reads exactly as the pydantic ``Report`` it stands for (text), or becomes it (every other
reporter, ``--report`` files).
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentpack.kernel.lazyreport import LazyItem, LazyReport
from agentpack.kernel.models import Finding, Report
from agentpack.kernel.summary import summarize
from agentpack.results.reporters import text

SKILL = "---\nname: {name}\ndescription: Does one thing well. Use when it is needed.\n---\n\n# Body\n"


def _skill(root: Path, name: str = "pdf-tools", front: str | None = None) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "SKILL.md").write_text(front or SKILL.format(name=name))
    return folder


def _imported(*args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "agentpack", "validate", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return proc, modules


def test_validating_a_valid_skill_imports_no_pydantic(tmp_path):
    skill = _skill(tmp_path)
    proc, modules = _imported(str(skill))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == f"{skill} (agent-skill): ok\n1 checked: 0 errors, 0 warnings, 0 infos\n"
    assert not modules & {"pydantic", "pydantic_core", "agentpack.kernel.models"}


def test_an_invalid_skill_is_reported_through_the_same_path(tmp_path):
    skill = _skill(tmp_path, "bad-name", SKILL.format(name="Other_Name"))
    proc, _ = _imported(str(skill))
    assert proc.returncode == 1
    assert "error" in proc.stdout and f"{skill} (agent-skill): invalid" in proc.stdout


def test_other_reporters_and_report_files_get_the_pydantic_report(tmp_path):
    skill = _skill(tmp_path)
    out = tmp_path / "out.sarif"
    argv = [sys.executable, "-m", "agentpack", "validate", str(skill), "-o", "json", "--report", str(out)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    envelope = json.loads(proc.stdout)
    assert envelope["ok"] is True and envelope["items"][0]["format"] == "agent-skill"
    assert envelope["tool"]["version"]  # set on the model the lazy report became
    assert json.loads(out.read_text())["version"] == "2.1.0"


@pytest.fixture
def reports() -> tuple[LazyReport, Report]:
    findings = [
        Finding.error("SKL001", "name is missing", file="a/SKILL.md", line=1, pointer="/name", hint="add one"),
        Finding.warning("SKL020", "long description", file="a/SKILL.md", line=3),
        Finding.info("DCI060", "not canonical"),
    ]
    at = datetime(2026, 1, 2, tzinfo=UTC)
    lazy = LazyReport("validate", at, [LazyItem("a", "agent-skill", findings), LazyItem("b", None, [])])
    return lazy, lazy.model()


def test_the_lazy_report_reads_as_the_report_it_stands_for(reports):
    lazy, model = reports
    assert text.render(lazy) == text.render(model)
    assert (lazy.ok, lazy.summary) == (model.ok, model.summary) == (False, summarize(model.items[0].findings, 2))
    assert [(i.path, i.format, i.findings, i.ok) for i in lazy.items] == [
        (i.path, i.format, i.findings, i.ok) for i in model.items
    ]
    assert model.command == "validate" and model.generated_at == lazy.generated_at
