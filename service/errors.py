"""The one error shape of the API: {"error": {"code", "message", "fields"?}} (DESIGN.md section 4)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from service.parsers import RequestTooLarge


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
    ):
        super().__init__(detail=message, code=code)
        self.status_code = status_code
        self.error_code = code
        self.fields = fields
        self.headers = headers or {}


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


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    error: dict[str, Any] = {"code": code, "message": message}
    if fields:
        error["fields"] = fields
    return {"error": error}


def exception_handler(exc: Exception, context: dict) -> Response | None:
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, ServiceError):
        body = error_body(exc.error_code, str(exc.detail), exc.fields)
        for name, value in exc.headers.items():
            response[name] = value
    elif isinstance(exc, exceptions.ValidationError):
        fields = flatten_fields(exc.detail)
        code = getattr(context.get("view"), "invalid_code", "invalid_request")
        first = next(iter(fields.items()))
        message = f"{first[0]}: {first[1][0]}" if first[0] != "request" else first[1][0]
        body = error_body(code, message, fields)
    elif isinstance(exc, Http404):
        body = error_body("not_found", "Not found.")
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
