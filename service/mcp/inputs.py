"""The tools' input schemas, taken from the API's own OpenAPI components: a tool argument that is a field of the API
is described, typed and bounded by the serializer that checks it (a URL's shape, the timeout's ceiling, a name's
rule), the same as in /api/schema. Only what the API has no field for (how long to wait, which run) is written here.
"""

from __future__ import annotations

import functools

OPENAPI_ONLY = ("readOnly", "writeOnly", "discriminator")


@functools.cache
def api_components() -> dict[str, dict]:
    """The OpenAPI document's component schemas (generated once per process, on first use)."""
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]


def json_schema(schema: object, components: dict[str, dict]) -> object:
    """An OpenAPI schema object as a self-contained JSON schema: references inlined, `nullable` as a null type."""
    if isinstance(schema, list):
        return [json_schema(item, components) for item in schema]
    if not isinstance(schema, dict):
        return schema
    if "$ref" in schema:
        return json_schema(components[schema["$ref"].rsplit("/", 1)[-1]], components)
    converted = {key: json_schema(value, components) for key, value in schema.items() if key not in OPENAPI_ONLY}
    if converted.pop("nullable", False):
        if "type" in converted:
            converted["type"] = [converted["type"], "null"]
        else:
            converted = {"anyOf": [converted, {"type": "null"}]}
    if len(converted.get("allOf", ())) == 1:  # drf-spectacular's way to put a description beside a reference
        converted = {**converted.pop("allOf")[0], **converted}
    return converted


def api_fields(component: str, *names: str, **descriptions: str) -> dict[str, dict]:
    """Some properties of an API component as tool arguments, in the order named; `descriptions` replace the API's
    wording where a tool says it better for a model."""
    components = api_components()
    properties = components[component]["properties"]
    fields = {}
    for name in names:
        field = json_schema(properties[name], components)
        if name in descriptions:
            field = {**field, "description": descriptions[name]}
        fields[name] = field
    return fields
