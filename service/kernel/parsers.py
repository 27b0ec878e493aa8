"""Request parsing with a size cap (413 instead of reading an unbounded body into memory)."""

from __future__ import annotations

import io

from django.conf import settings
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser


class RequestTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "too_large"


class BoundedJSONParser(JSONParser):
    """JSON parser that refuses bodies over API_MAX_BODY_BYTES, chunked bodies included."""

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.API_MAX_BODY_BYTES
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise RequestTooLarge(f"The request body is larger than the limit of {limit} bytes.")
        return super().parse(io.BytesIO(raw), media_type, parser_context)
