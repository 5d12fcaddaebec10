"""Keep every process a run's agents start from outliving the run, also when the runner itself is killed.

Three layers, the first two always on:

* **Subreaper.** The runner makes itself the child subreaper of its
  descendants (``agentpack.io.proc.set_child_subreaper``), so a process that
  double-forks or calls ``setsid`` is re-parented to the runner rather than
  to init. ``Containment.close``, at the end of a run, kills and reaps every
  such child that belongs to the run: a member of an agent's process group or
  session, a process whose environment carries the run's marker
  (``AGENTPACK_AGENT_RPC_RUN=<token>``, inherited from the agent), or, in a
  process that exists for the run (``EXCLUSIVE``: ``rpc run``), any child it
  did not have before. It repeats until the agents' process groups are empty
  and nothing of the run is left.
* **Guard.** A ``/bin/sh`` process in its own session holds a pipe from the
  runner. When the run ends, the runner kills it; when the runner dies first
  (SIGKILL included), the pipe closes and the guard kills every process whose
  environment carries the marker.
* **PID namespace**, when a manifest asks for it (``pid_namespace: true``):
  ``wrap_pid_namespace`` runs the agent under bubblewrap as the init of its own PID
  namespace, with ``--die-with-parent``; the kernel ends every process in the
  namespace when the agent or the runner ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from agentpack.io.proc import children, has_children, set_child_subreaper, spawn

MARKER = "AGENTPACK_AGENT_RPC_RUN"
"""The environment variable that marks a run's agents and, through inheritance, their descendants."""

SWEEP_S = 2.0
"""How long ``close`` keeps killing what a run left behind before it gives up."""

EXCLUSIVE = False
"""True while a command whose process exists for one run (``rpc run``) runs it (``exclusive``): then every child
left at the end that the process did not have before the run is the run's, whatever its environment."""

_GUARD = """
read -r _
n=0
while [ "$n" -lt 100 ]; do
  pids=$(grep -lsxzF -e "$1" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3)
  [ -n "$pids" ] || exit 0
  kill -9 $pids 2>/dev/null
  n=$((n + 1))
  sleep 0.02 2>/dev/null || sleep 1
done
"""
"""The guard: wait for the end of its input (the runner died), then kill every marked process. A run that ends
kills the guard first."""


class Containment:
    """One run's agents and everything they start: marked at spawn, swept at ``close``, guarded meanwhile."""

    def __init__(self) -> None:
        self.token = f"{os.getpid()}-{os.urandom(6).hex()}"
        self.groups: set[int] = set()
        """The agents' process groups (each agent leads its own group and session)."""
        self._guard: subprocess.Popen[bytes] | None = None
        self._before: set[int] = set()
        self._active = False
        self._lock = threading.Lock()

    def environment(self, env: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for an agent: the runner's, ``env`` on top, and the run's marker."""
        with self._lock:
            if not self._active and not self.groups and EXCLUSIVE and has_children():  # before the first agent
                self._before = {child.pid for child in children()}  # a command's process has none: no /proc scan
        return {**os.environ, **(env or {}), MARKER: self.token}

    def started(self, pid: int) -> None:
        """Record an agent started with ``environment()`` in a new session (``agentpack.io.proc.spawn``).

        The first one makes the runner a subreaper and starts the guard: after
        the spawn, so that the ``ctypes`` import and the guard's start overlap
        the agent's own start-up instead of delaying it.
        """
        with self._lock:
            self.groups.add(pid)
            if self._active:
                return
            self._active = True
            set_child_subreaper()
            try:
                self._guard = spawn(
                    ["/bin/sh", "-c", _GUARD, "agentpack-agent-rpc-guard", f"{MARKER}={self.token}"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            except OSError:  # no /bin/sh: the subreaper still cleans up after a run that ends
                self._guard = None

    def close(self) -> None:
        """After the agents were closed: kill and reap what they left, then let the guard go.

        Costs two system calls per agent when nothing was left (the agents'
        groups are empty and the runner has no other child); otherwise it
        reads ``/proc`` until nothing of the run is left, at most ``SWEEP_S``.
        """
        with self._lock:
            if not self._active:
                return
            self._active = False
            guard, self._guard = self._guard, None
        if guard is not None:  # the run ended: the guard is not needed (SIGKILL: it must not sweep, and is quickest)
            guard.kill()
            guard.wait()
            if guard.stdin is not None:
                guard.stdin.close()
        if any(_group_exists(group) for group in self.groups) or has_children():
            self._sweep()

    def _sweep(self) -> None:
        """Kill the run's children layer by layer (killing one re-parents its children to us) until none is left."""
        marker = f"{MARKER}={self.token}".encode()
        end = time.monotonic() + SWEEP_S
        while time.monotonic() < end:
            found = [child for child in children() if self._owns(child.pgid, child.sid, child.pid, marker)]
            if not found and not any(_group_exists(group) for group in self.groups):
                return
            for child in found:
                if child.state not in ("Z", "X"):
                    _kill(child.pid)
            pending = {child.pid for child in found}
            while pending and time.monotonic() < end:  # SIGKILL is quick: wait for these before reading /proc again
                pending = {pid for pid in pending if not _reaped(pid)}
                if pending:
                    time.sleep(0.001)
            if not found:
                time.sleep(0.005)  # group members that are not our children yet: their parents are dying

    def _owns(self, pgid: int, sid: int, pid: int, marker: bytes) -> bool:
        if (EXCLUSIVE and pid not in self._before) or pgid in self.groups or sid in self.groups:
            return True
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                environ = handle.read()
        except OSError:
            return False
        return marker in environ.split(b"\0")


@contextmanager
def exclusive(on: bool = True) -> Iterator[None]:
    """``EXCLUSIVE`` set for the block (``rpc run``: the process exists for the run), restored after."""
    global EXCLUSIVE
    saved, EXCLUSIVE = EXCLUSIVE, on
    try:
        yield
    finally:
        EXCLUSIVE = saved


def wrap_pid_namespace(argv: list[str]) -> list[str]:
    """``argv`` run as the init of a new PID namespace that dies with the runner (bubblewrap).

    Raises ``OSError`` when bubblewrap is not installed.
    """
    import shutil  # not on a run's path: it loads the compression modules

    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise FileNotFoundError("pid_namespace needs bubblewrap ('bwrap' on PATH): install the bubblewrap package")
    return [bwrap, "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "--die-with-parent", "--", *argv]


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _reaped(pid: int) -> bool:
    """Reap ``pid`` if it has exited; True once it is gone (or was never our child)."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] != 0
    except ChildProcessError:
        return True
