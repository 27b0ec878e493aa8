"""Bearer API keys for /api (DESIGN.md section 4)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from service.models import ApiKey, matches_bootstrap_key


@dataclass(frozen=True)
class KeyHolder:
    """The caller behind an API key; stands in for request.user."""

    key_name: str
    is_authenticated: bool = True
    is_active: bool = True


def authenticate_key(raw: str) -> KeyHolder | None:
    if matches_bootstrap_key(raw, settings.SERVICE_API_KEY):
        return KeyHolder(key_name="bootstrap")
    key = ApiKey.objects.find(raw)
    return KeyHolder(key_name=key.name) if key else None


class ApiKeyAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[KeyHolder, str] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme.lower() != "bearer" or not raw.strip():
            raise exceptions.AuthenticationFailed("Use the header 'Authorization: Bearer <api key>'.")
        holder = authenticate_key(raw.strip())
        if holder is None:
            raise exceptions.AuthenticationFailed("The API key is not valid or has been revoked.")
        return holder, "api-key"

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="api"'
