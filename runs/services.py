"""Work on runs that spans models, the queue and the event outbox."""

from __future__ import annotations

import logging
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django_q.tasks import async_task

from runs import events
from runs.models import Batch, Run, Step
from service.errors import ServiceError

log = logging.getLogger(__name__)

JOB = "runs.jobs.execute_run"


def _enqueue(run: Run) -> None:
    run_id = str(run.pk)
    transaction.on_commit(lambda: async_task(JOB, run_id, task_name=f"run-{run_id}"))


def _enqueue_many(runs: list[Run]) -> None:
    run_ids = [str(run.pk) for run in runs]

    def enqueue() -> None:
        with transaction.atomic():
            for run_id in run_ids:
                async_task(JOB, run_id, task_name=f"run-{run_id}")

    transaction.on_commit(enqueue)


def screenshot_dir(run_id: str) -> Path:
    return settings.DATA_DIR / "screenshots" / str(run_id)


def screenshot_url(run_id: str, index: int) -> str:
    return f"/api/runs/{run_id}/steps/{index}/screenshot"


def run_submit(*, spec: dict, query: str | None = None, batch: Batch | None = None, enqueue: bool = True) -> Run:
    """Persist a validated spec as a queued run, publish run-queued, and enqueue it after commit.

    enqueue=False is for callers that execute the run in their own process (the CLI); if they die before
    claiming it, the run stays queued and visible, and can be cancelled.
    """
    with transaction.atomic():
        run = Run.objects.create(kind=spec["kind"], url=spec["url"], spec=spec, query=query, batch=batch)
        events.event_run_queued(run)
        if enqueue:
            _enqueue(run)
    return run


def batch_submit(*, specs: list[dict]) -> tuple[Batch, list[Run]]:
    """Persist validated specs as one batch of queued runs in one transaction, then enqueue them all."""
    with transaction.atomic():
        batch = Batch.objects.create()
        runs = Run.objects.bulk_create(
            Run(kind=spec["kind"], url=spec["url"], spec=spec, batch=batch) for spec in specs
        )
        events.event_runs_queued(runs)
        _enqueue_many(runs)
    return batch, runs


def run_cancel(*, run: Run) -> Run:
    """Cancel a queued or running run. A running run's worker notices at its next checkpoint (within ~1 s)."""
    with transaction.atomic():
        run.refresh_from_db()
        if run.is_final:
            raise ServiceError("already_finished", f"The run already finished as {run.status}.", status_code=409)
        if not run.cancel():
            raise ServiceError("conflict", "The run changed state while cancelling; try again.", status_code=409)
        events.event_run_finished(run)
    return run


def run_claim(*, run_id: str, worker: str) -> Run | None:
    """Claim a queued run for this worker: attempts+1 and a lease. None when it is not ours to run.

    Steps of an earlier attempt are dropped, so a retried run records one clean trace.
    """
    with transaction.atomic():
        run = Run.objects.filter(pk=run_id).first()
        if run is None or run.status != Run.Status.QUEUED:
            return None
        if not run.mark_running(worker=worker, lease_seconds=settings.RUN_LEASE_SECONDS):
            return None
        run.steps.all().delete()
        events.event_run_started(run)
    return run


def run_record_step(
    *, run: Run, index: int, action: str, url: str, observation: str, screenshot: bytes | None, duration_ms: int
) -> bool:
    """Write one step (and its screenshot) of the attempt that owns the run; False if it no longer does."""
    screenshot_name = ""
    if screenshot is not None:
        folder = screenshot_dir(run.pk)
        folder.mkdir(parents=True, exist_ok=True)
        screenshot_name = f"{index}.jpg"
        (folder / screenshot_name).write_bytes(screenshot)
    with transaction.atomic():
        if not run.renew_lease(lease_seconds=settings.RUN_LEASE_SECONDS):
            return False
        step = Step.objects.create(
            run=run,
            index=index,
            action=action,
            url=url,
            observation=observation,
            screenshot=screenshot_name,
            duration_ms=duration_ms,
        )
        events.event_step(run, step, screenshot_url=screenshot_url(run.pk, index) if screenshot_name else None)
    return True


def run_finish(*, run: Run, result: object = None, error: dict | None = None, usage: dict | None = None) -> bool:
    with transaction.atomic():
        if not run.finish(result=result, error=error, usage=usage):
            return False
        events.event_run_finished(run)
    return True


def run_reap_expired() -> dict[str, int]:
    """Re-queue runs whose worker stopped renewing its lease, or fail them after RUN_MAX_ATTEMPTS."""
    counts = {"requeued": 0, "failed": 0}
    for run in Run.objects.lease_expired():
        with transaction.atomic():
            if run.attempts >= settings.RUN_MAX_ATTEMPTS:
                if run.fail_lost(max_attempts=settings.RUN_MAX_ATTEMPTS):
                    events.event_run_finished(run)
                    counts["failed"] += 1
            elif run.requeue():
                events.event_run_queued(run)
                _enqueue(run)
                counts["requeued"] += 1
    if any(counts.values()):
        log.warning("reaper: %(requeued)d run(s) re-queued, %(failed)d failed after their last attempt", counts)
    return counts
