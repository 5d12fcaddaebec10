"""The stdio transport: one agent process, one JSON object per line, read by one poll loop.

There is no reader thread: the caller's thread polls the agent's stdout and
stderr (non-blocking pipes) until the answer with the awaited id arrives,
draining stderr into a bounded tail buffer on the way, so a chatty agent can
never block on a full pipe while a call is in flight. The agent runs in its
own process group (``agentpack.io.proc.spawn``); ``close`` and ``kill`` take
the whole group down, so no grandchild outlives the run.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from typing import Any

from agentpack.io.jsonio import JsonError, loads
from agentpack.io.proc import kill_group, pidfd, spawn

from .containment import Containment, wrap_pid_namespace
from .protocol import AgentTimeout, AgentUnreachable, ProtocolError, TransportError

READ_SIZE = 1 << 16
MAX_WARNINGS = 20
SPIN_S = 0.0002
"""How long ``spin`` busy-polls for an answer before sleeping in ``poll``."""


class TailBuffer:
    """Keeps the last ``limit`` bytes written to it and counts what it dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        excess = len(self.data) - self.limit
        if excess > 0:
            del self.data[:excess]
            self.dropped += excess

    def take(self) -> str:
        """The text collected since the last ``take`` (with a note of what was dropped), then reset."""
        if not self.data and not self.dropped:  # the usual step: nothing on stderr
            return ""
        text = self.data.decode("utf-8", "replace")
        if self.dropped:
            text = f"[... {self.dropped} earlier bytes of stderr dropped ...]\n{text}"
        self.data = bytearray()
        self.dropped = 0
        return text


def parse_line(line: bytes) -> Any:
    """One line of the agent's stdout as JSON (``agentpack.io.jsonio``: a nesting limit, no NaN).

    ``JsonError`` for a line that is not JSON (the caller skips it: libraries
    print); ``ProtocolError`` for a JSON-RPC message the runtime cannot accept
    (nested deeper than ``agentpack.io.jsonio.MAX_DEPTH``, holding NaN or
    infinity, cut short), since skipping it would leave the call waiting for
    an answer that already came.
    """
    try:
        return loads(line)
    except JsonError as exc:
        if b'"jsonrpc"' in line:
            raise ProtocolError(f"the agent's reply is not usable JSON: {exc.message}") from None
        raise


class StdioTransport:
    """One agent process over stdio: ``env`` is added to the runner's environment, ``scope`` contains it."""

    kind = "stdio"

    def __init__(
        self,
        argv: list[str] | str,
        *,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        stderr_limit: int = 64 * 1024,
        max_message: int = 64 * 1024 * 1024,
        scope: Containment | None = None,
        pid_namespace: bool = False,
    ) -> None:
        self.argv = argv
        self.max_message = max_message
        self.stderr = TailBuffer(stderr_limit)
        self.warnings: list[str] = []
        command = ["/bin/sh", "-c", argv] if isinstance(argv, str) else argv  # a string: a shell command line
        try:
            if pid_namespace:
                command = wrap_pid_namespace(command)
            self.proc = spawn(
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=scope.environment(env) if scope is not None else {**os.environ, **env} if env else None,
                bufsize=0,
            )
        except OSError as exc:
            shown = argv if isinstance(argv, str) else " ".join(argv)
            where = f" in {cwd}" if cwd else ""
            raise AgentUnreachable(f"cannot start agent '{shown}'{where}: {exc.strerror or exc}") from None
        self.scope = scope
        """The containment the agent was started in, if any (see ``containment``)."""
        if scope is not None:
            scope.started(self.proc.pid)
        self.pid = self.pgid = self.proc.pid
        stdin, stdout, stderr = self.proc.stdin, self.proc.stdout, self.proc.stderr
        assert stdin is not None and stdout is not None and stderr is not None  # all three are pipes
        self._pipes = (stdin, stdout, stderr)
        self._in, self._out, self._err = stdin.fileno(), stdout.fileno(), stderr.fileno()
        for fd in (self._in, self._out, self._err):
            os.set_blocking(fd, False)
        self._poll = select.poll()
        self._poll.register(self._out, select.POLLIN)
        self._poll.register(self._err, select.POLLIN)
        self._open = {self._out, self._err}
        self._dead = False
        self._pidfd = pidfd(self.pid)
        if self._pidfd is not None:  # the agent's exit wakes the poll even if a grandchild holds its pipes
            self._poll.register(self._pidfd, select.POLLIN)
        self._buf = bytearray()
        self._scan = 0
        self._closed = False
        self.broken = False
        """Set after a timeout or a desynchronised stream: the session must not be reused."""
        self.spin = False
        """Busy-poll up to ``SPIN_S`` for answers while the agent answers that fast (set by a serial run on a
        machine with more than one CPU): waking from ``poll`` costs as long as a quick agent takes to answer."""
        self._quick = True
        self._sent = 0.0

    # -- reading -------------------------------------------------------------------
    def _read_ready(self, timeout: float, want_write: bool = False) -> bool:
        """Poll up to ``timeout`` seconds, read what is there; True when stdin became writable."""
        if want_write:
            self._poll.register(self._in, select.POLLOUT)
        try:
            events = self._poll.poll(max(0.0, timeout) * 1000)
        finally:
            if want_write:
                self._poll.unregister(self._in)
        writable = False
        if not events and self._pidfd is None and not self._dead:
            self._dead = self.proc.poll() is not None
        for fd, _mask in events:
            if fd == self._in:
                writable = True
                continue
            if fd == self._pidfd:
                self._dead = True
                self._poll.unregister(fd)
                os.close(fd)
                self._pidfd = -1
                continue
            try:
                chunk = os.read(fd, READ_SIZE)
            except BlockingIOError:
                continue
            if fd == self._err:
                if chunk:
                    self.stderr.add(chunk)
                else:
                    self._drop(fd)
            elif chunk:
                self._buf += chunk
            else:
                self._drop(fd)
        return writable

    def _drop(self, fd: int) -> None:
        if fd in self._open:
            self._open.discard(fd)
            self._poll.unregister(fd)

    def _line(self) -> bytes | None:
        index = self._buf.find(b"\n", self._scan)
        if index < 0:
            self._scan = len(self._buf)
            if self._scan > self.max_message:
                self.broken = True
                raise ProtocolError(f"agent wrote a message larger than {self.max_message} bytes without a newline")
            return None
        line = bytes(self._buf[:index])
        del self._buf[: index + 1]
        self._scan = 0
        return line

    def _warn(self, text: str) -> None:
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(text)
        elif len(self.warnings) == MAX_WARNINGS:
            self.warnings.append("(further warnings suppressed)")

    def receive(self, deadline: float) -> Any:
        """The next JSON value the agent writes; non-JSON lines are skipped with a warning (see ``parse_line``)."""
        while True:
            line = self._line()
            if line is not None:
                if not line.strip():
                    continue
                try:
                    return parse_line(line)
                except JsonError:
                    shown = line[:200].decode("utf-8", "replace")
                    self._warn(f"skipped non-JSON stdout line: {shown!r}")
                    continue
                except ProtocolError:
                    self.broken = True
                    raise
            if self._out not in self._open or (self._dead and not self._more_stdout()):
                raise self._exited()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.broken = True
                raise AgentTimeout("agent did not answer in time")
            if self.spin and self._quick and self._spin():
                self._read_ready(0)
                continue
            self._read_ready(remaining if self._pidfd is not None else min(remaining, 0.05))
            self._quick = time.perf_counter() - self._sent <= SPIN_S

    def _spin(self) -> bool:
        """Poll without sleeping for up to ``SPIN_S``; True when something is ready (or the agent is gone)."""
        poll, clock = self._poll.poll, time.perf_counter
        end = clock() + SPIN_S
        while clock() < end:
            if poll(0):
                return True
        self._quick = False
        return False

    def _more_stdout(self) -> bool:
        """After the agent exited: read what it left in the pipe; False when nothing more will come."""
        try:
            chunk = os.read(self._out, READ_SIZE)
        except BlockingIOError:
            return False
        if not chunk:
            self._drop(self._out)
            return False
        self._buf += chunk
        return True

    def _exited(self) -> TransportError:
        self.broken = True
        try:
            code = self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            code = None
        self._drain_stderr(0.2)
        how = "closed its stdout" if code is None else f"exited with status {code}"
        return TransportError(f"agent {how} before answering")

    def _drain_stderr(self, budget: float) -> None:
        end = time.monotonic() + budget
        while self._err in self._open and time.monotonic() < end:
            self._read_ready(min(0.02, budget))

    # -- writing ---------------------------------------------------------------------
    def send(self, data: bytes, deadline: float) -> None:
        self._sent = time.perf_counter()
        view = memoryview(data)
        while view:
            try:
                written = os.write(self._in, view)
                view = view[written:]
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    self.broken = True
                    raise AgentTimeout("agent stopped reading its stdin") from None
                self._read_ready(remaining, want_write=True)
            except (BrokenPipeError, OSError):
                raise self._exited() from None

    def call(self, data: bytes, request_id: int, deadline: float) -> Any:
        """Send one request line and return the response with ``request_id``.

        Late answers to earlier (timed-out) requests and agent notifications are
        skipped with a warning; any other id is a protocol error.
        """
        self.send(data + b"\n", deadline)
        while True:
            message = self.receive(deadline)
            if not isinstance(message, dict):
                return message
            msg_id = message.get("id")
            if msg_id == request_id and not isinstance(msg_id, bool):
                return message
            if "method" in message and "result" not in message and "error" not in message:
                continue  # a notification from the agent
            if msg_id is None and "error" in message:
                return message  # the agent could not parse our request
            if isinstance(msg_id, int) and not isinstance(msg_id, bool) and 0 < msg_id < request_id:
                self._warn(f"skipped a late answer to request {msg_id}")
                continue
            self.broken = True
            raise ProtocolError(f"response id mismatch: expected {request_id}, got {msg_id!r}")

    def notify(self, data: bytes, deadline: float) -> None:
        self.send(data + b"\n", deadline)

    # -- ending --------------------------------------------------------------------------
    def kill(self) -> None:
        """SIGKILL the whole process group now (safe from another thread)."""
        self.broken = True
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def end_input(self) -> None:
        """Close the agent's stdin, its signal to exit; ``close`` then waits for it."""
        try:
            self._pipes[0].close()
        except OSError:
            pass

    def close(self, grace: float = 0.5) -> int | None:
        """Close stdin, give the agent ``grace`` seconds to exit, then kill its process group."""
        if self._closed:
            return self.proc.returncode
        self._closed = True
        self.end_input()
        end = time.monotonic() + (0 if self.broken else grace)
        while self.proc.poll() is None and time.monotonic() < end:
            if self._open or (self._pidfd is not None and self._pidfd >= 0):  # the pidfd wakes the poll at its exit
                self._read_ready(min(0.01, max(0.0, end - time.monotonic())))
            else:
                time.sleep(0.005)
        if self.proc.poll() is None:
            kill_group(self.proc, grace=0.2)
        try:  # grandchildren left in the group
            os.killpg(self.pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self._drain_stderr(0.05)
        if self._pidfd is not None and self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
        for stream in self._pipes[1:]:
            try:
                stream.close()
            except OSError:
                pass
        try:
            return self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return None
