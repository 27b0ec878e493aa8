"""POST /api/batches: every spec is validated first; all runs are created and queued together, or none."""

from __future__ import annotations

import json

import pytest
from django_q.models import OrmQ

from runs.models import Batch, Event, Run

pytestmark = pytest.mark.django_db(transaction=True)


def post(client, body):
    return client.post("/api/batches", data=json.dumps(body), content_type="application/json")


def test_batch_creates_and_queues_every_run_and_lists_them(api):
    specs = [{"kind": "fetch", "url": f"https://example.com/{n}"} for n in range(3)]
    response = post(api, {"runs": specs})
    assert response.status_code == 201, response.content
    body = response.json()
    batch = Batch.objects.get()
    runs = list(Run.objects.order_by("created_at"))
    assert body == {"id": str(batch.id), "runs": [str(run.id) for run in runs]}
    assert [run.url for run in runs] == [spec["url"] for spec in specs]
    assert {run.batch_id for run in runs} == {batch.id}
    assert {run.status for run in runs} == {"queued"}
    assert Event.objects.filter(type="run-queued").count() == 3
    assert OrmQ.objects.count() == 3

    listed = api.get(f"/api/runs?batch={batch.id}").json()["results"]
    assert sorted(run["id"] for run in listed) == sorted(body["runs"])
    assert {run["batch"] for run in listed} == {str(batch.id)}


def test_batch_shows_counts_by_status(api):
    body = post(api, {"runs": [{"kind": "fetch", "url": f"https://example.com/{n}"} for n in range(4)]}).json()
    first, second, *_ = body["runs"]
    Run.objects.get(pk=first).cancel()
    Run.objects.filter(pk=second).update(status="failed")
    response = api.get(f"/api/batches/{body['id']}")
    assert response.status_code == 200
    assert response.json() == {
        "id": body["id"],
        "createdAt": response.json()["createdAt"],
        "runCount": 4,
        "counts": {"queued": 2, "running": 0, "succeeded": 0, "failed": 1, "cancelled": 1},
    }


def test_one_bad_spec_names_its_index_and_nothing_is_created(api):
    response = post(
        api,
        {
            "runs": [
                {"kind": "fetch", "url": "https://example.com/ok"},
                {"kind": "fetch", "url": "ftp://example.com/file"},
                {"kind": "fetch", "url": "https://example.com/ok2"},
                {"kind": "extract", "url": "https://example.com", "schema": {"type": 7}},
            ]
        },
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert set(error["fields"]) == {"runs.1.url", "runs.3.schema"}
    assert error["fields"]["runs.1.url"] == ["Only http:// and https:// URLs can be fetched."]
    assert error["message"] == "runs.1.url: Only http:// and https:// URLs can be fetched."
    assert (Batch.objects.count(), Run.objects.count(), Event.objects.count(), OrmQ.objects.count()) == (0, 0, 0, 0)


def test_a_spec_needing_an_unconfigured_model_is_reported_by_index(api, settings):
    settings.MODEL_PROVIDER = None
    response = post(
        api,
        {
            "runs": [
                {"kind": "fetch", "url": "https://example.com"},
                {"kind": "agent", "url": "https://x.org", "goal": "g"},
            ]
        },
    )
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert list(fields) == ["runs.1"]
    assert "MODEL_PROVIDER" in fields["runs.1"][0]
    assert Run.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"runs": []}, "runs"),
        ({}, "runs"),
        ({"runs": "fetch"}, "runs"),
        ({"runs": [{"kind": "fetch", "url": "https://e.com"}], "extra": 1}, "extra"),
        ({"runs": ["not an object"]}, "runs.0"),
    ],
)
def test_malformed_batches_are_400(api, body, field):
    response = post(api, body)
    assert response.status_code == 400, response.content
    assert field in response.json()["error"]["fields"]
    assert Batch.objects.count() == 0


def test_unknown_batch_is_404_with_the_error_shape(api):
    response = api.get("/api/batches/5b0e6a4c-31c4-4c1a-9a34-9e1f6e2b5d10")
    assert response.status_code == 404
    assert response.json() == {
        "error": {"code": "not_found", "message": "There is no batch 5b0e6a4c-31c4-4c1a-9a34-9e1f6e2b5d10."}
    }
    assert api.get("/api/batches/not-a-uuid").status_code == 404
