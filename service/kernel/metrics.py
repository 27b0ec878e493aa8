"""The service's metrics (Prometheus), counted in whichever process sees a thing happen and read back by
GET /api/metrics summed over every process of the installation.

prometheus-client's multiprocess mode: every process writes its values to files in PROMETHEUS_MULTIPROC_DIR
(service/settings.py sets it to the data directory's metrics/ before anything imports prometheus_client; `serve`
empties it when it starts), and a scrape reads them all. Counters and histograms of processes that ended are kept
(a recycled worker's runs still count); the WebSocket gauge sums live processes only.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

from django.utils.deprecation import MiddlewareMixin
from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.registry import Collector

_SECONDS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)

RUNS_FINISHED = Counter(
    "service_runs_finished", "Runs that ended, by kind, status and error code (empty when it succeeded).",
    ["kind", "status", "code"],
)  # fmt: skip
RUN_DURATION = Histogram(
    "service_run_duration_seconds", "From a run's start to its end, by kind and status.", ["kind", "status"],
    buckets=_SECONDS,
)  # fmt: skip
QUEUE_PICKUP = Histogram(
    "service_queue_pickup_seconds", "From a run's submission to a worker starting its first attempt, by kind.",
    ["kind"], buckets=(0.01, 0.025, *_SECONDS),
)  # fmt: skip
MODEL_TOKENS = Counter(
    "service_model_tokens", "Model tokens spent by runs, by provider and direction (input, output).",
    ["provider", "direction"],
)  # fmt: skip
GUARD_REFUSALS = Counter(
    "service_guard_refusals", "Requests the network guard refused, by reason (its error code).", ["reason"]
)
BROWSER_LAUNCHES = Counter("service_browser_launches", "Chromium processes started.")
BROWSER_CRASHES = Counter("service_browser_crashes", "Chromium processes found gone while still in use.")
EVENT_WAKEUPS = Counter(
    "service_event_wakeups", "Wake-ups the event feed received over the channel layer (Redis), after events committed."
)
WEBSOCKETS = Gauge(
    "service_websocket_connections", "Open connections to the event stream.", multiprocess_mode="livesum"
)
HTTP_REQUESTS = Counter(
    "service_http_requests", "HTTP requests answered, by route, method and status.", ["route", "method", "status"]
)
HTTP_LATENCY = Histogram(
    "service_http_request_duration_seconds", "Time to answer an HTTP request, by route and method.",
    ["route", "method"], buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)  # fmt: skip


def exposition(*collectors: Collector) -> bytes:
    """Every process's values and the given collectors' (values read at scrape time, such as the queue's depth), in
    the Prometheus text format."""
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry)


def start_afresh() -> None:
    """At `serve`'s start: the values an earlier start left go (Prometheus sees its counters reset), but not this
    process's own (its files are open)."""
    own = str(os.getpid())
    for path in Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).glob("*.db"):
        if path.stem.rsplit("_", 1)[-1] != own:
            path.unlink(missing_ok=True)


_ROUTE_GROUP = re.compile(r"\(\?P<(\w+)>[^)]*\)")  # the router's (?P<pk>[^/.]+) shown as <pk>
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class RequestMetrics(MiddlewareMixin):
    """Every HTTP answer counted by route (the URL pattern, not the path), method and status, with its latency;
    and, under `serve`, which web process answered (X-Served-By: web-<n>)."""

    served_by = os.environ.get("WEB_PROCESS", "")

    def process_request(self, request) -> None:
        request.metrics_started = time.perf_counter()

    def process_response(self, request, response):
        match = getattr(request, "resolver_match", None)
        route = _ROUTE_GROUP.sub(r"<\1>", match.route or match.view_name).strip("^$") if match else "unmatched"
        method = request.method if request.method in _METHODS else "other"
        HTTP_REQUESTS.labels(route, method, str(response.status_code)).inc()
        started = getattr(request, "metrics_started", None)
        if started is not None:
            HTTP_LATENCY.labels(route, method).observe(time.perf_counter() - started)
        if self.served_by:
            response["X-Served-By"] = self.served_by
        return response
