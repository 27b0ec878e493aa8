"""Streamable HTTP at /api/mcp, behind the API's Bearer keys."""

from __future__ import annotations

import logging
import math
from types import SimpleNamespace

from django.conf import settings
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from rest_framework import exceptions
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from service.kernel.auth import BEARER_FORM, PerKeyRateThrottle, authenticate_key, bearer_key
from service.kernel.errors import error_body
from service.mcp.server import server
from service.mcp.tools import in_thread

# Every stateless HTTP request starts and stops its own session manager and transport, and the SDK logs each of
# those at INFO: two or three lines per request that say nothing.
for _chatty in ("mcp.server.streamable_http_manager", "mcp.server.streamable_http"):
    logging.getLogger(_chatty).setLevel(logging.WARNING)


def _key_problem(header: str) -> tuple[int, dict, dict[str, str]] | None:
    """Why an Authorization header does not let its caller in, or why not now, in the API's words and codes
    (service/kernel/auth.py): (status, error body, headers); None if it does. A valid key spends its API_RATE_LIMIT
    budget here as on the HTTP API (the same counter: one budget per key)."""
    unauthenticated = {"WWW-Authenticate": 'Bearer realm="api"'}
    if not header:
        return 401, error_body("unauthenticated", str(exceptions.NotAuthenticated.default_detail)), unauthenticated
    raw = bearer_key(header)
    if raw is None:
        return 401, error_body("unauthenticated", BEARER_FORM), unauthenticated
    holder = authenticate_key(raw)
    if holder is None:
        return 401, error_body("unauthenticated", "The API key is not valid or has been revoked."), unauthenticated
    throttle = PerKeyRateThrottle()
    if not throttle.allow_request(SimpleNamespace(user=holder), None):
        wait = throttle.wait()
        limited = exceptions.Throttled(wait)
        return 429, error_body("rate_limited", str(limited.detail)), {"Retry-After": str(math.ceil(wait or 1))}
    return None


class HttpEndpoint:
    """The server over streamable HTTP, behind the API's Bearer keys, answering like the API when the key is wrong.

    Stateless with JSON responses: every POST is served on its own, so nothing outlives a request. That is also why
    each request gets its own session manager: daphne runs no ASGI lifespan, and a manager's run() (its task group)
    then lasts exactly as long as the request it serves. Host/Origin checks (the SDK's DNS-rebinding guard) are off:
    the endpoint takes no cookies, only a key a rebinding page cannot have."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        header = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
        problem = await in_thread(_key_problem)(header)
        if problem is not None:
            status_code, body, headers = problem
            await JSONResponse(body, status_code=status_code, headers=headers)(scope, receive, send)
            return
        if scope["method"] != "POST":
            # Stateless: no stream to GET (the spec's answer is 405) and no session to DELETE.
            message = str(exceptions.MethodNotAllowed(scope["method"]).detail)
            response = JSONResponse(
                error_body("method_not_allowed", message), status_code=405, headers={"Allow": "POST"}
            )
            await response(scope, receive, send)
            return
        manager = StreamableHTTPSessionManager(
            app=server, stateless=True, json_response=True, max_request_body_size=settings.API_MAX_BODY_BYTES
        )
        async with manager.run():
            await manager.handle_request(scope, receive, send)
