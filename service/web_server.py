"""daphne as the service runs it: `python -m service.web_server <daphne's own arguments>`.

Two differences from `daphne`. It can adopt an IPv6 listening socket (`-e fd:fileno=N:domain=INET6`), as `serve`
hands one socket to all its web processes. And a request body over API_MAX_BODY_BYTES is not stored. Twisted, under
daphne, keeps a request's whole body (in memory, or in a temporary file past 100 KB) before the application is
called, so the ASGI-level limit (service/body_limit.py) could only answer 413 once a body of any size had been
written to disk. Here the request refuses it as it arrives: from Content-Length, or as a body without one (chunked)
passes the limit; the rest of the body is read and dropped (so the client gets the answer, not a reset), and the 413
is sent when it ends, in the API's error shape.
"""

from __future__ import annotations

import json
import re
import socket
import sys
import time
from io import BytesIO

from daphne import server as daphne_server
from daphne.cli import CommandLineInterface
from daphne.http_protocol import HTTPFactory, WebRequest
from twisted.internet.endpoints import AdoptedStreamServerEndpoint, serverFromString


def _limit() -> int:
    from django.conf import settings  # configured by then: daphne loads the application before it listens

    return settings.API_MAX_BODY_BYTES


class LimitedRequest(WebRequest):
    too_large = False
    received = 0

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > _limit():
            self._drop_body()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self.too_large:
            return
        self.received += len(data)
        if self.received > _limit():
            self.content.close()
            self._drop_body()
            return
        super().handleContentChunk(data)

    def _drop_body(self) -> None:
        self.too_large = True
        self.content = BytesIO()  # what Twisted reads when the request ends: nothing

    def process(self):
        if not self.too_large:
            return super().process()
        from service.kernel.errors import error_body

        limit = _limit()
        self.request_start = time.time()
        body = json.dumps(error_body("too_large", f"The request body is larger than the limit of {limit} bytes."))
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        self.handle_reply({"type": "http.response.start", "status": 413, "headers": headers})
        self.handle_reply({"type": "http.response.body", "body": body.encode()})
        return None


class LimitedHTTPFactory(HTTPFactory):
    def buildProtocol(self, addr):
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = LimitedRequest
        return protocol


def server_from_string(reactor, description: str):
    """Twisted's endpoint strings, and one they cannot say: `fd:fileno=N:domain=INET6`, a listening socket handed
    over by `serve` (Twisted's fd parser takes the address family as a string it never converts, so only IPv4
    sockets could be adopted)."""
    adopted = re.fullmatch(r"fd:fileno=(\d+):domain=(INET6?)", description)
    if adopted is None:
        return serverFromString(reactor, description)
    family = socket.AF_INET6 if adopted[2] == "INET6" else socket.AF_INET
    return AdoptedStreamServerEndpoint(reactor, int(adopted[1]), family)


def main(argv: list[str]) -> None:
    # daphne's Server builds its HTTP factory and its endpoints by these module-level names, with no option to give
    # others.
    daphne_server.HTTPFactory = LimitedHTTPFactory
    daphne_server.serverFromString = server_from_string
    CommandLineInterface().run(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
