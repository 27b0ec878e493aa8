from __future__ import annotations

from rest_framework import serializers

from service.kernel.serializers import StrictSerializer, name_field


class ProfileImportSerializer(StrictSerializer):
    name = name_field("profile")
    state = serializers.JSONField()
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
