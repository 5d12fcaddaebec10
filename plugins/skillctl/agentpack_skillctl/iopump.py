"""One thread, one selector: feed stdin, collect stdout, pass stderr through, honour a deadline.

The process's exit is an event of the same selector (a pidfd on Linux), so
nothing polls. A skill that exits while a child of it still holds the pipes
open does not keep the run waiting: after a short grace the whole process
group is killed.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Callable
from typing import Any, ClassVar

from agentpack.io.proc import kill_group, pidfd
from agentpack.kernel.records import Record, constant

CHUNK = 65536
EXIT_GRACE_S = 0.2


class Pumped(Record):
    """What ``pump`` collected: ``stdout``, ``stderr_kept`` (the first bytes), sizes, flags and ``returncode``."""

    __slots__ = (
        "stdout",
        "stdout_overflow",
        "stderr_kept",
        "stderr_bytes",
        "stderr_truncated",
        "timed_out",
        "leftover_killed",
        "returncode",
        "chunks",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "stdout": constant(b""),
        "stdout_overflow": constant(False),
        "stderr_kept": constant(b""),
        "stderr_bytes": constant(0),
        "stderr_truncated": constant(False),
        "timed_out": constant(False),
        "leftover_killed": constant(0),
        "returncode": constant(None),
        "chunks": list,
    }
    stdout: bytes
    stdout_overflow: bool
    stderr_kept: bytes
    stderr_bytes: int
    stderr_truncated: bool
    timed_out: bool
    leftover_killed: int
    returncode: int | None
    chunks: list[bytes]


def pump(
    proc: subprocess.Popen,
    data: bytes,
    *,
    timeout_s: float,
    max_stdout: int,
    keep_stderr: int,
    on_stderr: Callable[[bytes], None] | None = None,
) -> Pumped:
    result = Pumped()
    deadline = time.monotonic() + timeout_s
    stdout_size = 0
    kept = bytearray()
    sel = selectors.DefaultSelector()
    if proc.stdin is not None:
        os.set_blocking(proc.stdin.fileno(), False)
        if data:
            sel.register(proc.stdin, selectors.EVENT_WRITE)
        else:
            proc.stdin.close()
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            sel.register(pipe, selectors.EVENT_READ)
    exit_fd = pidfd(proc.pid)
    if exit_fd is not None:
        sel.register(exit_fd, selectors.EVENT_READ)
    view = memoryview(data)
    offset = 0
    exited_at: float | None = None
    try:
        while sel.get_map() and not result.stdout_overflow:
            now = time.monotonic()
            if now >= deadline:
                result.timed_out = True
                break
            if exited_at is None and exit_fd is None and proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > EXIT_GRACE_S:
                break  # the skill is gone; whatever holds its pipes is a leftover child
            if exited_at is not None:
                wait = min(deadline, exited_at + EXIT_GRACE_S) - now + 0.001
            else:
                wait = deadline - now if exit_fd is not None else min(deadline - now, 0.25)
            for key, _ in sel.select(wait):
                stream: Any = key.fileobj  # a pipe of proc, or the pidfd
                if stream is exit_fd:
                    sel.unregister(exit_fd)
                    exited_at = time.monotonic()
                    continue
                if proc.stdin is not None and stream is proc.stdin:
                    try:
                        offset += os.write(stream.fileno(), view[offset : offset + CHUNK])
                    except (BrokenPipeError, ConnectionResetError):
                        offset = len(data)
                    if offset >= len(data):
                        sel.unregister(stream)
                        stream.close()
                    continue
                chunk = os.read(stream.fileno(), CHUNK)
                if not chunk:
                    sel.unregister(stream)
                    continue
                if key.fileobj is proc.stdout:
                    stdout_size += len(chunk)
                    if stdout_size > max_stdout:
                        result.stdout_overflow = True  # ends the run now: a blocked writer would only time out
                        break
                    result.chunks.append(chunk)
                else:
                    result.stderr_bytes += len(chunk)
                    if on_stderr is not None:
                        on_stderr(chunk)
                    room = keep_stderr - len(kept)
                    if room > 0:
                        kept += chunk[:room]
                    if len(chunk) > max(room, 0):
                        result.stderr_truncated = True
    finally:
        sel.close()
        if exit_fd is not None:
            os.close(exit_fd)
    if result.timed_out or result.stdout_overflow:
        result.returncode = kill_group(proc, grace=0.2)
    else:
        remaining = max(0.05, deadline - time.monotonic())
        try:
            result.returncode = proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            result.timed_out = True
            result.returncode = kill_group(proc, grace=0.2)
    result.leftover_killed = _kill_leftovers(proc.pid)
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None and not stream.closed:
            stream.close()
    result.stdout = b"".join(result.chunks)
    result.chunks = []
    result.stderr_kept = bytes(kept)
    return result


def _kill_leftovers(pgid: int) -> int:
    """SIGKILL what is left of the process group; the number of processes found (0 when none)."""
    import signal

    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return 0
    count = _count_group(pgid)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    return max(count, 1)


def _count_group(pgid: int) -> int:
    count = 0
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            count += 1
    return count
