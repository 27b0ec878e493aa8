from __future__ import annotations

from rest_framework import serializers


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, so a typo ("timeout" for "timeoutMs") is an error, not ignored."""

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["This field is not allowed."] for name in unknown})
        return super().to_internal_value(data)
