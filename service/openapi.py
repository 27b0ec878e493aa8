"""The API's OpenAPI document: which error statuses each operation can answer, with the one error shape; request
bodies as strict as the serializers that read them; and links that chain the operations of a workflow (create, then
read, cancel, replay, delete), which clients and stateful fuzzers (schemathesis) follow."""

from __future__ import annotations

from django.conf import settings

from runs.serializers import KIND_FIELDS

ERROR_SCHEMA = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {
                    "type": "string",
                    "description": "Stable, machine-readable: invalid_request, not_found, … (the README lists them).",
                },
                "message": {"type": "string", "description": "One sentence for a person."},
                "fields": {
                    "type": "object",
                    "additionalProperties": {"type": "array", "items": {"type": "string"}},
                    "description": "Per field (dotted names), what is wrong with it.",
                },
                "runId": {
                    "type": "string",
                    "format": "uuid",
                    "description": "POST /api/fetch with persist: true: the run that was kept, failed as it is.",
                },
            },
        }
    },
}

DESCRIPTIONS = {
    "400": "Bad input (invalid_request, malformed_json, …); `fields` names each problem by its dotted path.",
    "401": "No API key, or a key that is not valid (or revoked).",
    "403": "A playground session write without its CSRF token, or a refused origin.",
    "404": "No such object.",
    "409": "Conflicts with the current state (a taken name, a finished run).",
    "413": "The request body is larger than API_MAX_BODY_BYTES.",
    "415": "The body was not sent as JSON (Content-Type: application/json).",
    "429": "Over the key's rate limit, the queue is full, or too many failed sign-ins; see Retry-After.",
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


# What each kind of run needs besides kind and url (RunSpecSerializer.validate).
KIND_REQUIRED = {"extract": ("schema",), "agent": ("goal",)}

# Links between operations, one row each: (from, its status, to, the target's parameters as runtime expressions).
# Operations are "METHOD path"; a link is named after its target's operationId. Cancel leads nowhere: stateful fuzzers
# start chains at any POST that has links, and chains started at a made-up run id end at their first 404.
RUN_ID = {"id": "$response.body#/id"}
QUERY_NAME = {"name": "$response.body#/name"}
PROFILE_NAME = {"name": "$response.body#/name"}
LINKS = [
    ("POST /api/runs", "201", "GET /api/runs/{id}", RUN_ID),
    ("POST /api/runs", "201", "POST /api/runs/{id}/cancel", RUN_ID),
    ("GET /api/runs/{id}", "200", "POST /api/runs/{id}/cancel", RUN_ID),
    (
        "GET /api/runs/{id}",
        "200",
        "GET /api/runs/{id}/steps/{index}/screenshot",
        {"id": "$response.body#/id", "index": "$response.body#/steps/0/index"},
    ),
    ("POST /api/batches", "201", "GET /api/batches/{id}", {"id": "$response.body#/id"}),
    ("POST /api/batches", "201", "GET /api/runs", {"batch": "$response.body#/id"}),
    ("POST /api/batches", "201", "GET /api/runs/{id}", {"id": "$response.body#/runs/0"}),
    ("POST /api/batches", "201", "POST /api/runs/{id}/cancel", {"id": "$response.body#/runs/0"}),
    ("POST /api/fetch", "200", "GET /api/runs/{id}", {"id": "$response.body#/runId"}),
    ("POST /api/queries", "201", "GET /api/queries/{name}", QUERY_NAME),
    ("POST /api/queries", "201", "PUT /api/queries/{name}", QUERY_NAME),
    ("POST /api/queries", "201", "PATCH /api/queries/{name}", QUERY_NAME),
    ("POST /api/queries", "201", "POST /api/queries/{name}/run", QUERY_NAME),
    ("POST /api/queries", "201", "DELETE /api/queries/{name}", QUERY_NAME),
    ("PUT /api/queries/{name}", "200", "POST /api/queries/{name}/run", QUERY_NAME),
    ("PATCH /api/queries/{name}", "200", "POST /api/queries/{name}/run", QUERY_NAME),
    ("POST /api/queries/{name}/run", "201", "GET /api/runs/{id}", RUN_ID),
    ("POST /api/queries/{name}/run", "201", "POST /api/runs/{id}/cancel", RUN_ID),
    ("POST /api/queries/{name}/run", "201", "GET /api/runs", {"query": "$response.body#/query"}),
    ("DELETE /api/queries/{name}", "204", "GET /api/queries/{name}", {"name": "$request.path.name"}),
    ("POST /api/profiles/import", "201", "GET /api/profiles/{name}", PROFILE_NAME),
    ("POST /api/profiles/import", "201", "DELETE /api/profiles/{name}", PROFILE_NAME),
    ("POST /api/profiles/import", "200", "GET /api/profiles/{name}", PROFILE_NAME),
    ("POST /api/profiles/import", "200", "DELETE /api/profiles/{name}", PROFILE_NAME),
    ("DELETE /api/profiles/{name}", "204", "GET /api/profiles/{name}", {"name": "$request.path.name"}),
]


def error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: document the error statuses of every operation, tighten request bodies
    and add the workflow links."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["Error"] = ERROR_SCHEMA
    strict_request_bodies(components, generator)
    add_links(result["paths"])
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
                codes += ["401", "403"] + (["429"] if method == "post" else [])  # failed sign-ins are limited
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


def strict_request_bodies(components: dict, generator) -> None:
    """What the serializers' own schema cannot say (their fields and extensions say the rest: unknown fields refused,
    URLs http(s), the timeout's ceiling, JSON schemas objects, a storage state's shape): a run spec has one shape per
    kind, a saved query comes from a spec or from a run, a batch holds run specs."""
    components["RunSpecRequest"] = one_shape_per_kind(components["RunSpecRequest"])
    components["QueryCreateRequest"] = spec_or_promotion(components["QueryCreateRequest"])
    components["BatchSubmitRequest"]["properties"]["runs"].update(
        items={"$ref": "#/components/schemas/RunSpecRequest"}, maxItems=settings.BATCH_MAX_RUNS
    )


def one_shape_per_kind(spec: dict) -> dict:
    """RunSpecSerializer.validate: a field of another kind is refused; extract needs a schema, agent a goal."""
    others = set().union(*KIND_FIELDS.values())
    shapes = []
    for kind, own in KIND_FIELDS.items():
        properties = {name: value for name, value in spec["properties"].items() if name not in others - own}
        properties["kind"] = {"type": "string", "enum": [kind]}
        required = ["kind", "url", *KIND_REQUIRED.get(kind, ())]
        shapes.append(
            {
                "type": "object",
                "title": kind,
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            }
        )
    return {"type": "object", "description": spec.get("description", ""), "oneOf": shapes}


def spec_or_promotion(create: dict) -> dict:
    """QueryCreateSerializer.validate: either url and schema (and an instruction), or fromRun alone."""
    properties = create["properties"]
    spec = {name: value for name, value in properties.items() if name != "fromRun"}
    promotion = {name: properties[name] for name in ("name", "fromRun")}
    return {
        "type": "object",
        "description": create.get("description", ""),
        "oneOf": [
            {
                "type": "object",
                "title": "spec",
                "properties": spec,
                "required": ["name", "url", "schema"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "title": "fromRun",
                "properties": promotion,
                "required": ["name", "fromRun"],
                "additionalProperties": False,
            },
        ],
    }


def add_links(paths: dict) -> None:
    def operation(key: str) -> dict:
        method, path = key.split(" ", 1)
        try:
            return paths[path][method.lower()]
        except KeyError:
            raise LookupError(f"service/openapi.py LINKS names {key}, which the API does not have.") from None

    for source, status, target, parameters in LINKS:
        target_id = operation(target)["operationId"]
        response = operation(source)["responses"][status]
        response.setdefault("links", {})[target_id] = {"operationId": target_id, "parameters": parameters}
