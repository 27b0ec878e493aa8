"""Configurable limits: requests per key (429 + Retry-After), queue depth (429), batch size, observation and
screenshot sizes."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from runs import services
from runs.models import Run, Step
from service.models import ApiKey

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
