"""/api/queries: named extract specs, created, promoted from runs, edited, deleted and replayed."""

from __future__ import annotations

import json

import pytest
from django_q.models import OrmQ

from queries.models import SavedQuery
from runs.models import Run

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "x-selector": "h1.name"},
        "price": {"type": "string", "x-selector": "p.price"},
    },
}


def send(client, method: str, path: str, body=None):
    return getattr(client, method)(
        path, data=json.dumps(body) if body is not None else None, content_type="application/json"
    )


def create(api, name="shoe", **fields):
    body = {"name": name, "url": "https://shop.example/shoe", "schema": SCHEMA, "instruction": "the shoe", **fields}
    response = send(api, "post", "/api/queries", body)
    assert response.status_code == 201, response.content
    return response.json()


def test_create_then_get_and_list(api):
    created = create(api)
    assert created == {
        "name": "shoe",
        "url": "https://shop.example/shoe",
        "schema": SCHEMA,
        "instruction": "the shoe",
        "compile": True,
        "compiled": None,
        "mcpTool": False,
        "schedule": None,
        "nextRunAt": None,
        "skippedTicks": 0,
        "runCount": 0,
        "lastRunAt": None,
        "createdAt": created["createdAt"],
        "updatedAt": created["updatedAt"],
    }
    assert api.get("/api/queries/shoe").json() == created
    create(api, name="another")
    assert [q["name"] for q in api.get("/api/queries").json()] == ["another", "shoe"]


def test_a_taken_name_is_409(api):
    create(api)
    response = send(api, "post", "/api/queries", {"name": "shoe", "url": "https://x.example", "schema": SCHEMA})
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert SavedQuery.objects.get().url == "https://shop.example/shoe"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "Bad Name", "url": "https://x.example", "schema": SCHEMA}, "name"),
        ({"name": "x" * 65, "url": "https://x.example", "schema": SCHEMA}, "name"),
        ({"name": "ok", "url": "https://x.example", "schema": {"type": "nonsense"}}, "schema"),
        ({"name": "ok", "url": "https://x.example", "schema": []}, "schema"),
        ({"name": "ok", "url": "ftp://x.example", "schema": SCHEMA}, "url"),
        ({"name": "ok", "schema": SCHEMA}, "url"),
        ({"name": "ok", "url": "https://x.example"}, "schema"),
        ({"name": "ok", "url": "https://x.example", "schema": SCHEMA, "goal": "x"}, "goal"),
        ({"name": "ok", "fromRun": "not-a-uuid"}, "fromRun"),
    ],
)
def test_bad_queries_are_400_and_nothing_is_saved(api, body, field):
    response = send(api, "post", "/api/queries", body)
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert SavedQuery.objects.count() == 0


def test_an_invalid_schema_says_why(api):
    response = send(api, "post", "/api/queries", {"name": "ok", "url": "https://x.example", "schema": {"type": 5}})
    assert response.json()["error"]["fields"]["schema"][0].startswith("This is not a valid JSON schema: 5 is not valid")


def test_promote_an_extract_run_copies_url_schema_and_instruction(api):
    run = Run.objects.create(
        kind="extract",
        url="https://shop.example/boot",
        spec={"kind": "extract", "url": "https://shop.example/boot", "schema": SCHEMA, "instruction": "boots"},
    )
    response = send(api, "post", "/api/queries", {"name": "boot", "fromRun": str(run.id)})
    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["url"], body["schema"], body["instruction"]) == ("https://shop.example/boot", SCHEMA, "boots")


def test_only_extract_runs_can_be_promoted_and_unknown_runs_are_404(api):
    fetch = Run.objects.create(
        kind="fetch", url="https://x.example", spec={"kind": "fetch", "url": "https://x.example"}
    )
    response = send(api, "post", "/api/queries", {"name": "nope", "fromRun": str(fetch.id)})
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"fromRun": ["Not an extract run."]}
    missing = send(api, "post", "/api/queries", {"name": "nope", "fromRun": "5b0e6a4c-31c4-4c1a-9a34-9e1f6e2b5d10"})
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"
    mixed = send(api, "post", "/api/queries", {"name": "nope", "fromRun": str(fetch.id), "url": "https://x.example"})
    assert mixed.status_code == 400
    assert SavedQuery.objects.count() == 0


def test_put_replaces_patch_changes_and_the_name_stays(api):
    create(api)
    put = send(api, "put", "/api/queries/shoe", {"url": "https://shop.example/v2", "schema": SCHEMA})
    assert put.status_code == 200, put.content
    assert (put.json()["url"], put.json()["instruction"]) == ("https://shop.example/v2", "the shoe")
    assert send(api, "put", "/api/queries/shoe", {"url": "https://shop.example/v3"}).status_code == 400

    patch = send(api, "patch", "/api/queries/shoe", {"instruction": "only the price"})
    assert patch.status_code == 200
    assert (patch.json()["url"], patch.json()["instruction"]) == ("https://shop.example/v2", "only the price")
    assert patch.json()["updatedAt"] > patch.json()["createdAt"]

    rename = send(api, "patch", "/api/queries/shoe", {"name": "boot"})
    assert rename.status_code == 400
    assert "cannot change" in rename.json()["error"]["message"]
    bad = send(api, "patch", "/api/queries/shoe", {"schema": {"type": "nonsense"}})
    assert bad.status_code == 400
    assert api.get("/api/queries/shoe").json()["schema"] == SCHEMA


def test_unknown_queries_are_404_everywhere(api):
    for method in ("get", "put", "patch", "delete"):
        body = None if method in ("get", "delete") else {"url": "https://x.example", "schema": SCHEMA}
        response = send(api, method, "/api/queries/ghost", body)
        assert response.status_code == 404, method
        assert response.json() == {"error": {"code": "not_found", "message": "There is no saved query named 'ghost'."}}
    assert send(api, "post", "/api/queries/ghost/run", {}).status_code == 404


def test_replay_queues_a_linked_run_and_counts_it(api):
    create(api)
    response = send(api, "post", "/api/queries/shoe/run", {})
    assert response.status_code == 201, response.content
    run = response.json()
    assert (run["kind"], run["status"], run["query"], run["url"]) == (
        "extract",
        "queued",
        "shoe",
        "https://shop.example/shoe",
    )
    assert run["spec"]["schema"] == SCHEMA and run["spec"]["instruction"] == "the shoe"
    assert OrmQ.objects.count() == 1
    query = api.get("/api/queries/shoe").json()
    assert query["runCount"] == 1 and query["lastRunAt"] is not None
    assert [r["id"] for r in api.get("/api/runs?query=shoe").json()["results"]] == [run["id"]]


def test_overrides_apply_to_one_replay_and_never_to_the_stored_query(api):
    stored = create(api)
    run = send(
        api, "post", "/api/queries/shoe/run", {"url": "https://shop.example/other", "instruction": "cheaper"}
    ).json()
    assert (run["url"], run["spec"]["instruction"]) == ("https://shop.example/other", "cheaper")
    after = api.get("/api/queries/shoe").json()
    assert {k: after[k] for k in ("url", "schema", "instruction")} == {
        k: stored[k] for k in ("url", "schema", "instruction")
    }
    plain = send(api, "post", "/api/queries/shoe/run", {}).json()
    assert (plain["url"], plain["spec"]["instruction"]) == ("https://shop.example/shoe", "the shoe")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"url": "gopher://x"}, "url"),
        ({"schema": SCHEMA}, "schema"),
        ({"profile": "nobody"}, "profile"),
        ({"profile": "a", "storageStatePath": "b.json"}, "storageStatePath"),
        ({"options": {"timeoutMs": 5}}, "options.timeoutMs"),
    ],
)
def test_bad_overrides_are_400_and_nothing_is_queued(api, body, field):
    create(api)
    response = send(api, "post", "/api/queries/shoe/run", body)
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert Run.objects.count() == 0
    assert api.get("/api/queries/shoe").json()["runCount"] == 0


def test_deleting_a_query_keeps_its_runs_and_their_name(api):
    create(api)
    run = send(api, "post", "/api/queries/shoe/run", {}).json()
    assert send(api, "delete", "/api/queries/shoe").status_code == 204
    assert api.get("/api/queries/shoe").status_code == 404
    assert api.get(f"/api/runs/{run['id']}").json()["query"] == "shoe"
    assert [r["id"] for r in api.get("/api/runs?query=shoe").json()["results"]] == [run["id"]]
