"""Configurable limits: requests per key (429 + Retry-After; a playground session spends its key's budget), queue
depth (429), batch size, the longest timeoutMs, observation and screenshot sizes."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.test import APIClient

from runs import services
from runs.models import Run, Step
from service.kernel.keys import ApiKey
from tests.conftest import API_KEY

pytestmark = pytest.mark.django_db
SPEC = {"kind": "fetch", "url": "https://example.com/"}


def submit(client, body=SPEC, path="/api/runs"):
    return client.post(path, data=json.dumps(body), content_type="application/json")


def test_each_key_gets_api_rate_limit_requests_a_minute(api, settings):
    settings.API_RATE_LIMIT = 3
    cache.clear()
    assert [api.get("/api/runs").status_code for _ in range(3)] == [200, 200, 200]
    limited = api.get("/api/runs")
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "rate_limited"
    assert 0 < int(limited["Retry-After"]) <= 60
    _, raw = ApiKey.issue("other")
    other = APIClient()
    other.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    assert other.get("/api/runs").status_code == 200  # its own budget
    assert api.get("/api/health").status_code == 200  # health is never limited


def test_a_playground_session_spends_the_same_budget_as_its_key(api, settings):
    settings.API_RATE_LIMIT = 4
    browser = Client(enforce_csrf_checks=True)
    browser.get("/api/session")
    signed_in = browser.post(
        "/api/session",
        data=json.dumps({"key": API_KEY}),
        content_type="application/json",
        HTTP_X_CSRFTOKEN=browser.cookies["csrftoken"].value,
    )
    assert signed_in.json() == {"signedIn": True, "keyName": "bootstrap"}
    cache.clear()  # count from here: two requests with the key itself, two through the session
    assert [api.get("/api/runs").status_code, browser.get("/api/runs").status_code] == [200, 200]
    assert [api.get("/api/runs").status_code, browser.get("/api/runs").status_code] == [200, 200]
    over = browser.get("/api/runs")
    assert over.status_code == 429 and over.json()["error"]["code"] == "rate_limited"
    assert api.get("/api/runs").status_code == 429  # the key's budget is spent for both


def test_a_timeout_above_run_timeout_max_ms_is_a_400_naming_the_limit(api, settings):
    settings.RUN_TIMEOUT_MAX_MS = 5000
    too_long = submit(api, {**SPEC, "options": {"timeoutMs": 5001}})
    assert too_long.status_code == 400
    assert too_long.json() == {
        "error": {
            "code": "invalid_request",
            "message": "options.timeoutMs: At most 5000 (RUN_TIMEOUT_MAX_MS).",
            "fields": {"options.timeoutMs": ["At most 5000 (RUN_TIMEOUT_MAX_MS)."]},
        }
    }
    assert Run.objects.count() == 0
    assert submit(api, {**SPEC, "options": {"timeoutMs": 5000}}).status_code == 201
    sync = submit(api, {"url": SPEC["url"], "timeoutMs": 5001}, "/api/fetch")
    assert sync.status_code == 400
    assert sync.json()["error"]["fields"] == {"timeoutMs": ["At most 5000 (RUN_TIMEOUT_MAX_MS)."]}


def test_a_full_queue_refuses_new_runs_with_429(api, settings):
    settings.QUEUE_MAX_DEPTH = 2
    assert [submit(api).status_code for _ in range(2)] == [201, 201]
    full = submit(api)
    assert full.status_code == 429
    assert full["Retry-After"] == "30"
    assert full.json()["error"]["code"] == "queue_full"
    assert "QUEUE_MAX_DEPTH=2" in full.json()["error"]["message"]
    batch = submit(api, {"runs": [SPEC]}, "/api/batches")
    assert batch.status_code == 429
    assert Run.objects.count() == 2
    Run.objects.filter(status="queued").update(status="succeeded")  # the queue drained
    assert submit(api).status_code == 201


def test_a_crawls_pages_take_no_room_in_the_queue(api, settings):
    """A crawl's page is a queued run only between being made and being run by the crawl's own worker: it never
    waits in the queue, so a run submitted meanwhile is not refused for it (a crawl test's CI failed so)."""
    settings.QUEUE_MAX_DEPTH = 1
    crawl = Run.objects.create(kind="crawl", url=SPEC["url"], spec={**SPEC, "kind": "crawl"}, status="running")
    Run.objects.create(kind="fetch", url=SPEC["url"], spec=SPEC, parent=crawl)  # queued, as the crawl makes it
    assert submit(api).status_code == 201
    assert submit(api).json()["error"]["code"] == "queue_full"  # a run of its own does wait in the queue


def test_batches_hold_at_most_batch_max_runs(api, settings):
    settings.BATCH_MAX_RUNS = 3
    response = submit(api, {"runs": [SPEC] * 4}, "/api/batches")
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"runs": ["A batch holds at most 3 runs (BATCH_MAX_RUNS); split it."]}
    assert submit(api, {"runs": [SPEC] * 3}, "/api/batches").status_code == 201


def test_long_observations_are_cut_and_huge_screenshots_dropped(settings, data_dir):
    settings.OBSERVATION_MAX_CHARS = 2000
    settings.SCREENSHOT_MAX_BYTES = 10_000
    run = Run.objects.create(kind="fetch", url=SPEC["url"], spec=SPEC)
    assert run.mark_running(worker="test", lease_seconds=30)
    services.run_record_step(
        run=run,
        index=0,
        action="snapshot",
        url=SPEC["url"],
        observation="x" * 5000,
        screenshot=b"j" * 20_000,
        duration_ms=1,
    )
    step = Step.objects.get(run=run)
    assert step.observation == "x" * 2000 + "\n[… 3000 more characters cut: OBSERVATION_MAX_CHARS]"
    assert step.screenshot == ""
    assert not (data_dir / "screenshots" / str(run.pk)).exists()
