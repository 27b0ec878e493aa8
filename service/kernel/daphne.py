"""The daphne, Twisted and autobahn internals the service relies on, in one place: what no ASGI message can do.

- How much a WebSocket client has left unread (the event stream's backpressure).
- Answering a WebSocket handshake with an HTTP status and reason (daphne answers a close before accept with 403).
- Closing with a reason (daphne drops an ASGI close's reason), and giving the close handshake time to drain.

daphne hands each application `partial(server.handle_reply, protocol)` as send, so its protocol (autobahn's
WebSocketServerProtocol, over a Twisted transport) is reachable from the send callable. Each function here falls
back (returns 0 or False) under another server. tests/service/test_daphne_internals.py pins the daphne version these
were read against and checks them on a real daphne.
"""

from __future__ import annotations

import functools

# The daphne release these internals were read against (and service/web_server.py's request hooks): a new one is
# read again before requirements.txt moves to it (tests/service/test_daphne_internals.py fails until then).
READ_AGAINST_DAPHNE = "4.2.3"


def protocol_of(send):
    """The daphne protocol behind an ASGI send callable, through the middlewares that wrap send (channels'
    session middleware keeps the inner one as `real_send`)."""
    for _ in range(8):
        if isinstance(send, functools.partial):
            return next(iter(send.args), None)
        send = getattr(getattr(send, "__self__", None), "real_send", None)
        if send is None:
            return None
    return None


def unsent_bytes(send) -> int:
    """Bytes the server holds for this connection because the client is not reading them.

    daphne's send never blocks: what a client does not read piles up in Twisted's transport buffer (after the
    kernel's socket buffers are full). daphne hands each application `partial(server.handle_reply, protocol)`,
    so the transport is reachable from the send callable (protocol_of); under another server this reports 0
    and only the inbox limit (EVENTS_MAX_BACKLOG) applies.
    """
    transport = getattr(protocol_of(send), "transport", None)
    if transport is None:
        return 0
    buffered = len(getattr(transport, "dataBuffer", b"")) - getattr(transport, "offset", 0)
    return max(0, buffered) + getattr(transport, "_tempDataLen", 0)


def deny_handshake(send, status: int, reason: str) -> bool:
    """Answer the WebSocket handshake with this HTTP status and reason; False when that cannot be done here."""
    handshake = getattr(protocol_of(send), "handshake_deferred", None)
    if handshake is None or handshake.called:
        return False
    from autobahn.websocket.types import ConnectionDeny

    handshake.errback(ConnectionDeny(code=status, reason=reason))
    return True


def close_with_reason(send, code: int, reason: str) -> bool:
    """Send a close frame with this code and reason; False when that cannot be done here."""
    protocol = protocol_of(send)
    if protocol is None or not hasattr(protocol, "sendClose"):
        return False
    protocol.sendClose(code=code, reason=reason)
    return True


def allow_close_handshake(send, seconds: float) -> None:
    """Give the close handshake this long (autobahn's default is 1 s) before the connection is cut."""
    protocol = protocol_of(send)
    if hasattr(protocol, "closeHandshakeTimeout"):
        protocol.closeHandshakeTimeout = seconds
