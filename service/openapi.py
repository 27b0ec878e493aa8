"""The OpenAPI document's links, which chain the operations of a workflow (create, then read, cancel, replay,
delete); clients and stateful fuzzers (schemathesis) follow them. The rest of the document comes from the views and
serializers through drf-spectacular's extension points (service/kernel/openapi.py)."""

from __future__ import annotations

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
    ("GET /api/runs/{id}", "200", "POST /api/runs/{id}/reextract", RUN_ID),
    ("POST /api/runs/{id}/reextract", "201", "GET /api/runs/{id}", RUN_ID),
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


def add_links(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook (what its extension points cannot say): the workflow links."""
    paths = result["paths"]

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
    return result
