"""The OpenAPI document tells a client what the API checks: a run spec has one shape per kind, a saved query comes
from a spec or from a run, every operation lists the errors it answers in the one error shape, and how to
authenticate. Each claim is checked against the API itself."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from service.mcp.inputs import json_schema

pytestmark = pytest.mark.django_db


@pytest.fixture
def document(api) -> dict:
    response = api.get("/api/schema")
    assert response.status_code == 200
    return response.json()


def body_schema(document: dict, path: str, method: str = "post") -> Draft202012Validator:
    operation = document["paths"][path][method]
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    return Draft202012Validator(json_schema(schema, document["components"]["schemas"]))


RUN_SPECS = [
    # (the spec, whether the document and the API accept it)
    ({"kind": "fetch", "url": "https://example.com/"}, True),
    ({"kind": "fetch", "url": "https://example.com/", "goal": "Buy it."}, False),  # a field of another kind
    ({"kind": "extract", "url": "https://example.com/"}, False),  # extract needs a schema
    ({"kind": "extract", "url": "https://example.com/", "schema": {"type": "object"}, "instruction": "All."}, True),
    ({"kind": "agent", "url": "https://example.com/"}, False),  # agent needs a goal
    ({"kind": "agent", "url": "https://example.com/", "goal": "Find the price."}, True),
    ({"kind": "agent", "url": "https://example.com/", "goal": "Find it.", "schema": {}}, False),
    ({"kind": "fetch", "url": "https://example.com/", "timeout": 5}, False),  # unknown field
    ({"kind": "scrape", "url": "https://example.com/"}, False),
    ({"kind": "fetch", "url": "ftp://example.com/"}, False),
]


@pytest.mark.parametrize(("spec", "accepted"), RUN_SPECS)
def test_a_run_spec_the_document_accepts_is_one_the_api_accepts(api, document, settings, spec, accepted):
    settings.MODEL_PROVIDER = "openai"  # agent and extract specs get past the model check (nothing runs here)
    settings.MODEL_NAME = "any"
    assert body_schema(document, "/api/runs").is_valid(spec) is accepted
    assert (api.post("/api/runs", spec, format="json").status_code == 201) is accepted
    batch = {"runs": [spec]}
    assert body_schema(document, "/api/batches").is_valid(batch) is accepted
    assert (api.post("/api/batches", batch, format="json").status_code == 201) is accepted


def test_the_run_spec_shapes_are_told_apart_by_kind(document):
    spec = document["components"]["schemas"]["RunSpecRequest"]
    mapping = spec["discriminator"]["mapping"]
    assert spec["discriminator"]["propertyName"] == "kind"
    assert set(mapping) == {"fetch", "extract", "agent", "crawl"}
    extract = document["components"]["schemas"][mapping["extract"].rsplit("/", 1)[-1]]
    assert set(extract["required"]) == {"kind", "url", "schema"}
    assert "goal" not in extract["properties"] and extract["additionalProperties"] is False
    crawl = document["components"]["schemas"][mapping["crawl"].rsplit("/", 1)[-1]]
    # A crawl takes a schema for its pages (extract pages), never an agent's goal.
    assert {"crawl", "schema", "instruction"} <= set(crawl["properties"]) and "goal" not in crawl["properties"]
    assert set(crawl["required"]) == {"kind", "url"}


@pytest.mark.parametrize(
    ("body", "accepted"),
    [
        ({"name": "prices", "url": "https://example.com/", "schema": {"type": "object"}}, True),
        ({"name": "prices", "url": "https://example.com/"}, False),  # no schema, no run
        ({"name": "prices", "fromRun": "00000000-0000-0000-0000-000000000000"}, True),  # the shape is right
        ({"name": "prices", "fromRun": "00000000-0000-0000-0000-000000000000", "url": "https://example.com/"}, False),
    ],
)
def test_a_saved_query_comes_from_a_spec_or_from_a_run_in_the_document_as_in_the_api(api, document, body, accepted):
    assert body_schema(document, "/api/queries").is_valid(body) is accepted
    status = api.post("/api/queries", body, format="json").status_code
    assert (status != 400) is accepted  # the run named is not there: 404, which the operation documents
    assert str(status) in document["paths"]["/api/queries"]["post"]["responses"]


def test_each_operation_lists_the_errors_it_answers_in_the_one_error_shape(api, document):
    paths = document["paths"]
    error = {"$ref": "#/components/schemas/Error"}
    for path, operations in paths.items():
        for method, operation in operations.items():
            for status, response in operation["responses"].items():
                if status.startswith(("4", "5")):
                    assert response["content"]["application/json"]["schema"] == error, (method, path, status)
            assert "400" in operation["responses"], (method, path)
    # Shared by kind: a key (401, 403, 429), a body (413, 415); the rest, what the view says it can answer.
    assert {"401", "403", "429", "413", "415"} <= set(paths["/api/runs"]["post"]["responses"])
    assert "401" not in paths["/api/health"]["get"]["responses"]
    assert "413" not in paths["/api/runs/{id}"]["get"]["responses"]
    assert {"404", "409"} <= set(paths["/api/runs/{id}/cancel"]["post"]["responses"])
    assert {"502", "504"} <= set(paths["/api/fetch"]["post"]["responses"])
    assert "409" not in paths["/api/runs"]["post"]["responses"]

    missing = api.post("/api/runs/00000000-0000-0000-0000-000000000000/cancel")
    assert missing.status_code == 404 and set(missing.json()) == {"error"}
    assert set(missing.json()["error"]) >= set(document["components"]["schemas"]["ErrorDetail"]["required"])


def test_the_document_says_how_to_authenticate(document, anonymous):
    schemes = document["components"]["securitySchemes"]
    bearer = next(name for name, scheme in schemes.items() if scheme.get("scheme") == "bearer")
    assert schemes[bearer]["type"] == "http"
    assert {bearer: []} in document["paths"]["/api/runs"]["get"]["security"]
    assert document["paths"]["/api/health"]["get"]["security"] == [{}]
    assert anonymous.get("/api/runs").status_code == 401
    assert anonymous.get("/api/health").status_code == 200
