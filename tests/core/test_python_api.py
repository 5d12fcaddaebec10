"""docs/python-api.md runs as written, and the API's functions do what the CLI does."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

import agentpack

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "python-api.md"


def _snippets(page: Path = PAGE) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), flags=re.S)


def test_every_snippet_of_the_page_runs_in_order(monkeypatch, agentpack_host):
    snippets = _snippets()
    assert len(snippets) >= 4
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        for number, code in enumerate(snippets, 1):
            exec(compile(code, f"{PAGE.name} snippet {number}", "exec"), namespace)
    printed = out.getvalue()
    assert "ecp conformance-pack" in printed
    assert "docs/caching.md" in printed
    assert "not a pack of any installed format" in printed
    assert re.search(r"^error SKL\d+ .*SKILL\.md", printed, flags=re.M)
    assert "dci True" in printed
    assert re.search(r"^ok \{", printed, flags=re.M)


def test_the_readme_python_block_runs(monkeypatch, agentpack_host):
    (code,) = _snippets(ROOT / "README.md")
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md python block", "exec"), {})
    assert "<testsuites" in out.getvalue()


def test_the_obvious_script_runs_in_a_fresh_process(tmp_path):
    """``import agentpack`` and ten lines: no host to build, no request object to make."""
    script = (
        "import agentpack\n"
        f"pack = agentpack.load({str(ROOT / 'examples/ecp/conformance-pack')!r})\n"
        "answer = agentpack.query(pack, 'Which settings does tidewater.toml accept?')\n"
        "print(answer.citations[0].label)\n"
        "print(agentpack.report(agentpack.validate(pack), format='junit').count('<testsuite'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    first, count = done.stdout.splitlines()
    assert first.endswith("(corpus)") and int(count) >= 1


def test_import_is_light():
    code = "import sys, agentpack; print([m for m in ('pluggy', 'pydantic', 'agentpack.api') if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_public_names_resolve():
    assert sorted(agentpack.__all__) == sorted(agentpack._LAZY)
    for name in agentpack.__all__:
        assert getattr(agentpack, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        agentpack.nope  # noqa: B018


def test_the_api_agrees_with_the_cli(agentpack_host, agentpack_cli):
    path = ROOT / "examples" / "skills"
    api = agentpack.validate(path, host=agentpack_host)
    cli = agentpack_cli("validate", "-o", "json", str(path)).json()["items"]
    assert [(f.code, f.file, f.line) for f in api.findings] == [
        (f["code"], f["file"], f["line"]) for item in cli for f in item["findings"]
    ]
    assert agentpack.query(agentpack.load(ROOT / "examples/ecp/conformance-pack"), "caching").citations


def test_report_refuses_what_it_cannot_render():
    with pytest.raises(TypeError, match="takes what validate"):
        agentpack.report(["not a result"])  # type: ignore[list-item]
    with pytest.raises(agentpack.AgentpackError):
        agentpack.report([], format="no-such-reporter")


def test_host_query_takes_the_question_alone(agentpack_host):
    pack = agentpack_host.load(ROOT / "examples/ecp/conformance-pack")
    assert agentpack_host.query(pack, "caching").citations
