from __future__ import annotations

from collections.abc import Mapping

from drf_spectacular.extensions import OpenApiSerializerExtension
from rest_framework import serializers

from service.kernel.names import NAME_PATTERN, NAME_RULE


def name_field(what: str, **kwargs) -> serializers.RegexField:
    """A profile, credential or saved-query name; a bad one is told the rule, wherever it is given."""
    return serializers.RegexField(NAME_PATTERN, error_messages={"invalid": f"A {what} name is {NAME_RULE}."}, **kwargs)


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, so a typo ("timeout" for "timeoutMs") is an error, not ignored."""

    def run_validation(self, data=serializers.empty):
        # A request body of null, a list or a string: one sentence instead of DRF's non_field_errors.
        if self.parent is None and data is not serializers.empty and not isinstance(data, Mapping):
            raise serializers.ValidationError({"request": ["The body must be a JSON object."]})
        return super().run_validation(data)

    def to_internal_value(self, data):
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise serializers.ValidationError({name: ["This field is not allowed."] for name in unknown})
        return super().to_internal_value(data)


class StrictRequestBody(OpenApiSerializerExtension):
    """In the OpenAPI document, a strict serializer's request body refuses other fields (additionalProperties:
    false), so a client or a fuzzer need not learn it from 400s."""

    target_class = StrictSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema, direction):
        schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
        if direction == "request":
            schema["additionalProperties"] = False
        return schema
