"""agentpack.io.proc: children in their own process group; kill_group leaves no descendant alive."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentpack.io.proc import kill_group, spawn

PARENT = textwrap.dedent("""
    import signal, subprocess, sys, time
    if sys.argv[1] == "ignore-term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time\\nwhile True: time.sleep(0.05)"])
    print(child.pid, flush=True)
    while True:
        time.sleep(0.05)
""")


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie waiting for its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_gone(pid: int, seconds: float = 5.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


def start(mode: str = "plain") -> tuple[subprocess.Popen, int]:
    proc = spawn([sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, text=True)
    grandchild = int(proc.stdout.readline())
    proc.stdout.close()  # the parent prints nothing more
    return proc, grandchild


def test_spawn_starts_a_new_process_group():
    proc, grandchild = start()
    try:
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
        assert os.getpgid(grandchild) == proc.pid
    finally:
        kill_group(proc, grace=0.5)


def test_kill_group_leaves_no_grandchild():
    proc, grandchild = start()
    assert alive(proc.pid) and alive(grandchild)
    status = kill_group(proc, grace=2.0)
    assert status is not None and status < 0  # ended by a signal
    assert wait_gone(grandchild) and not alive(proc.pid)


def test_kill_group_escalates_to_sigkill():
    proc, grandchild = start("ignore-term")
    time.sleep(0.2)  # let the child install its SIGTERM handler
    status = kill_group(proc, grace=0.3)
    assert status == -9
    assert wait_gone(grandchild)


def test_kill_group_on_a_finished_process():
    proc = spawn([sys.executable, "-c", "pass"])
    proc.wait(timeout=10)
    assert kill_group(proc, grace=0.1) == 0


def test_kill_group_without_own_group_kills_only_the_child():
    proc = spawn([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=False)
    assert os.getpgid(proc.pid) == os.getpgid(0)
    assert kill_group(proc, grace=0.1) == -9
    assert alive(os.getpid())


def test_pidfd_becomes_readable_when_the_process_exits():
    import select

    from agentpack.io.proc import pidfd

    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.2)"])
    fd = pidfd(proc.pid)
    if fd is None:
        proc.wait()
        pytest.skip("no pidfd_open here (Linux 5.3+)")
    try:
        assert select.select([fd], [], [], 0)[0] == []
        assert select.select([fd], [], [], 10)[0] == [fd]
        assert proc.wait(timeout=5) == 0
    finally:
        os.close(fd)
