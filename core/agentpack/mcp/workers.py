"""Worker processes for ``agentpack mcp serve --workers N``: one listening socket, N forked servers.

The parent binds the socket, builds the app, then forks; each worker runs its
own event loop on the shared socket and the kernel hands each new connection
to one of them, so tool calls use as many cores as there are workers. The
parent only supervises: SIGTERM or SIGINT stops every worker (exit 0 once all
have stopped); a worker that dies on its own stops the rest (exit 1), so a
broken server is never left half-serving. A request may reach any worker, so
``serve`` runs the app stateless when there is more than one (no session spans
two requests).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Callable
from types import FrameType

from agentpack.io.errors import AgentpackError

log = logging.getLogger("agentpack.mcp")

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def run_workers(serve_one: Callable[[], None], count: int) -> int:
    """Fork ``count`` processes that each call ``serve_one``; wait for them and return the exit code."""
    if not hasattr(os, "fork"):
        raise AgentpackError("--workers above 1 needs a platform with fork()", hint="use --workers 1")
    children: set[int] = set()
    stopping = False

    def stop(signum: int = signal.SIGTERM, frame: FrameType | None = None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            _signal(pid, signal.SIGTERM)

    previous = {sig: signal.signal(sig, stop) for sig in _STOP_SIGNALS}
    try:
        for _ in range(count):
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the child's coverage is not collected
                _child(serve_one)
            children.add(pid)
        code = 0
        while children:
            pid, status = os.wait()
            children.discard(pid)
            if not stopping:
                log.error("worker %d stopped (%s); stopping the others", pid, _describe(status))
                code = 1
                stop()
        return code
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _child(serve_one: Callable[[], None]) -> None:  # pragma: no cover - runs in the forked worker
    """Serve in a forked worker and leave with ``os._exit`` (never return into the parent's code)."""
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    code = 0
    try:
        serve_one()
    except BaseException:
        log.exception("worker %d failed", os.getpid())
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exit {os.waitstatus_to_exitcode(status)}"
