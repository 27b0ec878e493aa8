"""The API's OpenAPI document says which error statuses each operation can answer, with the one error shape."""

from __future__ import annotations

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "description": "Stable, machine-readable: invalid_spec, not_found, …"},
                "message": {"type": "string", "description": "One sentence for a person."},
                "fields": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                    "description": "Per field (dotted names), what is wrong with it.",
                },
            },
        }
    },
}

DESCRIPTIONS = {
    "400": "Bad input; `fields` names each problem.",
    "401": "No API key, or a key that is not valid (or revoked).",
    "403": "A playground session write without its CSRF token, or a refused origin.",
    "404": "No such object.",
    "409": "Conflicts with the current state (a taken name, a finished run).",
    "413": "The request body is larger than API_MAX_BODY_BYTES.",
    "415": "The body is not JSON.",
    "429": "Over the key's rate limit or the queue is full; see Retry-After.",
    "502": "The page or the search backend failed (DNS, refused, HTTP error, not HTML).",
    "503": "A needed backend is not configured (e.g. SEARXNG_URL).",
    "504": "The page did not answer in time.",
}

# Operations that talk to the outside world answer its failures with gateway statuses.
GATEWAY = {
    ("/api/fetch", "post"): ("502", "504"),
    ("/api/search", "post"): ("502", "503"),
    ("/api/queries/{name}/run", "post"): (),
}


# Operations whose body may name another object (a run to promote) that does not exist.
REFERENCES = {("/api/queries", "post")}


def error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: document the error statuses of every operation."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = ERROR_SCHEMA
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            codes = ["400"]
            if operation.get("security") != [{}] and path != "/api/session":
                codes += ["401", "403", "429"]
            if method in ("post", "put", "patch"):
                codes += ["413", "415"]
            if "{" in path or (path, method) in REFERENCES:
                codes.append("404")
            if method in ("post", "put", "patch", "delete"):
                codes.append("409")
            if path == "/api/session":
                codes += ["401", "403"]
            codes += GATEWAY.get((path, method), ())
            responses = operation.setdefault("responses", {})
            for code in codes:
                responses.setdefault(
                    code,
                    {
                        "description": DESCRIPTIONS[code],
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
                    },
                )
    return result
