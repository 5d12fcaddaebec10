"""Child processes in their own process group, so a timeout or the end of a run leaves no orphan."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any


def spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen`` in a new session (its own process group); no shell unless the caller asks."""
    kwargs.setdefault("start_new_session", True)
    kwargs.setdefault("close_fds", True)
    return subprocess.Popen(argv, **kwargs)


def pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits (Linux 5.3+), for ``poll``; None where unavailable.

    Waiting on it (beside a child's pipes) wakes the waiter at the exit, with no polling interval.
    """
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def kill_group(proc: subprocess.Popen[Any], *, grace: float = 1.0) -> int | None:
    """SIGTERM the whole process group, wait up to ``grace`` seconds, then SIGKILL it.

    Returns the exit status of ``proc`` (or ``None`` if it could not be reaped).
    """
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = None
    if pgid is not None and pgid != os.getpgid(0):
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and _group_alive(pgid):
            if proc.poll() is None:
                try:
                    proc.wait(timeout=0.02)
                except subprocess.TimeoutExpired:
                    pass
            else:
                time.sleep(0.02)
        _signal_group(pgid, signal.SIGKILL)
    elif proc.poll() is None:
        proc.kill()
    try:
        return proc.wait(timeout=max(grace, 1.0))
    except subprocess.TimeoutExpired:
        return None


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    """True while a member of the group runs; zombies (exited, not yet reaped by init) do not count."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:  # no procfs: trust killpg
        return True
    for pid in entries:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False
