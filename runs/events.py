"""The one place events are published: an Event row in the caller's transaction (the outbox)."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from runs import metrics, webhooks
from runs.models import Event, Run, Step
from runs.wakeup import waker

STEP_OBSERVATION_LIMIT = 2000


def _publish(run: Run, type_: str, payload: dict) -> Event:
    event = Event.objects.create(run_id=run.pk, type=type_, payload=payload)
    if settings.REDIS_URL:
        transaction.on_commit(waker.request)
    return event


def event_run_queued(run: Run) -> Event:
    return _publish(run, Event.Type.RUN_QUEUED, {"kind": run.kind})


def event_runs_queued(runs: list[Run]) -> None:
    """run-queued for many runs in one INSERT (batches)."""
    Event.objects.bulk_create(
        Event(run_id=run.pk, type=Event.Type.RUN_QUEUED, payload={"kind": run.kind}) for run in runs
    )
    if settings.REDIS_URL:
        transaction.on_commit(waker.request)


def event_run_started(run: Run) -> Event:
    return _publish(run, Event.Type.RUN_STARTED, {"attempt": run.attempts})


def event_step(run: Run, step: Step, *, screenshot_url: str | None) -> list[Event]:
    observation = step.observation
    truncated = len(observation) > STEP_OBSERVATION_LIMIT
    events = [
        _publish(
            run,
            Event.Type.STEP,
            {
                "index": step.index,
                "action": step.action,
                "url": step.url,
                "observation": observation[:STEP_OBSERVATION_LIMIT],
                "truncated": truncated,
            },
        )
    ]
    if screenshot_url:
        events.append(_publish(run, Event.Type.SCREENSHOT, {"index": step.index, "url": screenshot_url}))
    return events


def event_run_finished(run: Run) -> Event:
    """Every run that ends passes here once (finished, cancelled, or failed by the reaper): it is counted, and told
    to the webhooks that want it."""
    metrics.run_finished(run)
    webhooks.run_ended(run)
    payload: dict = {"status": run.status}
    if run.error:
        payload["error"] = run.error
    return _publish(run, Event.Type.RUN_FINISHED, payload)
