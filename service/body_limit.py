"""Request bodies over API_MAX_BODY_BYTES are refused with 413 on every HTTP route, the MCP endpoint included.

Wraps the HTTP side of the ASGI application: a Content-Length over the limit is answered before the application
reads a byte of the body; a body without one (chunked) is counted as the application reads it and cut off at the
limit (the application sees the client leave, and the 413 is sent here). Django's own handler would otherwise copy
the whole body into a temporary file first, and the MCP endpoint would read it into memory.
Under plain daphne, Twisted still receives a request's whole body (into its own temporary file past 100 KB) before
the application is called: `serve` runs daphne through service/web_server.py, which drops such a body as it arrives.
"""

from __future__ import annotations

import json

from django.conf import settings

from service.kernel.errors import error_body


def _content_length(scope: dict) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send, limit: int) -> None:
    body = json.dumps(error_body("too_large", f"The request body is larger than the limit of {limit} bytes.")).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = settings.API_MAX_BODY_BYTES
        length = _content_length(scope)
        if length is not None and length > limit:
            return await _refuse(send, limit)
        received = 0
        over = False
        answered = False

        async def bounded_receive():
            nonlocal received, over
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    over = True
                    return {"type": "http.disconnect"}
            return message

        async def watched_send(message):
            nonlocal answered
            if message["type"] == "http.response.start":
                answered = True
            await send(message)

        await self.app(scope, bounded_receive, watched_send)
        if over and not answered:
            await _refuse(send, limit)
