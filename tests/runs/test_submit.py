"""POST /api/runs: a valid spec becomes a queued run; bad input gets the error shape and creates nothing."""

from __future__ import annotations

import json
import os

import pytest
from django_q.models import OrmQ

from runs.models import Event, Run

pytestmark = pytest.mark.django_db(transaction=True)


def post(client, body, **extra):
    data = body if isinstance(body, (str, bytes)) else json.dumps(body)
    return client.post("/api/runs", data=data, content_type=extra.pop("content_type", "application/json"), **extra)


def test_fetch_run_is_queued_with_defaults_filled_in(api):
    response = post(api, {"kind": "fetch", "url": "https://example.com/a"})
    assert response.status_code == 201
    body = response.json()
    run = Run.objects.get()
    assert body == {
        "id": str(run.id),
        "kind": "fetch",
        "status": "queued",
        "url": "https://example.com/a",
        "spec": {
            "kind": "fetch",
            "url": "https://example.com/a",
            "options": {
                "mainContent": True,
                "render": "auto",
                "timeoutMs": 60000,
                "maxSteps": 25,
                "screenshots": True,
            },
        },
        "query": None,
        "batch": None,
        "parent": None,
        "attempts": 0,
        "result": None,
        "error": None,
        "drift": None,
        "usage": {},
        "extractedBy": None,
        "stepCount": 0,
        "createdAt": body["createdAt"],
        "startedAt": None,
        "finishedAt": None,
    }
    assert [e.frame()["type"] for e in Event.objects.all()] == ["run-queued"]
    assert OrmQ.objects.count() == 1  # enqueued after commit


def test_extract_and_agent_specs_are_accepted_into_the_queue(api, settings):
    settings.MODEL_PROVIDER = "openai"
    extract = post(
        api, {"kind": "extract", "url": "https://example.com", "schema": {"type": "object"}, "instruction": "the title"}
    )
    agent = post(api, {"kind": "agent", "url": "https://example.com", "goal": "find the price"})
    assert (extract.status_code, agent.status_code) == (201, 201)
    assert Run.objects.filter(status="queued").count() == 2


def error(response) -> dict:
    return response.json()["error"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "scrape", "url": "https://example.com"}, "kind"),
        ({"kind": "fetch"}, "url"),
        ({"kind": "fetch", "url": "file:///etc/passwd"}, "url"),
        ({"kind": "fetch", "url": "javascript:alert(1)"}, "url"),
        ({"kind": "fetch", "url": "chrome://settings"}, "url"),
        ({"kind": "fetch", "url": "https://"}, "url"),
        ({"kind": "fetch", "url": "https://example.com", "colour": "red"}, "colour"),
        ({"kind": "fetch", "url": "https://example.com", "options": {"timeout": 5}}, "options.timeout"),
        ({"kind": "fetch", "url": "https://example.com", "options": {"timeoutMs": 10}}, "options.timeoutMs"),
        ({"kind": "fetch", "url": "https://example.com", "goal": "x"}, "goal"),
        ({"kind": "extract", "url": "https://example.com"}, "schema"),
        ({"kind": "extract", "url": "https://example.com", "schema": {"type": 7}}, "schema"),
        ({"kind": "agent", "url": "https://example.com"}, "goal"),
        ({"kind": "fetch", "url": "https://example.com", "profile": "Bad Name"}, "profile"),
        ({"kind": "fetch", "url": "https://example.com", "profile": "nobody"}, "profile"),
    ],
)
def test_bad_specs_are_400_with_the_field_named(api, body, field):
    response = post(api, body)
    assert response.status_code == 400, response.content
    assert error(response)["code"] == "invalid_request"
    assert field in error(response)["fields"]
    assert error(response)["message"]
    assert Run.objects.count() == 0 and OrmQ.objects.count() == 0


def test_profile_and_storage_state_path_together_are_refused(api, data_dir):
    (data_dir / "profiles" / "shop.json").write_text("{}")
    state = data_dir / "state.json"
    state.write_text("{}")
    os.chmod(state, 0o600)
    response = post(
        api, {"kind": "fetch", "url": "https://example.com", "profile": "shop", "storageStatePath": "state.json"}
    )
    assert response.status_code == 400
    assert error(response)["fields"]["profile"] == ["Give either profile or storageStatePath, not both."]


def test_storage_state_path_must_be_private_and_inside_the_data_dir(api, data_dir, tmp_path_factory):
    state = data_dir / "state.json"
    state.write_text('{"cookies": [{"name": "sid", "value": "s3cret-cookie", "domain": "example.com"}]}')
    os.chmod(state, 0o644)
    loose = post(api, {"kind": "fetch", "url": "https://example.com", "storageStatePath": "state.json"})
    assert loose.status_code == 400
    assert "chmod 600" in error(loose)["fields"]["storageStatePath"][0]
    assert "s3cret-cookie" not in loose.content.decode()
    outside = tmp_path_factory.mktemp("elsewhere") / "state.json"
    outside.write_text("{}")
    os.chmod(outside, 0o600)
    escaped = post(api, {"kind": "fetch", "url": "https://example.com", "storageStatePath": str(outside)})
    assert escaped.status_code == 400
    assert "inside the service's data directory" in error(escaped)["fields"]["storageStatePath"][0]
    database = post(api, {"kind": "fetch", "url": "https://example.com", "storageStatePath": "profiles/x.json"})
    assert database.status_code == 400
    os.chmod(state, 0o600)
    ok = post(api, {"kind": "fetch", "url": "https://example.com", "storageStatePath": "state.json"})
    assert ok.status_code == 201
    assert ok.json()["spec"]["storageStatePath"] == "state.json"


@pytest.mark.parametrize("path", ["0" * 4000, "state.json/inner.json", "a\x00b"])
def test_unusable_storage_state_paths_are_400_not_a_crash(api, data_dir, path):
    (data_dir / "state.json").write_text("{}")
    response = post(api, {"kind": "fetch", "url": "https://example.com", "storageStatePath": path})
    assert response.status_code == 400, response.content
    assert error(response)["fields"]["storageStatePath"]


def test_malformed_json_is_400(api):
    response = post(api, '{"kind": "fetch", "url": ')
    assert response.status_code == 400
    assert error(response)["code"] == "malformed_json"


def test_a_json_array_is_400_not_a_crash(api):
    response = post(api, "[1, 2]")
    assert response.status_code == 400
    assert error(response)["code"] == "invalid_request"


def test_wrong_content_type_is_415(api):
    response = api.post("/api/runs", data="kind=fetch", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415
    assert error(response)["code"] == "unsupported_media_type"


def test_oversize_body_is_413(api, settings):
    settings.API_MAX_BODY_BYTES = 2048
    response = post(api, {"kind": "fetch", "url": "https://example.com", "instruction": "x" * 4000})
    assert response.status_code == 413
    assert error(response) == {
        "code": "too_large",
        "message": "The request body is larger than the limit of 2048 bytes.",
    }
    assert Run.objects.count() == 0


def test_private_addresses_are_refused_at_submit_unless_allowed(api, settings):
    settings.ALLOW_PRIVATE_NETWORKS = False
    for url in ("http://127.0.0.1:8000/", "http://localhost/", "http://10.1.2.3/", "http://[::1]/"):
        response = post(api, {"kind": "fetch", "url": url})
        assert response.status_code == 400, url
        assert "ALLOW_PRIVATE_NETWORKS" in error(response)["fields"]["url"][0]


def test_get_is_not_allowed_on_cancel(api):
    run = post(api, {"kind": "fetch", "url": "https://example.com"}).json()
    response = api.get(f"/api/runs/{run['id']}/cancel")
    assert response.status_code == 405
    assert error(response)["code"] == "method_not_allowed"
