"""The API's OpenAPI document, through drf-spectacular's own extension points: the one error shape, the error
statuses every operation of a kind can answer (ServiceAutoSchema), the ones a view declares next to its success
(`responses={201: RunSerializer, **errors(404, 409)}`), and how a caller authenticates.

The statuses an operation shares with every other of its kind come from what it is: any request can be bad input
(400); an operation behind a key answers 401 without one, 403 to a playground write without its CSRF token, 429
over the key's rate limit; an operation that reads a body answers 413 when it is too large and 415 when it is not
JSON. The rest (404, 409, 502…) only the view knows, and says."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers

DESCRIPTIONS = {
    400: "Bad input (invalid_request, malformed_json, …); `fields` names each problem by its dotted path.",
    401: "No API key, or a key that is not valid (or revoked).",
    403: "A playground session write without its CSRF token, or a refused origin.",
    404: "No such object.",
    409: "Conflicts with the current state (a taken name, a finished run).",
    413: "The request body is larger than API_MAX_BODY_BYTES.",
    415: "The body was not sent as JSON (Content-Type: application/json).",
    429: "Over the key's rate limit, the queue is full, or too many failed sign-ins; see Retry-After.",
    502: "The page or the search backend failed (DNS, refused, HTTP error, not HTML).",
    503: "A needed backend is not configured (e.g. SEARXNG_URL).",
    504: "The page did not answer in time.",
}

KEYED = (401, 403, 429)
BODY = (413, 415)
BODY_METHODS = {"POST", "PUT", "PATCH"}


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField(
        help_text="Stable, machine-readable: invalid_request, not_found, … (the README lists them)."
    )
    message = serializers.CharField(help_text="One sentence for a person.")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        required=False,
        help_text="Per field (dotted names), what is wrong with it.",
    )
    runId = serializers.UUIDField(
        required=False, help_text="POST /api/fetch with persist: true: the run that was kept, failed as it is."
    )


class ErrorSerializer(serializers.Serializer):
    """Every error the API answers: {"error": {"code", "message", "fields"?}}."""

    error = ErrorDetailSerializer()


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    """The error responses a view declares beside its success, each with the one error shape."""
    return {code: OpenApiResponse(ErrorSerializer, description=DESCRIPTIONS[code]) for code in codes}


class ServiceAutoSchema(AutoSchema):
    """drf-spectacular's AutoSchema, adding to each operation the error statuses it shares with its kind."""

    def shared_error_codes(self) -> tuple[int, ...]:
        codes: tuple[int, ...] = (400,)
        if {} not in self.get_auth():  # a key (or a signed-in session) is needed
            codes += KEYED
        if self.method in BODY_METHODS:
            codes += BODY
        return codes

    def _get_response_bodies(self, direction: str = "response") -> dict:
        responses = super()._get_response_bodies(direction)
        shared = {str(code): response for code, response in errors(*self.shared_error_codes()).items()}
        for code, response in shared.items():
            if code not in responses:
                responses[code] = self._get_response_for_code(response, code, direction=direction)
        return dict(sorted(responses.items()))


class BearerKey(OpenApiAuthenticationExtension):
    target_class = "service.kernel.auth.ApiKeyAuthentication"
    name = "apiKey"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "An API key (`manage.py key create`)."}


class PlaygroundSession(OpenApiAuthenticationExtension):
    target_class = "service.kernel.auth.SessionKeyAuthentication"
    name = "playgroundSession"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": settings.SESSION_COOKIE_NAME,
            "description": "The playground's session (POST /api/session); writes echo the CSRF cookie in X-CSRFToken.",
        }


class MetricsToken(OpenApiAuthenticationExtension):
    target_class = "service.kernel.auth.MetricsTokenAuthentication"
    name = "metricsToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "METRICS_TOKEN: opens GET /api/metrics only."}
