"""A third-party plugin installed for real (pip, entry point) shows up, validates, reports and serves MCP."""

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SAMPLE = Path(__file__).parent / "agentpack_sample"
AGENTPACK = Path(sys.executable).with_name("agentpack")


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Install the sample plugin with pip into its own folder; return the environment that sees it."""
    work = tmp_path_factory.mktemp("sample")
    shutil.copytree(SAMPLE, work / "src", ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    target = work / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(work / "src"),
        ],
        check=True,
    )
    env = dict(os.environ, PYTHONPATH=str(target))
    env.pop("AGENTPACK_PLUGINS", None)
    return env


def agentpack(env, *args, **kwargs):
    return subprocess.run([str(AGENTPACK), *map(str, args)], env=env, capture_output=True, text=True, **kwargs)


@pytest.fixture
def packs(tmp_path):
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    (good / "todo.txt").write_text("- [x] write plugin\n- [ ] ship it\n")
    (bad / "todo.txt").write_text("- [x] fine\nnot a task\n")
    return good, bad


def test_listed_with_version(installed):
    data = json.loads(agentpack(installed, "plugins", "--json").stdout)
    sample = next(p for p in data["plugins"] if p["name"] == "sample")
    assert (sample["version"], sample["distribution"], sample["formats"]) == (
        "1.2.3",
        "agentpack-sample",
        ["sample-todo"],
    )
    assert "sample 1.2.3 (agentpack-sample)" in agentpack(installed, "--version").stdout


def test_validates_and_reports(installed, packs):
    good, bad = packs
    assert agentpack(installed, "detect", good).stdout.startswith(f"{good}: sample-todo")
    assert agentpack(installed, "validate", good).returncode == 0
    result = agentpack(installed, "validate", bad, "-o", "github")
    assert result.returncode == 1
    assert f"::error file={bad}/todo.txt,line=2,title=TODO001::" in result.stdout
    assert agentpack(installed, "validate", bad, "-o", "count").stdout == "1\n"


def test_command_and_eval(installed, packs):
    good, _ = packs
    assert agentpack(installed, "todo-stats", good).stdout == "1 done, 1 open\n"
    assert agentpack(installed, "eval", good).returncode == 1


def test_blocked_by_environment(installed, packs):
    env = dict(installed, AGENTPACK_DISABLE_PLUGINS="sample")
    result = agentpack(env, "validate", packs[0])
    assert result.returncode == 1 and "not a pack of any installed format" in result.stdout


def test_served_over_mcp_stdio(installed, packs):
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=str(AGENTPACK), args=["mcp", "serve"], env=installed)

    async def main():
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("sample_count_todos", {"path": str(packs[0])})
            return names, result

    names, result = anyio.run(main)
    assert "sample_count_todos" in names
    assert not result.is_error and result.structured_content == {"done": 1, "open": 1}


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.timeout(60)
def test_served_over_mcp_streamable_http(installed, packs):
    import anyio
    from mcp import Client

    port = _free_port()
    proc = subprocess.Popen(
        [str(AGENTPACK), "mcp", "serve", "--transport", "streamable-http", "--port", str(port)],
        env=installed,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)

        async def main():
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                return await client.call_tool("sample_count_todos", {"path": str(packs[0])})

        result = anyio.run(main)
        assert result.structured_content == {"done": 1, "open": 1}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()
