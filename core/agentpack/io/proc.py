"""Child processes in their own process group, so a timeout or the end of a run leaves no orphan."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from typing import Any, NamedTuple

from agentpack.io.console import debug


def spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen[Any]:
    """``subprocess.Popen`` in a new session (its own process group); no shell unless the caller asks."""
    kwargs.setdefault("start_new_session", True)
    kwargs.setdefault("close_fds", True)
    debug(__name__, "spawn %s (cwd %s)", argv, kwargs.get("cwd") or ".")
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


_PR_SET_CHILD_SUBREAPER = 36
_subreaper: bool | None = None


def set_child_subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux ``PR_SET_CHILD_SUBREAPER``); True when it is one.

    A descendant whose parent dies (a double fork, a daemon that called
    ``setsid``) is then re-parented to this process instead of to init, so it
    can still be found (``children``), killed and reaped. Process-wide and
    kept for the life of the process; the first call costs the ``ctypes``
    import (about 2 ms), later ones nothing.
    """
    global _subreaper
    if _subreaper is None:
        _subreaper = False
        if os.uname().sysname == "Linux":
            import ctypes

            try:
                libc = ctypes.CDLL(None, use_errno=True)
                _subreaper = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                pass
    return _subreaper


def has_children() -> bool:
    """Whether this process has any child, running or exited and not yet reaped (one system call, reaps nothing)."""
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


class Child(NamedTuple):
    """A child process as ``/proc`` shows it: ``state`` is ``R``, ``S``, ``Z`` (exited, not reaped), ..."""

    pid: int
    state: str
    pgid: int
    sid: int


def children() -> list[Child]:
    """The children of this process (those it started and those re-parented to it), read from ``/proc``.

    Reads ``/proc/self/task/*/children`` where the kernel has them, else scans
    every ``/proc/PID/stat`` (a few milliseconds). Empty without procfs.
    """
    pids = _listed_children()
    if pids is None:
        try:
            pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
        except OSError:
            return []
    me = os.getpid()
    found = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as handle:
                fields = handle.read().rpartition(b")")[2].split()
        except OSError:  # gone meanwhile
            continue
        if len(fields) > 3 and int(fields[1]) == me:
            found.append(Child(pid, fields[0].decode("ascii", "replace"), int(fields[2]), int(fields[3])))
    return found


def _listed_children() -> list[int] | None:
    """The pids in ``/proc/self/task/*/children``; None where the kernel does not provide them."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return None
    pids: list[int] = []
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/children", "rb") as handle:
                pids += (int(pid) for pid in handle.read().split())
        except FileNotFoundError:
            if os.path.isdir(f"/proc/self/task/{tid}"):  # the thread is there, the file is not
                return None
        except OSError:
            continue
    return pids
