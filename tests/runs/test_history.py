"""GET /api/runs and /api/runs/:id: newest first, cursor pages, filters, the complete trace."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from runs.models import Batch, Run
from tests.recording import record_steps

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


def finished_run(n: int, result: object) -> Run:
    run = make_run(n, status="running")
    assert run.finish(result=result)
    return run


def test_the_list_shows_a_preview_and_the_size_instead_of_the_result(api):
    page = {"title": "Long read", "markdown": "# Long read\n\n" + "word " * 4000}
    fetched = finished_run(1, page)
    extracted = finished_run(2, {"name": "Trail shoe", "price": 89.9})
    failed = make_run(3, status="running")
    assert failed.finish(error={"code": "timeout", "message": "The page did not load in time."})
    listed = {run["id"]: run for run in api.get("/api/runs").json()["results"]}
    summary = listed[str(fetched.id)]
    assert "result" not in summary
    assert summary["preview"] == ("# Long read " + "word " * 4000)[:200]
    assert summary["resultBytes"] == len(json.dumps(page, separators=(",", ":")).encode())
    assert listed[str(extracted.id)]["preview"] == '{"name":"Trail shoe","price":89.9}'
    assert (listed[str(failed.id)]["preview"], listed[str(failed.id)]["resultBytes"]) == ("", None)
    whole = {run["id"]: run for run in api.get("/api/runs?include=result").json()["results"]}
    assert whole[str(fetched.id)]["result"] == page and "preview" not in whole[str(fetched.id)]
    detail = api.get(f"/api/runs/{fetched.id}").json()
    assert {name: value for name, value in detail.items() if name != "steps"} == whole[str(fetched.id)]


def test_a_listed_run_is_the_whole_run_but_its_result(api):
    """The list writes its rows by hand (RunSummarySerializer): every field as the whole run has it, for runs of
    every shape."""
    batch = Batch.objects.create()
    replay = make_run(1, kind="extract", status="running", query="shoe", batch=batch, attempts=1)
    record_steps(replay, {"action": "navigate", "observation": "HTTP 200"}, {"action": "extract", "observation": "{}"})
    assert replay.finish(
        result={"price": 89.9},
        drift={"changed": {"price": [99.9, 89.9]}, "added": [], "removed": []},
        usage={"inputTokens": 120, "outputTokens": 9},
        extracted_by="mixed",
    )
    failed = make_run(2, status="running")
    assert failed.finish(error={"code": "timeout", "message": "The page did not load in time."})
    queued = make_run(3)
    listed = {run["id"]: run for run in api.get("/api/runs").json()["results"]}
    whole = {run["id"]: run for run in api.get("/api/runs?include=result").json()["results"]}
    assert set(listed) == {str(replay.id), str(failed.id), str(queued.id)}
    for run_id, summary in listed.items():
        assert {name: value for name, value in summary.items() if name not in ("preview", "resultBytes")} == {
            name: value for name, value in whole[run_id].items() if name != "result"
        }
    assert listed[str(replay.id)]["stepCount"] == 2 and listed[str(replay.id)]["batch"] == str(batch.id)
    assert listed[str(replay.id)]["extractedBy"] == "mixed" and listed[str(queued.id)]["extractedBy"] is None
    assert listed[str(replay.id)]["finishedAt"].endswith("Z") and listed[str(queued.id)]["startedAt"] is None


def test_a_run_detail_that_did_not_change_is_answered_304_without_a_body(api):
    run = finished_run(1, {"markdown": "# hi"})
    first = api.get(f"/api/runs/{run.id}")
    etag = first["ETag"]
    again = api.get(f"/api/runs/{run.id}", HTTP_IF_NONE_MATCH=etag)
    assert (again.status_code, again.content) == (304, b"")
    record_steps(run, {"action": "navigate", "observation": "HTTP 200"})
    changed = api.get(f"/api/runs/{run.id}", HTTP_IF_NONE_MATCH=etag)
    assert changed.status_code == 200 and changed["ETag"] != etag
    assert changed.json()["stepCount"] == 1


@pytest.mark.parametrize("query", ["kind=scrape", "status=done", "batch=not-a-uuid", "include=steps"])
def test_bad_filters_are_400(api, query):
    response = api.get(f"/api/runs?{query}")
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"


def test_detail_has_the_complete_trace(api):
    run = make_run(1, status="succeeded", result={"markdown": "# hi"})
    long_observation = "word " * 5000
    record_steps(
        run,
        {"action": "navigate", "observation": "HTTP 200", "screenshot": b"\xff\xd8 a JPEG", "duration_ms": 12},
        {"action": "snapshot", "observation": long_observation},
    )
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
    record_steps(
        run,
        {"action": "navigate", "observation": "HTTP 200", "screenshot": b"\xff\xd8\xff\xe0fake-jpeg"},
        {"action": "snapshot", "observation": ""},
    )
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
