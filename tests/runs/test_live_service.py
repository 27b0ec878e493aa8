"""End to end: `manage.py serve` (daphne + django-q2 workers + reaper), real Chromium, a real local site."""

from __future__ import annotations

import json
import os
import signal
import time

import pytest
from websockets.sync.client import connect

from tests.live import KEY, LiveService
from tests.site import real_login_state

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("live")).start()
    yield live
    live.stop()


def test_fetch_run_over_http_end_to_end(service, site):
    submitted = service.submit({"kind": "fetch", "url": site.url("/js"), "options": {"mainContent": False}})
    assert submitted["status"] == "queued"
    run = service.wait(submitted["id"])
    assert run["status"] == "succeeded", run["error"]
    assert run["attempts"] == 1
    assert run["result"]["title"] == "Rendered"
    assert "This paragraph was written by JavaScript." in run["result"]["markdown"]
    assert [(s["index"], s["action"]) for s in run["steps"]] == [(0, "navigate"), (1, "snapshot")]
    assert run["steps"][1]["observation"] == run["result"]["markdown"]
    shot = service.get(run["steps"][0]["screenshot"])
    assert shot.status_code == 200 and shot.headers["Content-Type"] == "image/jpeg"
    assert shot.content[:3] == b"\xff\xd8\xff" and len(shot.content) > 1000
    listed = service.get("/api/runs?kind=fetch").json()["results"]
    assert submitted["id"] in [r["id"] for r in listed]


def test_failed_page_ends_failed_not_crashed(service, site):
    run = service.wait(service.submit({"kind": "fetch", "url": site.url("/missing")})["id"])
    assert run["status"] == "failed"
    assert run["error"] == {"code": "http_error", "message": "The page answered HTTP 404."}
    assert service.get("/api/health").json()["workers"] == 2


def test_sync_fetch_with_persist_is_kept_as_a_run_and_without_is_not(service, site):
    before = service.get("/api/runs?kind=fetch&limit=500").json()["results"]
    page = service.post("/api/fetch", {"url": site.url("/page/7"), "render": "http"})
    assert page.status_code == 200, page.text
    assert "runId" not in page.json()
    assert service.get("/api/runs?kind=fetch&limit=500").json()["results"] == before

    kept = service.post("/api/fetch", {"url": site.url("/page/8"), "render": "http", "persist": True})
    assert kept.status_code == 200, kept.text
    body = kept.json()
    run = service.get(f"/api/runs/{body['runId']}").json()
    assert run["status"] == "succeeded"
    assert run["result"] == {key: value for key, value in body.items() if key != "runId"}
    assert run["result"]["render"] == "http"
    assert [step["action"] for step in run["steps"]] == ["navigate", "snapshot"]
    assert run["steps"][0]["screenshot"] is None  # plain HTTP: no browser, no screenshot

    failed = service.post("/api/fetch", {"url": site.url("/missing"), "persist": True})
    assert failed.status_code == 502
    assert failed.json() == {"error": {"code": "http_error", "message": "The page answered HTTP 404."}}


def test_worker_killed_mid_run_is_requeued_and_succeeds_once_with_two_attempts(service, site):
    submitted = service.submit({"kind": "fetch", "url": site.url("/slow?ms=3000")})
    service.wait(submitted["id"], statuses=("running",))
    os.kill(service.worker_pid(submitted["id"]), signal.SIGKILL)
    run = service.wait(submitted["id"], timeout=60)
    assert run["status"] == "succeeded", run["error"]
    assert run["attempts"] == 2
    assert [s["action"] for s in run["steps"]] == ["navigate", "snapshot"]  # one trace, not two
    # The cluster keeps taking work after losing a worker.
    after = service.wait(service.submit({"kind": "fetch", "url": site.url("/static")})["id"])
    assert after["status"] == "succeeded"


def test_cancel_a_running_run_over_http(service, site):
    submitted = service.submit({"kind": "fetch", "url": site.url("/hang?s=30")})
    service.wait(submitted["id"], statuses=("running",))
    cancelled = service.post(f"/api/runs/{submitted['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    started = time.monotonic()
    # The worker lets go within seconds: a new run is picked up and finishes on a 2-worker cluster.
    runs = [service.submit({"kind": "fetch", "url": site.url("/static")}) for _ in range(2)]
    for run in runs:
        assert service.wait(run["id"], timeout=15)["status"] == "succeeded"
    assert time.monotonic() - started < 15
    assert service.get(f"/api/runs/{submitted['id']}").json()["status"] == "cancelled"


def test_profile_state_never_reaches_logs_database_responses_or_events(service, site, browser):
    state = real_login_state(browser, site)
    canary = next(c["value"] for c in state["cookies"] if c["name"] == "sid")
    imported = service.post("/api/profiles/import", {"name": "canary", "state": state})
    assert imported.status_code == 201
    with connect(f"{service.events_url}?after=0", additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
        run = service.submit({"kind": "fetch", "url": site.url("/members"), "profile": "canary"})
        frames = []
        while not frames or not (frames[-1]["type"] == "run-finished" and frames[-1]["runId"] == run["id"]):
            frames.append(json.loads(ws.recv(timeout=30)))
    done = service.get(f"/api/runs/{run['id']}")
    assert "Welcome back, ada" in done.json()["result"]["markdown"]
    seen = [
        imported.text,
        done.text,
        service.get("/api/runs").text,
        service.get("/api/profiles").text,
        service.get("/api/profiles/canary").text,
        json.dumps(frames),
        service.log_path.read_text(),
    ]
    assert not any(canary in text for text in seen)
    assert canary not in service.database_text()
    assert canary in (service.data_dir / "profiles" / "canary.json").read_text()
