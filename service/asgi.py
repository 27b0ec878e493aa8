"""ASGI entry point: HTTP through Django (and /api/mcp through the MCP server), the event stream through Channels
(DESIGN.md section 2)."""

import asyncio
import contextlib
import os
from concurrent.futures import ThreadPoolExecutor

import django
from asgiref.sync import sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.db import close_old_connections
from django.http import FileResponse
from django.urls import set_script_prefix

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "service.settings")
django.setup(set_prefix=False)


class OneHopHandler(ASGIHandler):
    """Django's ASGI handler, with requests run as a WSGI server runs them: the middleware chain and the view in one
    call, on one thread that keeps its database connection.

    - Django's own handler runs each synchronous middleware method in a sync_to_async hop of its own (two per
      middleware, ~18 a request here), and every view of the API is synchronous.
    - It also gives each request a thread of its own (ThreadSensitiveContext), and Django's connections are per
      thread, so every request started a thread and opened a database connection (for SQLite with its PRAGMAs
      and functions: a fifth of a short request under load).

    - Its request signals each took a hop of their own too (request_started before the request, request_finished
      in the answer's close).

    Here the chain is loaded in sync mode, and a request's synchronous part is one call on the process's one request
    thread, which keeps its connections as a WSGI worker does (CONN_MAX_AGE; closed after a database error):
    request_started, the request, the middleware chain and the view, and for an answer that is whole (all but the
    export's stream and static files) its close with request_finished, before it is sent. A streamed answer is sent
    as Django sends it, stopped when the client goes away, and closed after.
    """

    def __init__(self) -> None:
        super().__init__()
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="requests")

    async def __call__(self, scope, receive, send):
        # Without Django's ThreadSensitiveContext, which started a thread per request for the request signals'
        # synchronous receivers: they share asgiref's one thread-sensitive thread instead.
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def handle(self, scope, receive, send):
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        try:
            response = await self._in_request_thread(self._respond, scope, body_file)
            if not response.streaming:
                await self.send_response(response, send)
                return
            streaming = asyncio.create_task(self.send_response(response, send))
            disconnect = asyncio.create_task(self.listen_for_disconnect(receive))
            await asyncio.wait([streaming, disconnect], return_when=asyncio.FIRST_COMPLETED)
            for task in (disconnect, streaming):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, RequestAborted):
                    await task
            await self._in_request_thread(response.close)
        finally:
            body_file.close()

    def _in_request_thread(self, function, *args):
        return sync_to_async(function, thread_sensitive=False, executor=self._thread)(*args)

    def _respond(self, scope, body_file):
        set_script_prefix(get_script_prefix(scope))
        signals.request_started.send(sender=self.__class__, scope=scope)
        request, response = self.create_request(scope, body_file)
        if request is not None:
            close_old_connections()
            try:
                response = self.get_response(request)
            finally:
                close_old_connections()
            response._handler_class = self.__class__
            if isinstance(response, FileResponse):
                response.block_size = self.chunk_size
        if not response.streaming:
            response.close()  # request_finished; a whole answer's body is already made
        return response


django_asgi_app = OneHopHandler()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import OriginValidator  # noqa: E402
from channels.sessions import SessionMiddlewareStack  # noqa: E402
from django.conf import settings  # noqa: E402
from django.urls import path, re_path  # noqa: E402

from runs.consumers import EventsConsumer  # noqa: E402
from service.body_limit import BodyLimit  # noqa: E402
from service.mcp.http import HttpEndpoint  # noqa: E402


class BrowserOriginValidator(OriginValidator):
    """Browsers always send Origin, and it must be one of ours (or one of CSRF_TRUSTED_ORIGINS). Scripts send none;
    they pass here and must then authenticate with an Authorization header (a session cookie without Origin is
    not accepted). The consumer checks a session's Origin exactly, port included."""

    def valid_origin(self, parsed_origin) -> bool:
        if parsed_origin is None or self.validate_origin(parsed_origin):
            return True
        return f"{parsed_origin.scheme}://{parsed_origin.netloc}" in settings.CSRF_TRUSTED_ORIGINS


mcp_endpoint = HttpEndpoint()

application = ProtocolTypeRouter(
    {
        # /api/mcp answers with or without a trailing slash, never with a redirect (MCP clients POST to it).
        # Bodies over API_MAX_BODY_BYTES are refused before they are read (service/body_limit.py).
        "http": BodyLimit(
            URLRouter([path("api/mcp", mcp_endpoint), path("api/mcp/", mcp_endpoint), re_path(r"", django_asgi_app)])
        ),
        "websocket": BrowserOriginValidator(
            SessionMiddlewareStack(URLRouter([path("api/events", EventsConsumer.as_asgi())])),
            settings.ALLOWED_HOSTS,
        ),
    }
)
