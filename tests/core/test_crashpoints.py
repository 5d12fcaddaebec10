"""agentpack.io.crashpoints: a named point kills the process for real, for crash-safety tests."""

import os
import subprocess
import sys
import textwrap


def test_crashpoints_kill_at_the_named_point(tmp_path):
    code = textwrap.dedent("""
        from agentpack.io.crashpoints import crashpoint
        for name in ("a", "b", "c"):
            crashpoint(name, prefix="AGENTPACK_TEST")
            print(name, flush=True)
    """)
    env = {**os.environ, "AGENTPACK_TEST_CRASH_TRACE": str(tmp_path / "trace")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and (tmp_path / "trace").read_text().split() == ["a", "b", "c"]
    for extra, printed in (
        ({"AGENTPACK_TEST_CRASH_AT": "b"}, "a"),
        ({"AGENTPACK_TEST_CRASH_AT": "*", "AGENTPACK_TEST_CRASH_SKIP": "3"}, "a b"),
    ):
        killed = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **extra}
        )
        assert killed.returncode == -9 and killed.stdout.split() == printed.split()
