"""GET /api/runs and /api/runs/:id: newest first, cursor pages, filters, the complete trace."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from runs.models import Batch, Run, Step

pytestmark = pytest.mark.django_db


def make_run(n: int, **fields) -> Run:
    fields.setdefault("kind", "fetch")
    url = f"https://example.com/{n}"
    return Run.objects.create(
        url=url,
        spec={"kind": fields["kind"], "url": url},
        created_at=timezone.now() - timedelta(minutes=100 - n),
        **fields,
    )


def test_history_is_newest_first_and_pages_by_cursor_without_gaps(api):
    runs = [make_run(n) for n in range(7)]
    seen: list[str] = []
    url = "/api/runs?limit=3"
    pages = 0
    while url:
        body = api.get(url).json()
        seen += [run["id"] for run in body["results"]]
        url = body["next"]
        pages += 1
    assert seen == [str(run.id) for run in reversed(runs)]
    assert pages == 3


def test_history_filters_by_kind_status_query_and_batch(api):
    batch = Batch.objects.create()
    fetch = make_run(1)
    extract = make_run(2, kind="extract", status="failed", query="prices", batch=batch)

    def ids(query: str) -> list[str]:
        response = api.get(f"/api/runs?{query}")
        assert response.status_code == 200, response.content
        return [run["id"] for run in response.json()["results"]]

    assert ids("kind=fetch") == [str(fetch.id)]
    assert ids("status=failed") == [str(extract.id)]
    assert ids("query=prices") == [str(extract.id)]
    assert ids(f"batch={batch.id}") == [str(extract.id)]
    assert ids("kind=agent") == []


@pytest.mark.parametrize("query", ["kind=crawl", "status=done", "batch=not-a-uuid"])
def test_bad_filters_are_400(api, query):
    response = api.get(f"/api/runs?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"


def test_detail_has_the_complete_trace(api):
    run = make_run(1, status="succeeded", result={"markdown": "# hi"})
    long_observation = "word " * 5000
    Step.objects.create(
        run=run, index=0, action="navigate", url=run.url, observation="HTTP 200", screenshot="0.jpg", duration_ms=12
    )
    Step.objects.create(run=run, index=1, action="snapshot", url=run.url, observation=long_observation)
    body = api.get(f"/api/runs/{run.id}").json()
    assert body["stepCount"] == 2
    steps = body["steps"]
    assert [(s["index"], s["action"]) for s in steps] == [(0, "navigate"), (1, "snapshot")]
    assert steps[0]["screenshot"] == f"/api/runs/{run.id}/steps/0/screenshot"
    assert steps[0]["durationMs"] == 12
    assert steps[1]["screenshot"] is None
    assert steps[1]["observation"] == long_observation
    listed = api.get("/api/runs").json()["results"][0]
    assert "steps" not in listed and listed["stepCount"] == 2


def test_unknown_run_is_404_with_the_error_shape(api):
    for path in ("/api/runs/00000000-0000-0000-0000-000000000000", "/api/runs/nope"):
        response = api.get(path)
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_screenshot_is_served_as_an_image(api, data_dir):
    run = make_run(1)
    Step.objects.create(run=run, index=0, action="navigate", screenshot="0.jpg")
    Step.objects.create(run=run, index=1, action="snapshot")
    folder = data_dir / "screenshots" / str(run.id)
    folder.mkdir(parents=True)
    (folder / "0.jpg").write_bytes(b"\xff\xd8\xff\xe0fake-jpeg")
    response = api.get(f"/api/runs/{run.id}/steps/0/screenshot")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/jpeg"
    assert b"".join(response.streaming_content) == b"\xff\xd8\xff\xe0fake-jpeg"
    for index in (1, 7):
        missing = api.get(f"/api/runs/{run.id}/steps/{index}/screenshot")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"


def test_cancel_a_queued_run_then_cancel_again_is_409(api):
    run = make_run(1)
    response = api.post(f"/api/runs/{run.id}/cancel")
    assert response.status_code == 200
    assert response.json()["status"] == "cancelled"
    assert response.json()["error"] == {"code": "cancelled", "message": "The run was cancelled."}
    again = api.post(f"/api/runs/{run.id}/cancel")
    assert again.status_code == 409
    assert again.json()["error"] == {"code": "already_finished", "message": "The run already finished as cancelled."}
    frames = [e.frame() for e in run.events.all()]
    assert [(f["type"], f["status"]) for f in frames] == [("run-finished", "cancelled")]
    assert json.dumps(frames)  # frames are plain JSON
