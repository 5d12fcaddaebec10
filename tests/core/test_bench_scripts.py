"""Every bench script has a short ``--quick`` mode, and CI runs each in it (``make bench-quick`` in .ci/run).

The quick runs themselves are CI's job (they take about a minute together); this checks that no
script can be added outside them: each script of bench/ (a file with a ``__main__`` block) offers
``--quick`` in its ``--help``, and the Makefile target picks scripts by that same rule.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p for p in (ROOT / "bench").glob("*.py") if '\nif __name__ == "__main__":' in p.read_text())


def test_bench_has_scripts_and_ci_runs_them_quick():
    assert len(SCRIPTS) >= 10
    makefile = (ROOT / "Makefile").read_text()
    assert "grep -l '^if __name__ == \"__main__\":' bench/*.py" in makefile
    assert "$(BIN)/python $$b --quick" in makefile
    assert "\nmake bench-quick\n" in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_each_bench_script_offers_quick(script):
    done = subprocess.run(
        [sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert "--quick" in done.stdout
