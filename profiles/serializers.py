from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from profiles.store import MAX_COOKIE_EXPIRES
from service.kernel.serializers import StrictSerializer, name_field

# A Playwright storage state, as profiles.store.validate_state accepts it: the document says so.
STORAGE_STATE_SCHEMA = {
    "type": "object",
    "description": "A Playwright storage state (what `context.storage_state()` returns).",
    "additionalProperties": False,
    "properties": {
        "cookies": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "value", "domain"],
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "value": {"type": "string"},
                    "domain": {"type": "string", "minLength": 1},
                    "expires": {
                        "type": "number",
                        "maximum": MAX_COOKIE_EXPIRES,
                        "description": "Unix time; -1 for a session cookie.",
                    },
                },
            },
        },
        "origins": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["origin"],
                "properties": {
                    "origin": {"type": "string"},
                    "localStorage": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["name", "value"],
                            "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
                        },
                    },
                },
            },
        },
    },
}


@extend_schema_field(STORAGE_STATE_SCHEMA)
class StorageStateField(serializers.JSONField):
    """A Playwright storage state (checked by profiles.store when it is stored)."""


class ProfileImportSerializer(StrictSerializer):
    name = name_field("profile")
    state = StorageStateField()
    overwrite = serializers.BooleanField(default=False)


class CookieSummarySerializer(serializers.Serializer):
    cookieCount = serializers.IntegerField()
    domains = serializers.ListField(child=serializers.CharField())
    earliestExpiry = serializers.DateTimeField(allow_null=True)
    expired = serializers.IntegerField()
    expiringWithin7Days = serializers.IntegerField()
    sessionOnly = serializers.IntegerField()
    originsWithStorage = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["fresh", "expiring", "expired", "session-only", "empty"])


class ProfileSerializer(serializers.Serializer):
    """Metadata and cookie summary only: the state itself is never serialized."""

    name = serializers.CharField()
    updatedAt = serializers.DateTimeField()
    size = serializers.IntegerField()
    cookies = CookieSummarySerializer()
