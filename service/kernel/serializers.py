from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping

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


def document_shape(
    base: type[serializers.Serializer],
    name: str,
    *,
    keep: set[str] | None = None,
    drop: set[str] = frozenset(),
    require: tuple[str, ...] = (),
    replace: Mapping[str, Callable[[], serializers.Field]] | None = None,
) -> type[serializers.Serializer]:
    """One shape of what `base` reads, for the OpenAPI document: what its validate() says across fields (a field
    that goes with another kind, a field one case requires), said as a schema of its own. `name` names the
    component; `keep` or `drop` choose the fields, `require` makes some required and `replace` swaps some for
    fields its callables build (fields are built fresh each time, so the base is never changed). The base still
    does the validating."""

    class Shape(base):
        def get_fields(self):
            fields = {
                field_name: field
                for field_name, field in super().get_fields().items()
                if field_name not in drop and (keep is None or field_name in keep)
            }
            fields.update({field_name: make() for field_name, make in (replace or {}).items()})
            for field_name in require:
                fields[field_name].required = True
            return fields

    Shape.__name__ = Shape.__qualname__ = f"{name}Serializer"
    return Shape


def utc_text(value: datetime.datetime | None) -> str | None:
    """A time as UtcDateTimeField writes it (ISO 8601 in UTC, with a Z), for code that writes rows by hand."""
    if value is None:
        return None
    text = value.astimezone(datetime.UTC).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


class UtcDateTimeField(serializers.DateTimeField):
    """A time as the API writes it, in UTC (TIME_ZONE is UTC and nothing activates another zone). DRF's own field
    asks Django for the current time zone for every value, an asgiref context lookup that took a seventh of a run
    list's time under load."""

    def default_timezone(self):
        return datetime.UTC
