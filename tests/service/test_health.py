"""GET /api/health (README: "database, queue depth, workers seen, browser found (no auth)"): the whole body against
a known state, in-process (database, queue and browser) and on a live service (the workers it runs)."""

from __future__ import annotations

import time

import pytest
import requests

from runs import services
from tests.live import LiveService

SYSTEM_CHROMIUM = "/usr/bin/chromium"  # Debian's, the one this machine (and the image) has


def submit(api, site, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        response = api.post("/api/runs", {"kind": "fetch", "url": site.url("/static")}, format="json")
        assert response.status_code == 201, response.content
        ids.append(response.json()["id"])
    return ids


# The tests run as root, where Chromium's sandbox cannot run (tests/engine/test_sandbox.py runs it as another user).
AS_ROOT = {"on": False, "why": "off: the service runs as root, and Chromium's sandbox cannot run as root"}


@pytest.mark.django_db(transaction=True)
def test_health_needs_no_key_and_counts_queued_and_running_runs(api, anonymous, site, settings):
    settings.BROWSER_EXECUTABLE = None
    assert anonymous.get("/api/health").json() == {
        "status": "ok",
        "db": True,
        "queue": {"queued": 0, "running": 0, "messages": 0},
        "workers": 0,  # no worker runs in this process
        "browser": SYSTEM_CHROMIUM,
        "sandbox": AS_ROOT,
    }
    first, *_ = submit(api, site, 3)
    assert services.run_claim(run_id=first, worker="test:1") is not None  # what a worker does when it starts a run
    response = anonymous.get("/api/health")
    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "db": True,
        "queue": {"queued": 2, "running": 1, "messages": 3},
        "workers": 0,
        "browser": SYSTEM_CHROMIUM,
        "sandbox": AS_ROOT,
    }


@pytest.mark.django_db(transaction=True)
def test_health_is_degraded_when_the_configured_browser_is_missing(anonymous, settings, tmp_path):
    settings.BROWSER_EXECUTABLE = str(tmp_path / "no-chromium-here")
    response = anonymous.get("/api/health")
    assert response.status_code == 200
    assert response.json() == {
        "status": "degraded",
        "db": True,
        "queue": {"queued": 0, "running": 0, "messages": 0},
        "workers": 0,
        "browser": None,
        "sandbox": AS_ROOT,
    }


def health(service: LiveService) -> dict:
    return requests.get(service.base_url + "/api/health", timeout=10).json()


def eventually(service: LiveService, expected: dict, timeout: float = 60) -> dict:
    """Poll /api/health until it shows `expected` (workers register and runs start asynchronously)."""
    deadline = time.monotonic() + timeout
    seen = health(service)
    while seen != expected and time.monotonic() < deadline:
        time.sleep(0.2)
        seen = health(service)
    return seen


@pytest.mark.live
def test_a_live_service_reports_its_workers_and_the_runs_waiting_for_them(tmp_path, site):
    service = LiveService(tmp_path, WORKERS="2").start()
    try:
        idle = {
            "status": "ok",
            "db": True,
            "queue": {"queued": 0, "running": 0, "messages": 0},
            "workers": 2,
            "browser": SYSTEM_CHROMIUM,
            "sandbox": AS_ROOT,
        }
        assert eventually(service, idle) == idle
        # Two runs that hang occupy both workers; a third waits in the queue.
        hang = {"kind": "fetch", "url": site.url("/hang?s=30"), "options": {"timeoutMs": 30_000}}
        ids = [service.submit(hang)["id"] for _ in range(2)]
        for run_id in ids:
            service.wait(run_id, statuses=("running",))
        ids.append(service.submit(hang)["id"])
        busy = {**idle, "queue": {"queued": 1, "running": 2, "messages": 3}}
        assert eventually(service, busy) == busy
        for run_id in ids:
            assert service.post(f"/api/runs/{run_id}/cancel").status_code == 200
        assert eventually(service, idle) == idle
    finally:
        service.stop()
