"""A throwaway venv with agentpack-core and some plugins installed from wheels, as a user gets them.

Benchmarks compare against reference implementations installed from PyPI,
so ours runs the same way: built from the work tree (a copy, so no build
folders land in it) and installed without ``-e``. The development venv's
editable installs add a path finder per plugin to every interpreter start
(about 12 ms), which a user's install does not have. The venv is kept under
the temporary folder; each call reinstalls the tree's current code into it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HOME = Path(tempfile.gettempdir()) / "agentpack-bench"


def wheel_venv(*plugins: str) -> Path:
    """The venv folder with core plus ``plugins`` (folder names under plugins/) installed from this tree."""
    home = HOME / ("venv-" + "-".join(sorted(plugins)))
    python = home / "bin" / "python"
    ready = home / ".deps-installed"
    if not python.exists():
        venv.create(home, with_pip=True, clear=True)
    ignore = shutil.ignore_patterns("*.egg-info", "build", "__pycache__", ".venv")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp)
        shutil.copytree(ROOT / "core", src / "core", ignore=ignore)
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, src / name)
        for plugin in plugins:
            shutil.copytree(ROOT / "plugins" / plugin, src / "plugins" / plugin, ignore=ignore)
        args = [
            str(python),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(src),
            *(str(src / "plugins" / p) for p in plugins),
        ]
        if ready.exists():
            args += ["--no-deps", "--force-reinstall"]
        result = subprocess.run(args, capture_output=True, text=True, timeout=900)
    if result.returncode != 0:
        sys.exit(f"installing agentpack into {home} failed:\n{result.stderr[-2000:]}")
    ready.write_text("ok\n")
    return home
