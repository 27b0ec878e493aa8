"""End to end: `manage.py serve` (daphne + django-q2 workers + reaper), real Chromium, a real local site."""

from __future__ import annotations

import json
import os
import signal

import pytest
from websockets.sync.client import connect

from tests.live import KEY, SHORT_LEASE_SECONDS, LiveService, ProbeSite
from tests.site import real_login_state

pytestmark = pytest.mark.live
WORKERS = 2


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("live"), WORKERS=str(WORKERS)).start()
    yield live
    live.stop()


@pytest.fixture(scope="module")
def probe():
    with ProbeSite(parties=WORKERS) as pages:
        yield pages


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
    # With the status, for a program (a crawl's back-off) to act on without reading the message.
    assert run["error"] == {"code": "http_error", "message": "The page answered HTTP 404.", "httpStatus": 404}
    assert service.get("/api/health").json()["workers"] == WORKERS


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
    # README: "when that run fails, the error carries its runId too".
    error = failed.json()["error"]
    assert error == {"code": "http_error", "message": "The page answered HTTP 404.", "runId": error.get("runId")}
    kept_failure = service.get(f"/api/runs/{error['runId']}").json()
    assert (kept_failure["status"], kept_failure["url"], kept_failure["error"]) == (
        "failed",
        site.url("/missing"),
        {"code": "http_error", "message": "The page answered HTTP 404.", "httpStatus": 404},
    )


def test_sync_fetch_with_persist_and_render_auto_keeps_a_browser_run_with_its_screenshot(service, site):
    # README: for runs, render "auto" (the default) means the browser, so the kept run's trace has its screenshot;
    # the same page fetched now without persist is answered by plain HTTP.
    assert service.post("/api/fetch", {"url": site.url("/page/9")}).json()["render"] == "http"
    kept = service.post("/api/fetch", {"url": site.url("/page/9"), "persist": True})
    assert kept.status_code == 200, kept.text
    body = kept.json()
    assert (body["render"], body["title"], body["finalUrl"], body["status"]) == (
        "browser",
        "Page 9",
        site.url("/page/9"),
        200,
    )
    run = service.get(f"/api/runs/{body['runId']}").json()
    assert (run["kind"], run["status"], run["attempts"]) == ("fetch", "succeeded", 1)
    assert run["spec"]["options"]["render"] == "auto"
    assert run["result"] == {key: value for key, value in body.items() if key != "runId"}
    assert [step["action"] for step in run["steps"]] == ["navigate", "snapshot"]
    assert run["steps"][0]["screenshot"] == f"/api/runs/{run['id']}/steps/0/screenshot"
    shot = service.get(run["steps"][0]["screenshot"])
    assert shot.status_code == 200 and shot.headers["Content-Type"] == "image/jpeg"
    assert shot.content[:3] == b"\xff\xd8\xff"


def test_worker_killed_mid_run_is_requeued_and_succeeds_once_with_two_attempts(tmp_path, site, probe):
    # The one test here that needs a lease to expire has its own service with a short lease (the others keep the
    # production one); one worker, so the cluster must replace the killed one to go on.
    service = LiveService(tmp_path, WORKERS="1", lease_seconds=SHORT_LEASE_SECONDS).start()
    try:
        submitted = service.submit({"kind": "fetch", "url": probe.url("/hang-once/killed")})
        probe.wait_until_requested("/hang-once/killed")
        os.kill(service.worker_pid(submitted["id"]), signal.SIGKILL)
        run = service.wait(submitted["id"], timeout=60)
        assert run["status"] == "succeeded", run["error"]
        assert run["attempts"] == 2
        assert [s["action"] for s in run["steps"]] == ["navigate", "snapshot"]  # one trace, not two
        assert run["result"]["title"] == "Probe"
        # The cluster keeps taking work after losing a worker.
        after = service.wait(service.submit({"kind": "fetch", "url": site.url("/static")})["id"])
        assert (after["status"], after["attempts"]) == ("succeeded", 1)
    finally:
        service.stop()


def test_cancel_a_running_run_frees_its_worker(service, site, probe):
    # The run would hold its worker for far longer than the follow-up runs may take: it asks for the largest
    # timeoutMs, they keep the default (60 s).
    submitted = service.submit({"kind": "fetch", "url": site.url("/hang?s=600"), "options": {"timeoutMs": 300000}})
    service.wait(submitted["id"], statuses=("running",))
    cancelled = service.post(f"/api/runs/{submitted['id']}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    # As many runs as there are workers, each of which finishes only while all of them run at the same time: they
    # all succeed only if the worker of the cancelled run let go of it. A worker still stuck on it leaves one of
    # them waiting until its own timeout (failed, timeout).
    runs = [service.submit({"kind": "fetch", "url": probe.url("/together/after-cancel")}) for _ in range(WORKERS)]
    finished = [service.wait(run["id"], timeout=120) for run in runs]
    assert [(run["status"], run["result"]["title"] if run["result"] else run["error"]) for run in finished] == [
        ("succeeded", "Probe")
    ] * WORKERS
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
