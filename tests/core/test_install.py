"""Installing only the core plus one plugin works and shows only that format (needs the package registry)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]


@pytest.mark.interop
@pytest.mark.timeout(600)
def test_core_plus_one_plugin(tmp_path):
    src = tmp_path / "src"
    ignore = shutil.ignore_patterns("*.egg-info", "build", "__pycache__", ".venv")
    shutil.copytree(ROOT / "core", src / "core", ignore=ignore)
    shutil.copytree(ROOT / "plugins" / "dci", src / "plugins" / "dci", ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    try:
        pip = subprocess.run(
            [
                str(venv / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                f"{src}[dci]",
                str(src / "plugins" / "dci"),
            ],
            capture_output=True,
            text=True,
            timeout=480,
        )
    except subprocess.TimeoutExpired:
        pytest.skip("installing from the package registry took more than 480 s")
    if pip.returncode != 0:
        if (
            "No matching distribution" in pip.stderr
            or "Could not find a version" in pip.stderr
            or "Failed to establish" in pip.stderr
        ):
            pytest.skip(f"package registry not reachable: {pip.stderr[-300:]}")
        pytest.fail(pip.stderr[-2000:])
    out = subprocess.run(
        [str(venv / "bin" / "agentpack"), "plugins", "--json"], capture_output=True, text=True, check=True
    ).stdout
    plugins = json.loads(out)["plugins"]
    assert {p["name"] for p in plugins if not p["builtin"]} == {"dci"}
    assert {f for p in plugins for f in p["formats"]} == {"agent-skill", "dci"}
    listing = subprocess.run(
        [
            str(
                venv / "bin" / "agentpack",
            ),
            "--help",
        ],
        capture_output=True,
        text=True,
    ).stdout
    assert "  ecp " not in listing and "  experts " not in listing
