"""Several web processes on one socket (`serve` with WEB_PROCESSES), limits and metrics that hold across all of
them, and JSON log lines: the service as `serve` runs it, spoken to over HTTP."""

from __future__ import annotations

import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.live import KEY, LiveService, free_port

pytestmark = pytest.mark.live

AUTH = {"Authorization": f"Bearer {KEY}"}
METRICS_TOKEN = "scraper-token-0123456789"
SCRAPER = {"Authorization": f"Bearer {METRICS_TOKEN}"}


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    live = LiveService(
        tmp_path_factory.mktemp("web-processes"),
        WEB_PROCESSES="2",
        METRICS_TOKEN=METRICS_TOKEN,
        LOG_FORMAT="json",
        LOG_LEVEL="INFO",
    ).start()
    yield live
    live.stop()


def from_many_clients(base_url: str, count: int, path: str, headers: dict | None = None) -> list[requests.Response]:
    """count GETs from 8 clients at once, each request on a connection of its own (no keep-alive)."""

    def one(_: int) -> requests.Response:
        return requests.get(base_url + path, headers={**(headers or {}), "Connection": "close"}, timeout=10)

    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(one, range(count)))


def scrape(service: LiveService) -> dict[tuple[str, frozenset], float]:
    """(sample name, its labels) -> value, read from GET /api/metrics as a Prometheus scraper reads it."""
    answer = requests.get(service.base_url + "/api/metrics", headers=SCRAPER, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.headers["Content-Type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def from_every_process(base_url: str, path: str, headers: dict | None = None) -> list[requests.Response]:
    """Bursts of 60 (as from_many_clients) until both web processes have answered, 10 s at most. Which process
    accepts a connection is the kernel's choice, not a round robin: one that answers fast can take a whole burst."""
    answers: list[requests.Response] = []
    deadline = time.monotonic() + 10
    while len({answer.headers.get("X-Served-By") for answer in answers}) < 2 and time.monotonic() < deadline:
        answers += from_many_clients(base_url, 60, path, headers)
    return answers


def test_the_web_processes_share_one_socket(service):
    answers = from_every_process(service.base_url, "/api/health")
    assert {answer.status_code for answer in answers} == {200}
    processes = Counter(answer.headers["X-Served-By"] for answer in answers)
    assert set(processes) == {"web-1", "web-2"}, processes


def test_the_rate_limit_is_exact_across_processes(tmp_path):
    limited = LiveService(tmp_path, WEB_PROCESSES="2", API_RATE_LIMIT="100", WORKERS="1").start()
    try:
        # Both processes accepting first (the service is up once one answers; on a busy machine the other may still
        # be starting and the whole burst would go to one): health is not counted against a key's limit.
        warming = from_every_process(limited.base_url, "/api/health")
        assert {answer.headers.get("X-Served-By") for answer in warming} == {"web-1", "web-2"}
        answers = from_many_clients(limited.base_url, 200, "/api/runs?limit=1", AUTH)
    finally:
        limited.stop()
    statuses = Counter(answer.status_code for answer in answers)
    assert statuses == {200: 100, 429: 100}, statuses
    passed = Counter(answer.headers["X-Served-By"] for answer in answers if answer.status_code == 200)
    assert set(passed) == {"web-1", "web-2"}, passed  # both processes spent the one budget
    refused = next(answer for answer in answers if answer.status_code == 429)
    assert refused.json()["error"]["code"] == "rate_limited"
    assert 0 < int(refused.headers["Retry-After"]) <= 60


def test_metrics_count_runs_and_requests_from_every_process(service, site):
    before = scrape(service)
    succeeded = service.submit({"kind": "fetch", "url": site.url("/page/1"), "options": {"screenshots": False}})
    failed = service.submit({"kind": "fetch", "url": f"http://127.0.0.1:{free_port()}/"})
    assert service.wait(succeeded["id"])["status"] == "succeeded"
    failure = service.wait(failed["id"])
    assert failure["status"] == "failed"
    code = failure["error"]["code"]
    details = from_every_process(service.base_url, f"/api/runs/{succeeded['id']}", AUTH)
    assert {answer.status_code for answer in details} == {200}
    assert len({answer.headers["X-Served-By"] for answer in details}) == 2

    after = scrape(service)
    finished = "service_runs_finished_total"
    assert (
        value(after, finished, kind="fetch", status="succeeded", code="")
        - value(before, finished, kind="fetch", status="succeeded", code="")
        == 1
    )
    assert (
        value(after, finished, kind="fetch", status="failed", code=code)
        - value(before, finished, kind="fetch", status="failed", code=code)
        == 1
    )
    durations = "service_run_duration_seconds_count"
    assert value(after, durations, kind="fetch", status="succeeded") >= 1
    assert value(after, durations, kind="fetch", status="failed") >= 1
    assert value(after, "service_queue_pickup_seconds_count", kind="fetch") >= 2
    assert value(after, "service_browser_launches_total") >= 1
    assert value(after, "service_queue_depth") == value(after, "service_runs_running") == 0
    # Requests answered by both web processes, summed: all 40 detail reads are there.
    route = {"route": "api/runs/<pk>", "method": "GET", "status": "200"}
    assert (
        value(after, "service_http_requests_total", **route) - value(before, "service_http_requests_total", **route)
        >= 40
    )
    latency = value(after, "service_http_request_duration_seconds_count", route="api/runs/<pk>", method="GET")
    assert latency >= 40


def test_the_metrics_token_opens_the_metrics_and_nothing_else(service):
    assert requests.get(service.base_url + "/api/metrics", timeout=10).status_code == 401
    assert requests.get(service.base_url + "/api/metrics", headers=AUTH, timeout=10).status_code == 200
    wrong = {"Authorization": "Bearer not-the-token-0123456789"}
    assert requests.get(service.base_url + "/api/metrics", headers=wrong, timeout=10).status_code == 401
    assert requests.get(service.base_url + "/api/runs", headers=SCRAPER, timeout=10).status_code == 401


def test_json_log_lines_carry_the_run_id(service, site):
    run = service.submit({"kind": "fetch", "url": site.url("/page/1"), "options": {"screenshots": False}})
    assert service.wait(run["id"])["status"] == "succeeded"
    lines = service.log_path.read_text().splitlines()
    records = [json.loads(line) for line in lines if line.startswith("{")]
    about_run = [record for record in records if record.get("runId") == run["id"]]
    assert about_run, lines[-20:]
    assert {record["attempt"] for record in about_run} == {1}
    assert {"time", "level", "logger", "message"} <= set(about_run[0])
    assert any(record["message"] == f"run {run['id']} succeeded" for record in about_run)
    assert METRICS_TOKEN not in service.log_path.read_text()
