"""Serve the viewer with uvicorn on a socket bound here, so a port in use is one clear error."""

from __future__ import annotations

import errno
import socket
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError, require


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port); ``AgentpackError`` when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AgentpackError(
                f"port {port} on {host} is in use; choose another with --port (0: any free port)"
            ) from None
        raise AgentpackError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def serve(sock: socket.socket, store: Path, views: Any = ()) -> None:
    """Run the app on ``sock`` until Ctrl-C (uvicorn re-raises the signal once it has shut down)."""
    require("starlette", distribution="agentpack-core", extra="mcp", feature="agentpack view")
    uvicorn = require("uvicorn", distribution="agentpack-core", extra="mcp", feature="agentpack view")
    from agentpack.io.hostcheck import HostCheck, HostGuard
    from agentpack.results.viewer.app import create_app

    host, port = sock.getsockname()[:2]
    app = HostCheck(create_app(store, views), HostGuard.of(host, port))  # DNS rebinding: only this server's names
    config = uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
