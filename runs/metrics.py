"""What runs count in the service's metrics (service/kernel/metrics.py), and what a scrape reads from the database."""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from runs.engine import telemetry
from runs.models import Run
from service.kernel import metrics


def run_finished(run: Run) -> None:
    """Every run that ends passes here once (events.event_run_finished): by kind, status and error code, its
    duration from its start, and the model tokens it spent."""
    code = (run.error or {}).get("code", "") if run.status != Run.Status.SUCCEEDED else ""
    metrics.RUNS_FINISHED.labels(run.kind, run.status, code).inc()
    if run.started_at is not None and run.finished_at is not None:
        seconds = (run.finished_at - run.started_at).total_seconds()
        metrics.RUN_DURATION.labels(run.kind, run.status).observe(max(0.0, seconds))
    provider = settings.MODEL_PROVIDER or "none"
    for direction in ("input", "output"):
        tokens = (run.usage or {}).get(f"{direction}Tokens") or 0
        if tokens:
            metrics.MODEL_TOKENS.labels(provider, direction).inc(tokens)


def run_claimed(run: Run) -> None:
    """A worker started an attempt: the first one measures how long the run waited in the queue."""
    if run.attempts == 1:
        waited = (run.started_at or timezone.now()) - run.created_at
        metrics.QUEUE_PICKUP.labels(run.kind).observe(max(0.0, waited.total_seconds()))


def _engine_reported(what: str, detail: str) -> None:
    if what == "guard_refused":
        metrics.GUARD_REFUSALS.labels(detail).inc()
    elif what == "browser_launched":
        metrics.BROWSER_LAUNCHES.inc()
    elif what == "browser_crashed":
        metrics.BROWSER_CRASHES.inc()


def count_engine_reports() -> None:
    telemetry.listen(_engine_reported)


class RunStates(Collector):
    """Read at scrape time: the queue's depth (runs queued) and the runs running now."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts = Run.objects.counts_by_status(Run.Status.QUEUED, Run.Status.RUNNING)
        yield GaugeMetricFamily("service_queue_depth", "Runs waiting in the queue.", value=counts.get("queued", 0))
        yield GaugeMetricFamily("service_runs_running", "Runs being run now.", value=counts.get("running", 0))
