"""The one error shape of the API: {"error": {"code", "message", "fields"?}} (DESIGN.md section 4).

One rule for bad input, wherever it comes from: every request is checked before anything is created or queued
(never after a page loaded). A body that is not JSON is 400 `malformed_json`, a body that is not sent as JSON 415
`unsupported_media_type`, a body over API_MAX_BODY_BYTES 413 `too_large`; any bad field or query parameter (a URL,
a name, a schema rule, a storage-state file, a limit or cursor) is 400 `invalid_request` with `fields` naming each
one by its dotted path (`runs.2.schema.properties.name.x-selector`); an object named in the path that does not
exist is 404 `not_found`.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from service.kernel.parsers import RequestTooLarge


class ServiceError(exceptions.APIException):
    """An error with our own code; raise it from services and views."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status_code: int = 400,
        fields: dict | None = None,
        headers: dict[str, str] | None = None,
        extra: dict[str, Any] | None = None,
    ):
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.error_code = code
        self.fields = fields
        self.headers = headers or {}
        self.extra = extra or {}  # more members of the error object, such as the runId a failure kept


_CODES: dict[type[exceptions.APIException], str] = {
    exceptions.ParseError: "malformed_json",
    exceptions.AuthenticationFailed: "unauthenticated",
    exceptions.NotAuthenticated: "unauthenticated",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "rate_limited",
    RequestTooLarge: "too_large",
}


def flatten_fields(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF nests errors for nested serializers; we report them under dotted names."""
    fields: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            name = f"{prefix}.{key}" if prefix else str(key)
            if key == "non_field_errors" and prefix:
                name = prefix
            fields.update(flatten_fields(value, name))
    elif isinstance(detail, list) and detail and all(isinstance(item, str) for item in detail):
        fields[prefix or "request"] = [str(item) for item in detail]
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            fields.update(flatten_fields(value, f"{prefix}.{index}" if prefix else str(index)))
    else:
        fields[prefix or "request"] = [str(detail)]
    return fields


def error_body(code: str, message: str, fields: dict | None = None, extra: dict | None = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if fields:
        error["fields"] = fields
    error.update(extra or {})
    return {"error": error}


def exception_handler(exc: Exception, context: dict) -> Response | None:
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ServiceError):
        body = error_body(exc.error_code, str(exc.detail), exc.fields, exc.extra)
        for name, value in exc.headers.items():
            response[name] = value
    elif isinstance(exc, exceptions.ValidationError):
        fields = flatten_fields(exc.detail)
        first = next(iter(fields.items()))
        message = f"{first[0]}: {first[1][0]}" if first[0] != "request" else first[1][0]
        body = error_body("invalid_request", message, fields)
    elif isinstance(exc, Http404):
        body = error_body("not_found", "Not found.")
    elif isinstance(exc, exceptions.UnsupportedMediaType):
        body = error_body(
            "unsupported_media_type",
            f"{exc.detail} Send the body as JSON with the header Content-Type: application/json.",
        )
    else:
        code = next((c for cls, c in _CODES.items() if isinstance(exc, cls)), "error")
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        body = error_body(code, str(detail))
    response.data = body
    return response


def json_error(code: str, message: str, status_code: int) -> JsonResponse:
    return JsonResponse(error_body(code, message), status=status_code)


@csrf_exempt  # an unknown route is a 404 whatever the method, not a CSRF failure
def api_not_found(request, exception=None) -> JsonResponse:
    return json_error("not_found", f"No route for {request.path}.", 404)


def csrf_failure(request, reason: str = "") -> JsonResponse:
    """CSRF_FAILURE_VIEW: the API's error shape instead of Django's HTML page."""
    return json_error("forbidden", f"CSRF check failed: {reason or 'missing or wrong token'}.", 403)


def api_server_error(request) -> JsonResponse:
    return json_error("internal_error", "The server hit an unexpected error; it has been logged.", 500)
