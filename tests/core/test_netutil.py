"""The listening sockets of agentpack's servers: accepted connections have Nagle's algorithm off."""

from __future__ import annotations

import asyncio
import socket

import pytest

from agentpack.io.errors import AgentpackError
from agentpack.io.netutil import bind_socket


def _nodelay(sock: socket.socket) -> bool:
    return bool(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))


def test_the_listening_socket_is_made_for_tcp():
    with bind_socket("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP  # what asyncio looks at before it sets TCP_NODELAY
        assert _nodelay(sock)


def test_a_connection_asyncio_accepts_has_tcp_nodelay():
    seen: list[bool] = []

    async def main() -> None:
        listener = bind_socket("127.0.0.1", 0)
        accepted = asyncio.Event()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                seen.append(_nodelay(transport.get_extra_info("socket")))
                accepted.set()
                transport.close()

        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            await asyncio.wait_for(accepted.wait(), 30)
            writer.close()

    asyncio.run(main())
    assert seen == [True]


def test_a_connection_accepted_by_hand_has_tcp_nodelay():
    with bind_socket("127.0.0.1", 0) as listener, socket.create_connection(listener.getsockname()[:2], timeout=30):
        conn, _ = listener.accept()
        with conn:
            assert _nodelay(conn)


def test_a_port_in_use_is_a_one_line_error():
    with bind_socket("127.0.0.1", 0) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(AgentpackError, match=f"port {port} on 127.0.0.1 is already in use"):
            bind_socket("127.0.0.1", port)
