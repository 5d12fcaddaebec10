"""Options mean one thing across commands: a walk over every command of the CLI, the core's and every plugin's.

* ``-q`` is ``--quiet`` and ``-v``/``-vv`` are ``--verbose`` on every command and group, before or after its name;
* every ``--report FILE`` is ``clikit.report_option`` and picks the format by the file's suffix: each command that has
  one is run with ``.html`` (self-contained, with the charts), ``.json`` and ``.xml``, and the files agree.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import click
import pytest

from agentpack.cli.app import cli
from agentpack.cli.clikit import ReportOption
from agentpack.testing import run_cli

EXAMPLES = Path(__file__).parents[2] / "examples"
MCP_SKILLS_SERVER = Path(__file__).parent / "mcpskills" / "server.py"  # a Skills-extension server (official SDK)
AGENTPACK = Path(sys.executable).with_name("agentpack")


def every_command(command: click.Command = cli, path: tuple[str, ...] = ()):
    """``(path, command)`` for the root, every group and every leaf command, plugins' included."""
    yield path, command
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None:
                yield from every_command(sub, (*path, name))


def option(command: click.Command, flag: str) -> click.Parameter | None:
    return next((p for p in command.params if flag in getattr(p, "opts", ()) + getattr(p, "secondary_opts", ())), None)


def test_q_is_quiet_and_v_is_verbose_on_every_command():
    commands = list(every_command())
    assert len(commands) > 60
    for path, command in commands:
        where = f"agentpack {' '.join(path)}".strip()
        quiet, verbose = option(command, "-q"), option(command, "-v")
        assert quiet is not None and quiet is option(command, "--quiet"), f"{where}: -q is not --quiet"
        assert isinstance(quiet, click.Option) and quiet.is_flag, f"{where}: --quiet takes a value"
        assert verbose is not None and verbose is option(command, "--verbose"), f"{where}: -v is not --verbose"
        assert isinstance(verbose, click.Option) and verbose.count, f"{where}: -v does not count (-vv)"


def test_v_logs_what_a_command_does_before_or_after_its_name(tmp_path):
    pack = tmp_path / "pack"
    shutil.copytree(EXAMPLES / "ecp" / "conformance-pack", pack)
    env = dict(os.environ, AGENTPACK_RUNS=str(tmp_path / "runs.sqlite"))

    def stderr(*args: str) -> str:
        done = subprocess.run(
            [str(AGENTPACK), *args], capture_output=True, text=True, timeout=300, env=env, check=False, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
        return done.stderr

    assert "INFO agentpack.cli.app: eval pack: format ecp" in stderr("-v", "eval", "pack", "-q")
    assert "INFO agentpack.cli.app: eval pack: total=7 passed=7" in stderr("eval", "pack", "-v", "-q")
    assert "INFO" not in stderr("eval", "pack", "-q")
    assert "DEBUG" not in stderr("-v", "eval", "pack", "-q")
    debug = stderr("-vv", "eval", "pack", "-q")
    assert "DEBUG agentpack.kernel.plugins: plugin ecp loaded from agentpack_ecp.plugin" in debug
    assert "DEBUG agentpack.kernel.host: detect pack: ecp " in debug  # each format's answer, with its confidence
    assert "INFO agentpack.cli.app: eval pack: format ecp" in debug
    assert "INFO agentpack.cli.app: query pack (format ecp): top 5" in stderr("-v", "query", "pack", "cache", "--json")


# -- --report FILE ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Copies of the examples every reporting command runs on."""
    folder = tmp_path_factory.mktemp("reporting")
    shutil.copytree(EXAMPLES / "ecp" / "conformance-pack", folder / "conformance-pack")
    shutil.copytree(EXAMPLES / "dci" / "workspace", folder / "ws", ignore=shutil.ignore_patterns("state"))
    shutil.copytree(EXAMPLES / "openexperts" / "acme-support", folder / "acme-support")
    shutil.copytree(EXAMPLES / "agent_rpc", folder / "rpc")
    (folder / "request.json").write_text('{"schema": {"type": "integer"}, "instance": 3}')
    return folder


def invocation(path: tuple[str, ...], where: Path) -> tuple[list, str]:
    """How to run the command at ``path`` offline, and what its files are: ``"validation"`` (paths checked)
    or ``"run"`` (cases run). A command with --report missing here fails the test: add it."""
    skills = ["skill", "--root", EXAMPLES / "skills"]
    resolve = ["--require", "web-search", "--no-history", "--no-prompt"]
    table = {
        ("validate",): (["validate", where / "conformance-pack", EXAMPLES / "skills"], "validation"),
        ("eval",): (["eval", where / "conformance-pack", "--no-record"], "run"),
        ("dci", "lint"): (["dci", "lint", where / "ws"], "validation"),
        ("dci", "resolve"): (["dci", "resolve", "-w", where / "ws", *resolve, "--no-record"], "run"),
        ("experts", "dry-run"): (
            ["experts", "dry-run", where / "acme-support", "triage-ticket", "--input", "ticket_id=T-1", "--no-record"],
            "run",
        ),
        ("rpc", "run"): (["rpc", "run", where / "rpc" / "manifest.yaml", "--no-record"], "run"),
        ("mcp", "check"): (
            ["mcp", "check", f"{sys.executable} {MCP_SKILLS_SERVER} {where / 'ws' / 'skills'}"],
            "validation",
        ),
        ("skill", "run"): ([*skills, "run", "schema.validate_json", "-i", where / "request.json"], "run"),
        ("skill", "test"): ([*skills, "test", "fs.hash_tree", "--no-record"], "run"),
    }
    assert path in table, f"'agentpack {' '.join(path)}' has --report: add it to this table"
    return table[path]


REPORTING = [path for path, command in every_command() if option(command, "--report") is not None]


def test_every_report_option_is_the_shared_one():
    assert len(REPORTING) >= 8
    for path, command in every_command():
        report = option(command, "--report")
        if report is not None:
            assert isinstance(report, ReportOption), f"agentpack {' '.join(path)}: --report is its own option"
            assert report.name == "report_file" and not report.multiple


def chart_counts(page: str) -> tuple[int, int, int, int]:
    found = re.search(r'data-passed="(\d+)" data-failed="(\d+)" data-errors="(\d+)" data-skipped="(\d+)"', page)
    assert found, "no pass-rate chart"
    passed, failed, errors, skipped = (int(n) for n in found.groups())
    return passed, failed, errors, skipped


@pytest.mark.parametrize("path", REPORTING, ids=" ".join)
def test_report_picks_the_format_by_suffix_and_the_files_agree(path, inputs, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # the rpc agent
    args, kind = invocation(path, inputs)
    files = {suffix: tmp_path / f"report{suffix}" for suffix in (".html", ".json", ".xml")}
    for file in files.values():
        result = run_cli([*args, "--report", file])
        assert result.exit_code == 0, (path, result.stderr)
    assert {f.stat().st_mode & 0o777 for f in files.values()} == {0o644}, "a report is shared: 0644, not 0600"
    page = files[".html"].read_text()
    assert page.startswith("<!doctype html>") and "<style>" in page, "HTML"
    assert not re.search(r"https?://|<link|\ssrc=", page), "the HTML report fetches nothing"
    counts = chart_counts(page)
    data = json.loads(files[".json"].read_text())
    assert isinstance(data, dict) and data, "JSON"
    junit = ET.parse(files[".xml"]).getroot()
    assert junit.tag == "testsuites", "JUnit XML"
    if kind == "validation":  # the chart counts paths: valid ones pass
        assert sum(counts) == data["summary"]["paths"] == len(data["items"])
        assert counts[0] == sum(1 for item in data["items"] if item["ok"])
    else:  # the chart counts cases, as the JUnit file does
        skipped = sum(int(s.get("skipped", 0)) for s in junit.iter("testsuite"))
        assert counts == (
            int(junit.get("tests")) - int(junit.get("failures")) - int(junit.get("errors")) - skipped,
            int(junit.get("failures")),
            int(junit.get("errors")),
            skipped,
        )
        assert sum(counts) > 0
