from __future__ import annotations

import time

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token, rotate_token
from django.views.decorators.http import require_safe
from django_q.models import OrmQ
from django_q.status import Stat
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from drf_spectacular.views import SpectacularJSONAPIView, SpectacularSwaggerView
from prometheus_client import CONTENT_TYPE_LATEST
from rest_framework import serializers
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from runs.engine.browser import find_system_executable, sandbox_state
from runs.metrics import RunStates
from runs.models import Run
from service.kernel import metrics
from service.kernel.auth import (
    ApiKeyAuthentication,
    MetricsTokenAuthentication,
    SessionKeyAuthentication,
    note_failed_sign_in,
    refuse_foreign_origin,
    session_holder,
    session_sign_in,
    sign_in_wait,
)
from service.kernel.errors import ServiceError
from service.kernel.openapi import errors
from service.kernel.serializers import StrictSerializer

_workers_seen: tuple[float, int] = (0.0, 0)  # (when read, workers): this process's last reading


def workers_seen(max_age: float = 1.0) -> int:
    """Workers that reported in the last seconds (django-q's cluster stats), read again at most once a second per
    process: the reading rewrites a cache entry (with the file cache, a file), and load balancers poll health."""
    global _workers_seen
    read_at, workers = _workers_seen
    if time.monotonic() - read_at > max_age:
        workers = sum(len(stat.workers) for stat in Stat.get_all())
        _workers_seen = (time.monotonic(), workers)
    return workers


@extend_schema(
    responses=inline_serializer(
        "Health",
        {
            "status": serializers.CharField(),
            "db": serializers.BooleanField(),
            "queue": serializers.DictField(),
            "workers": serializers.IntegerField(),
            "browser": serializers.CharField(allow_null=True),
            "sandbox": inline_serializer(
                "BrowserSandbox", {"on": serializers.BooleanField(), "why": serializers.CharField()}
            ),
        },
    )
)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([AllowAny])
def health(request: Request) -> Response:
    """Liveness: database, queue depth, workers seen in the last seconds, browser found, whether Chromium runs
    in its sandbox (BROWSER_SANDBOX) and why not. No auth."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        db_ok = True
        queue = {
            **Run.objects.counts_by_status(Run.Status.QUEUED, Run.Status.RUNNING),
            "messages": OrmQ.objects.count(),
        }
    except Exception:
        db_ok, queue = False, {}
    workers = workers_seen()
    browser = find_system_executable(settings.BROWSER_EXECUTABLE)
    healthy = db_ok and browser is not None
    body = {
        "status": "ok" if healthy else "degraded",
        "db": db_ok,
        "queue": queue,
        "workers": workers,
        "browser": browser,
        "sandbox": dict(zip(("on", "why"), sandbox_state(settings.BROWSER_SANDBOX), strict=True)),
    }
    return Response(body, status=200 if db_ok else 503)


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    """The playground: frontend/dist/index.html for / and for every client-side route (/history, /runs/<id>…), so a
    reload or a shared link opens the right screen. Its hashed /assets/* are served by whitenoise (WHITENOISE_ROOT).
    index.html itself is never cached: a new build is picked up on the next load."""
    index = settings.FRONTEND_DIST / "index.html"
    if index.is_file():
        response = HttpResponse(index.read_bytes(), content_type="text/html; charset=utf-8")
        response["Cache-Control"] = "no-cache"
        # The playground shows untrusted page content (Markdown, observations): scripts, styles, images and
        # connections only from this origin, never framed.
        response["Content-Security-Policy"] = (
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
            "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
        )
        return response
    return HttpResponse(
        "<!doctype html><title>Web-data service</title><h1>Web-data service</h1>"
        "<p>The API is at <a href='/api/docs'>/api/docs</a> (Bearer key required). "
        "The playground UI has not been built: run <code>make ui</code> (needs Node.js 20.19+), then restart.</p>",
        content_type="text/html",
    )


class _JSONErrors:
    """The schema and docs views render YAML or HTML; their errors still use the API's JSON error shape."""

    def finalize_response(self, request, response, *args, **kwargs):
        if response.status_code >= 400:
            response = super().finalize_response(request, response, *args, **kwargs)
            response.accepted_renderer = JSONRenderer()
            response.accepted_media_type = "application/json"
            response.renderer_context = self.get_renderer_context()
            return response
        return super().finalize_response(request, response, *args, **kwargs)


class SchemaView(_JSONErrors, SpectacularJSONAPIView):
    pass


class DocsView(_JSONErrors, SpectacularSwaggerView):
    pass


class SignInSerializer(StrictSerializer):
    key = serializers.CharField(max_length=512, trim_whitespace=True)


class SessionSerializer(serializers.Serializer):
    signedIn = serializers.BooleanField()
    keyName = serializers.CharField(allow_null=True)


class SessionView(APIView):
    """The playground's sign-in: an API key exchanged for a session cookie (HttpOnly) plus the CSRF cookie its
    writes must echo in X-CSRFToken. GET says whether this browser is signed in (and sets the CSRF cookie that the
    sign-in itself must echo); DELETE signs out."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses=SessionSerializer)
    def get(self, request: Request) -> Response:
        get_token(request)  # sets the csrftoken cookie for the UI
        holder = session_holder(request.session)
        return Response({"signedIn": holder is not None, "keyName": holder.key_name if holder else None})

    @extend_schema(request=SignInSerializer, responses={200: SessionSerializer, **errors(401, 403, 429)})
    def post(self, request: Request) -> Response:
        refuse_foreign_origin(request)  # no page elsewhere signs this browser in
        # Nor a page whose origin the browser did not send: the sign-in echoes the CSRF cookie GET /api/session set
        # (login CSRF: a page signing this browser in with a key of its own).
        SessionKeyAuthentication().enforce_csrf(request)
        address = request.META.get("REMOTE_ADDR") or "unknown"
        wait = sign_in_wait(address)
        if wait is not None:
            raise ServiceError(
                "rate_limited",
                f"Too many failed sign-ins; try again in {wait} s.",
                status_code=429,
                headers={"Retry-After": str(wait)},
            )
        body = SignInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        holder = session_sign_in(request.session, body.validated_data["key"])
        if holder is None:
            note_failed_sign_in(address)
            raise ServiceError("unauthenticated", "The API key is not valid or has been revoked.", status_code=401)
        rotate_token(request)
        get_token(request)
        return Response({"signedIn": True, "keyName": holder.key_name})

    @extend_schema(request=None, responses={200: SessionSerializer, **errors(403)})
    def delete(self, request: Request) -> Response:
        if session_holder(request.session) is not None:
            refuse_foreign_origin(request)
            SessionKeyAuthentication().enforce_csrf(request)  # signing out is a write like any other
        request.session.flush()
        return Response({"signedIn": False, "keyName": None})


class PrometheusText(BaseRenderer):
    media_type = "text/plain"
    format = "prometheus"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        return data if isinstance(data, bytes) else JSONRenderer().render(data)


class MetricsView(APIView):
    """The service's metrics in the Prometheus text format, summed over every process of the service on this
    machine (web processes and workers). Open to an API key, or to METRICS_TOKEN for a scraper."""

    authentication_classes = [MetricsTokenAuthentication, ApiKeyAuthentication, SessionKeyAuthentication]
    renderer_classes = [JSONRenderer, PrometheusText]  # errors in the API's JSON shape; text/plain is accepted

    @extend_schema(responses={(200, "text/plain"): OpenApiTypes.STR})
    def get(self, request: Request) -> HttpResponse:
        return HttpResponse(metrics.exposition(RunStates()), content_type=CONTENT_TYPE_LATEST)
