"""Install hints name a command that works for the way agentpack was installed (pip, uv, pipx, a clone)."""

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentpack.io import installhint
from agentpack.io.installhint import Install, command, detect, extra_requirements
from agentpack.testing import run_cli

ROOT = Path(__file__).parents[2]
PY = shlex.quote(sys.executable)


def test_the_extra_requirements_come_from_the_installed_metadata():
    assert extra_requirements("agentpack-core", "mcp") == ["mcp>=2.3"]
    assert extra_requirements("agentpack-core", "ecp") == ["agentpack-ecp"]
    assert extra_requirements("agentpack-core", "openexperts") == ["agentpack-openexperts[server]"]
    assert extra_requirements("agentpack-not-installed", "fancy") == ["agentpack-not-installed[fancy]"]


def test_pip_from_a_clone_installs_the_sibling_folder(tmp_path):
    editable = Install("pip", tmp_path, editable=True)
    assert command("agentpack-core", "ecp", editable) == f"{PY} -m pip install -e {tmp_path}/plugins/ecp"
    assert command("agentpack-core", "agent-rpc", editable).endswith(f"-e {tmp_path}/plugins/agent_rpc")
    plain = Install("pip", tmp_path, editable=False)
    assert command("agentpack-core", "openexperts", plain) == (
        f"{PY} -m pip install '{tmp_path}/plugins/openexperts[server]'"
    )
    assert command("agentpack-core", "mcp", plain) == f"{PY} -m pip install 'mcp>=2.3'"


def test_an_install_from_an_archive_names_the_distribution():
    assert command("agentpack-core", "dci", Install("pip", None, False)) == f"{PY} -m pip install agentpack-dci"


def test_each_installer_gets_its_own_command(tmp_path):
    assert command("agentpack-core", "mcp", Install("uv", tmp_path, False)) == (
        f"uv pip install --python {PY} 'mcp>=2.3'"
    )
    assert command("agentpack-core", "dci", Install("pipx", tmp_path, True)) == (
        f"pipx inject agentpack-core -e {tmp_path}/plugins/dci"
    )
    assert command("agentpack-core", "dci", Install("uv-tool", tmp_path, True)) == (
        f"uv tool install --reinstall -e {tmp_path} --with-editable={tmp_path}/plugins/dci"
    )
    assert command("agentpack-core", "mcp", Install("uv-tool", tmp_path, False)) == (
        f"uv tool install --reinstall {tmp_path} '--with=mcp>=2.3'"
    )


def test_the_venv_tells_pipx_and_uv_tools_apart(tmp_path):
    assert detect(tmp_path).tool in ("pip", "uv")
    (tmp_path / "uv-receipt.toml").write_text("[tool]\n")
    assert detect(tmp_path).tool == "uv-tool"
    (tmp_path / "pipx_metadata.json").write_text("{}")
    assert detect(tmp_path).tool == "pipx"


def test_this_venv_is_an_editable_install_of_this_tree():
    found = detect()
    assert found.tree == ROOT and found.editable


@pytest.mark.parametrize(
    ("direct_url", "expected"),
    [
        ({"url": "file:///src/agent%20pack", "dir_info": {"editable": True}}, (Path("/src/agent pack"), True)),
        ({"url": "file:///src/ap", "dir_info": {}}, (Path("/src/ap"), False)),
        ({"url": "https://example.org/ap.whl", "archive_info": {}}, (None, False)),
        ({"url": "file:///w/ap-1.0-py3-none-any.whl", "archive_info": {}}, (None, False)),
    ],
)
def test_pep_610_direct_urls(direct_url, expected):
    assert installhint._tree(json.dumps(direct_url)) == expected


@pytest.mark.parametrize("text", [None, "", "not json", "[]"])
def test_no_or_bad_direct_url_means_no_tree(text):
    assert installhint._tree(text) == (None, False)


def test_view_checks_its_dependencies_before_printing_its_url(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # import uvicorn raises ImportError
    result = run_cli(["view", "--port", "0", "--store", str(tmp_path / "runs.sqlite")])
    assert result.exit_code == 2
    assert "http://" not in result.stdout and "agentpack view:" not in result.stdout
    assert "'uvicorn' is needed for agentpack view" in result.stderr
    assert command("agentpack-core", "mcp") in result.stderr


def _copy_tree(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("*.egg-info", "build", "__pycache__", ".venv", "node_modules")
    shutil.copytree(ROOT / "core", dest / "core", ignore=ignore)
    shutil.copytree(ROOT / "plugins", dest / "plugins", ignore=ignore, symlinks=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, dest / name)
    return dest


def _run(args, timeout=600, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)


def _hint(result) -> str:
    lines = [line.strip() for line in result.stderr.splitlines()]
    hinted = [line.removeprefix("hint: ") for line in lines if line.startswith("hint: ")]
    if hinted:
        return hinted[-1]
    return result.stderr.rsplit("which is not installed: ", 1)[1].strip()


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_every_hint_command_works_in_a_fresh_venv_made_from_the_tree(tmp_path):
    src = _copy_tree(tmp_path / "src")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = _run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(src)])
    if pip.returncode != 0:
        if "No matching distribution" in pip.stderr or "Failed to establish" in pip.stderr:
            pytest.skip(f"package registry not reachable: {pip.stderr[-300:]}")
        pytest.fail(pip.stderr[-2000:])
    agentpack = str(venv / "bin" / "agentpack")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPACK_")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["HOME"] = str(tmp_path)
    checks = [  # view first: the openexperts plugin brings starlette and uvicorn along
        [agentpack, "view", "--port", "0", "--store", str(tmp_path / "none.sqlite")],
        [agentpack, "ecp", "--help"],
        [agentpack, "experts", "--help"],
        [agentpack, "skill", "--help"],
        [agentpack, "dci", "--help"],
        [agentpack, "rpc", "--help"],
    ]
    for check in checks:
        missing = _run(check, env=env, cwd=tmp_path, timeout=120)  # a view that serves is killed, and fails
        assert missing.returncode == 2, (check, missing.stdout, missing.stderr)
        assert "http://" not in missing.stdout  # view: checked before its URL is printed
        hint = _hint(missing)
        assert hint.startswith(str(venv / "bin" / "python")), hint
        assert f"{src}/plugins/" in hint or check[1] == "view", hint
        done = _run(hint, shell=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, (hint, done.stderr[-2000:])
        if check[1] != "view":
            assert _run(check, env=env, cwd=tmp_path).returncode == 0, check
    assert "mcp" in _run([str(venv / "bin" / "python"), "-m", "pip", "list"], env=env).stdout


def _uv_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTPACK_", "VIRTUAL_ENV", "UV_"))}
    env.update(UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"))
    return env


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not installed")
@pytest.mark.parametrize("how", ["uv-pip", "uv-tool"])
def test_the_hint_works_where_uv_installed_agentpack(tmp_path, how):
    src = _copy_tree(tmp_path / "src")
    env = _uv_env(tmp_path)
    if how == "uv-pip":
        assert _run(["uv", "venv", "-q", str(tmp_path / "venv")], env=env).returncode == 0
        python = tmp_path / "venv" / "bin" / "python"
        made = _run(["uv", "pip", "install", "-q", "--python", str(python), str(src)], env=env)
        agentpack = tmp_path / "venv" / "bin" / "agentpack"
    else:
        made = _run(["uv", "tool", "install", "-q", str(src)], env=env)
        agentpack = tmp_path / "bin" / "agentpack"
    if made.returncode != 0:
        if "Failed to fetch" in made.stderr or "failed to lookup" in made.stderr.lower():
            pytest.skip(f"package registry not reachable: {made.stderr[-300:]}")
        pytest.fail(made.stderr[-2000:])
    missing = _run([str(agentpack), "dci", "--help"], env=env, cwd=tmp_path)
    assert missing.returncode == 2, missing.stderr
    hint = _hint(missing)
    assert hint.startswith("uv pip install --python " if how == "uv-pip" else "uv tool install --reinstall "), hint
    assert f"{src}/plugins/dci" in hint
    done = _run(hint, shell=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, (hint, done.stderr[-2000:])
    assert _run([str(agentpack), "dci", "--help"], env=env, cwd=tmp_path).returncode == 0


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_hint_works_where_pipx_installed_agentpack(tmp_path):
    src = _copy_tree(tmp_path / "src")
    tools = tmp_path / "pipx-venv"
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True)
    got = _run([str(tools / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "pipx"])
    if got.returncode != 0:
        pytest.skip(f"pipx cannot be installed from the package registry: {got.stderr[-300:]}")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENTPACK_", "VIRTUAL_ENV", "PIPX_"))}
    env.update(PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"))
    env["PATH"] = f"{tools / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    made = _run(["pipx", "install", "--python", sys.executable, str(src)], env=env)
    assert made.returncode == 0, made.stderr[-2000:]
    agentpack = tmp_path / "bin" / "agentpack"
    missing = _run([str(agentpack), "dci", "--help"], env=env, cwd=tmp_path)
    hint = _hint(missing)
    assert hint == f"pipx inject agentpack-core {src}/plugins/dci", hint
    done = _run(hint, shell=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, (hint, done.stderr[-2000:])
    assert _run([str(agentpack), "dci", "--help"], env=env, cwd=tmp_path).returncode == 0
