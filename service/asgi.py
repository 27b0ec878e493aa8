"""ASGI entry point: HTTP through Django (and /api/mcp through the MCP server), the event stream through Channels
(DESIGN.md section 2)."""

import os

import django
from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "service.settings")
django.setup(set_prefix=False)


class OneHopHandler(ASGIHandler):
    """Django's ASGI handler, with the middleware chain and the view run in one thread hop per request.

    Django's own runs each synchronous middleware method through its own sync_to_async hop under ASGI (two per
    middleware, ~18 a request here), and every view of the API is synchronous: under load the hops, not the work,
    held one web process to ~25 requests a second. Here the chain is loaded in sync mode and called once in the
    thread where Django runs synchronous code (thread_sensitive), as a WSGI server would call it; streaming answers
    (the export) and the request signals stay ASGIHandler's.
    """

    def load_middleware(self, is_async: bool = False) -> None:
        super().load_middleware(is_async=False)

    async def get_response_async(self, request):
        return await sync_to_async(self.get_response, thread_sensitive=True)(request)


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
