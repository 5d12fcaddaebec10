"""The console script: exit codes pass through, and the collector is tuned for a short-lived process."""

from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from agentpack.cli import launch


def test_run_tunes_the_collector_and_exits_with_the_command_code(monkeypatch, capsys):
    before = gc.get_threshold()
    monkeypatch.setattr(sys, "argv", ["agentpack", "--version"])
    try:
        with pytest.raises(SystemExit) as info:
            launch.run()
        assert info.value.code == 0
        assert gc.get_threshold()[0] == launch.GEN0_THRESHOLD
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
    assert capsys.readouterr().out.startswith("agentpack ")


@pytest.mark.parametrize("args,code", [(["--version"], 0), (["no-such-command"], 2)])
def test_python_dash_m_agentpack_exits_like_the_console_script(args, code):
    result = subprocess.run([sys.executable, "-m", "agentpack", *args], capture_output=True, text=True, timeout=60)
    assert result.returncode == code, result.stderr
