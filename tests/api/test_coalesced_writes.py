"""The server's transport sends the writes of one turn of the event loop together (a response's head,
body and end were three sends), keeps their order, and never loses bytes on close."""

from __future__ import annotations

import asyncio
import socket

from bookwise.api.server import _CoalescingTransport


async def _pair() -> tuple[_CoalescingTransport, socket.socket]:
    ours, theirs = socket.socketpair()
    theirs.setblocking(False)
    loop = asyncio.get_running_loop()
    transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
    return _CoalescingTransport(transport, loop), theirs  # type: ignore[arg-type]


def _received(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return b""


def test_writes_of_one_turn_leave_together_and_in_order() -> None:
    async def scenario() -> tuple[bytes, bytes]:
        transport, peer = await _pair()
        for part in (b"HTTP/1.1 200 OK\r\n\r\n", b"{", b'"ok": true}'):
            transport.write(part)
        before_the_turn_ends = _received(peer)
        await asyncio.sleep(0.05)
        after = _received(peer)
        transport.close()
        peer.close()
        return before_the_turn_ends, after

    before, after = asyncio.run(scenario())
    assert before == b""
    assert after == b'HTTP/1.1 200 OK\r\n\r\n{"ok": true}'


def test_close_sends_what_is_pending_first() -> None:
    async def scenario() -> bytes:
        transport, peer = await _pair()
        transport.write(b"last words")
        transport.close()
        await asyncio.sleep(0.05)
        received = _received(peer)
        peer.close()
        return received

    assert asyncio.run(scenario()) == b"last words"


def test_abort_drops_what_is_pending() -> None:
    async def scenario() -> bytes:
        transport, peer = await _pair()
        transport.write(b"never sent")
        transport.abort()
        await asyncio.sleep(0.05)
        received = _received(peer)
        peer.close()
        return received

    assert asyncio.run(scenario()) == b""
