"""Listening sockets for the servers agentpack runs (MCP, viewer, openexperts), bound before serving.

Binding first turns a port in use or a forbidden address into a one-line error
(exit 2) instead of a traceback from inside the ASGI server, and hands the
server a socket that is already listening (no window for another process).

The socket is made for TCP by name (``IPPROTO_TCP``, not protocol 0): asyncio
sets ``TCP_NODELAY`` on an accepted connection only when the listening socket's
``proto`` says TCP, and without it Nagle's algorithm meets the client's delayed
ACK and every small reply waits ~40 ms. ``TCP_NODELAY`` is also set on the
listening socket, which Linux copies to each accepted one (for servers that are
not asyncio's).
"""

from __future__ import annotations

import errno
import ipaddress
import socket

from agentpack.io.errors import AgentpackError


def bind_socket(host: str, port: int, *, backlog: int = 128) -> socket.socket:
    """A listening TCP socket on ``host:port`` (port 0 picks a free one); ``AgentpackError`` if it cannot be bound."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AgentpackError(
                f"port {port} on {host} is already in use", hint="choose another with --port"
            ) from None
        if exc.errno in (errno.EACCES, errno.EPERM):
            raise AgentpackError(f"not allowed to listen on {host}:{port}", hint="use a port above 1023") from None
        if exc.errno == errno.EADDRNOTAVAIL or isinstance(exc, socket.gaierror):
            raise AgentpackError(f"{host} is not an address of this machine") from None
        raise AgentpackError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(False)
    return sock


def is_loopback_host(host: str) -> bool:
    """Whether a bind address is loopback (127.0.0.0/8, ::1, ``::ffff:127.0.0.1``) or the name ``localhost``."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return bool((getattr(address, "ipv4_mapped", None) or address).is_loopback)
