"""The daphne, Twisted and autobahn internals the service relies on (service/kernel/daphne.py, service/web_server.py)
are still where they were read. Their behaviour is tested through real daphne elsewhere (the event stream's
backpressure and handshake answers, bodies over the limit); this test names the internal that moved when a release
changes one, and pins the daphne release they were read against."""

from __future__ import annotations

import importlib.metadata
import inspect
import re
from pathlib import Path

from autobahn.twisted.websocket import WebSocketServerProtocol
from daphne import http_protocol, server, ws_protocol
from twisted.internet import abstract

from service.kernel.daphne import READ_AGAINST_DAPHNE

ROOT = Path(__file__).resolve().parents[2]


def test_the_installed_and_required_daphne_is_the_one_the_internals_were_read_against():
    pinned = re.search(r"^daphne==(\S+)$", (ROOT / "requirements.txt").read_text(), re.MULTILINE)
    assert pinned is not None, "requirements.txt pins daphne"
    assert importlib.metadata.version("daphne") == pinned[1] == READ_AGAINST_DAPHNE, (
        "daphne moved: read service/kernel/daphne.py and service/web_server.py against the new release, "
        "then update READ_AGAINST_DAPHNE"
    )


def test_the_send_callable_still_carries_the_protocol():
    # protocol_of(send): daphne gives each application partial(server.handle_reply, protocol).
    assert "send=partial(self.handle_reply, protocol)" in inspect.getsource(server.Server.create_application)


def test_the_websocket_protocol_still_has_what_the_stream_uses():
    assert "self.handshake_deferred" in inspect.getsource(ws_protocol.WebSocketProtocol.onConnect)
    assert callable(WebSocketServerProtocol.sendClose)
    # Copied from the factory onto each connection (allow_close_handshake sets the connection's own).
    assert "closeHandshakeTimeout" in WebSocketServerProtocol.CONFIG_ATTRS
    # unsent_bytes(send): what Twisted's transport holds for a client that does not read.
    source = inspect.getsource(abstract.FileDescriptor)
    assert all(name in source for name in ("self.dataBuffer", "self.offset", "self._tempDataLen"))


def test_the_request_hooks_of_the_web_server_are_still_there():
    assert isinstance(server.HTTPFactory, type)  # replaced by name in service/web_server.py
    for hook in ("gotLength", "handleContentChunk", "process", "handle_reply"):
        assert callable(getattr(http_protocol.WebRequest, hook)), hook
