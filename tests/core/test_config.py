"""The project configuration's `output` and `store` (docs/configuration.md): flag > env > file > default.
The walk's keys (`skill-roots`, `exclude`) and the located errors are tested in test_skill_roots.py."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentpack.kernel.config import ConfigError, load
from agentpack.testing import run_cli


def write_skill(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {folder.name}\ndescription: Does one thing.\n---\nBody.\n")
    return folder


def test_output_from_the_file_then_the_environment_then_the_flag(tmp_path, monkeypatch):
    write_skill(tmp_path / "skills" / "kept")
    (tmp_path / "agentpack.toml").write_text('output = "json"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AGENTPACK_OUTPUT", raising=False)
    assert json.loads(run_cli(["validate", "."]).stdout)["command"] == "validate"
    monkeypatch.setenv("AGENTPACK_OUTPUT", "junit")
    assert run_cli(["validate", "."]).stdout.startswith("<?xml")
    assert run_cli(["validate", ".", "-o", "text"]).stdout.startswith("skills/kept")
    assert json.loads(run_cli(["validate", ".", "--json"]).stdout)["ok"] is True


def test_an_output_a_command_does_not_take_leaves_its_own_default(tmp_path, monkeypatch):
    skill = write_skill(tmp_path / "kept")
    (tmp_path / "agentpack.toml").write_text('output = "sarif"\n')
    monkeypatch.chdir(tmp_path)
    result = run_cli(["skill-md", "read-properties", str(skill)])  # skills-ref or json only
    assert result.exit_code == 0 and json.loads(result.stdout)["name"] == "kept"


def test_store_from_the_file_is_relative_to_it(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text('[tool.agentpack]\nstore = "var/runs.sqlite"\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")
    monkeypatch.delenv("AGENTPACK_RUNS")
    from agentpack.results.runs.store import default_store_path

    assert default_store_path() == (tmp_path / "var" / "runs.sqlite").resolve()
    monkeypatch.setenv("AGENTPACK_RUNS", str(tmp_path / "env.sqlite"))
    assert default_store_path() == tmp_path / "env.sqlite"


def test_settings_say_where_each_value_came_from(tmp_path):
    (tmp_path / "agentpack.toml").write_text('exclude = ["drafts"]\n\noutput = "json"\n')
    settings = load(tmp_path, environ={"AGENTPACK_OUTPUT": "sarif"})
    assert settings.exclude == ("drafts",) and settings.output == "sarif"
    assert settings.origin == {"exclude": f"{tmp_path / 'agentpack.toml'}:1", "output": "$AGENTPACK_OUTPUT"}
    flagged = settings.with_flags(exclude=("x",), skill_roots=())
    assert flagged.exclude == ("x",) and flagged.origin["exclude"] == "--exclude"
    assert load(tmp_path / "nowhere-above", environ={}).output == "json"  # found from a folder below


def test_a_pyproject_without_the_table_is_passed_over_unparsed(tmp_path):
    """Start-up pays no TOML parser for a project that does not configure agentpack (most of them)."""
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[project.scripts]\nagentpack = "x:y"\n')
    (tmp_path / "child").mkdir()
    (tmp_path / "child" / "pyproject.toml").write_text("this is [not toml\n")
    code = "import sys; from agentpack.kernel.config import load; print(load(), 'tomllib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "child", capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("False")
    (tmp_path / "pyproject.toml").write_text('[tool.agentpack]\noutput = "json"\n')
    assert load(tmp_path / "child", environ={}).output == "json"  # the table found one folder up


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.text(max_size=120)
    | st.builds(
        lambda key, value: f"{key} = {value}\n",
        st.sampled_from(
            ["skill-roots", "exclude", "output", "store", "skill_roots", "outptu", '"exclude"', "judge", "judge.model"]
        ),
        st.sampled_from(['["a"]', '"json"', "1", "[1, 2]", '["../x"]', '["/abs"]', "{}", '""', "[]", "true"]),
    )
)
def test_any_agentpack_toml_gives_settings_or_a_located_config_error(tmp_path, text):
    (tmp_path / "agentpack.toml").write_text(text, encoding="utf-8")
    try:
        settings = load(tmp_path, environ={})
    except ConfigError as exc:
        assert exc.file == str(tmp_path / "agentpack.toml") and exc.exit_code == 2
    else:
        assert all(isinstance(v, str) for v in (*settings.skill_roots, *settings.exclude))


def test_judge_defaults_come_from_the_file_under_the_environment(tmp_path, monkeypatch):
    """``[tool.agentpack.judge]`` gives the LLM judge's defaults; the environment wins; Ray nodes get them too."""
    from agentpack_agent_rpc.env import JUDGE_BASE_URL, JUDGE_MODEL, JUDGE_TEMPERATURE, getenv
    from agentpack_agent_rpc.ray_executor.package import judge_env

    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.agentpack.judge]\nmodel = "judge-mini"\n'
        'base-url = "http://127.0.0.1:9/v1"\ntemperature = 0.2\n'
    )
    monkeypatch.chdir(tmp_path)
    for name in (JUDGE_MODEL, JUDGE_BASE_URL, JUDGE_TEMPERATURE, "ECP_LLM_JUDGE_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert load().judge == {"model": "judge-mini", "base-url": "http://127.0.0.1:9/v1", "temperature": "0.2"}
    assert (getenv(JUDGE_MODEL), getenv(JUDGE_BASE_URL), getenv(JUDGE_TEMPERATURE)) == (
        "judge-mini",
        "http://127.0.0.1:9/v1",
        "0.2",
    )
    assert judge_env({})[JUDGE_MODEL] == "judge-mini"  # what a Ray node receives
    monkeypatch.setenv(JUDGE_MODEL, "from-env")
    assert getenv(JUDGE_MODEL) == "from-env" and judge_env({JUDGE_MODEL: "from-env"})[JUDGE_MODEL] == "from-env"


def test_a_judge_api_key_is_never_a_setting(tmp_path):
    (tmp_path / "agentpack.toml").write_text('[judge]\nmodel = "m"\napi-key = "sk-123"\n')
    try:
        load(tmp_path, environ={})
    except ConfigError as exc:
        assert "unknown setting 'judge.api-key'" in exc.message and "environment" in (exc.hint or "")
        assert exc.file == str(tmp_path / "agentpack.toml") and exc.line == 1
    else:
        raise AssertionError("an API key in the project file was accepted")
