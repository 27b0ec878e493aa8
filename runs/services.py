"""A run's life: submitted (checked, persisted, queued), claimed, its steps recorded, finished, cancelled, reaped;
each step in one transaction with its event in the outbox."""

from __future__ import annotations

import logging
import os
import time
from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.db import transaction

from runs import archive, events, metrics, queue, resources
from runs.drift import result_drift
from runs.engine.spec import PageCopy
from runs.models import Batch, Run, Step
from runs.serializers import ReextractSerializer, RunSpecSerializer, validate_target_url
from service.kernel.errors import ServiceError

log = logging.getLogger(__name__)


def run_submit(
    *,
    spec: dict,
    query: str | None = None,
    query_since: datetime | None = None,
    batch: Batch | None = None,
    enqueue: bool = True,
) -> Run:
    """Check a spec as the API states it, persist it as a queued run, publish run-queued, and enqueue it after commit.
    The one way in for a run, whoever asks (API, CLI, MCP, a saved query's replay, POST /api/fetch with persist);
    a crawl's pages come in by page_submit.

    The spec is checked here, by RunSpecSerializer: a ValidationError (400, every problem named) or a ServiceError
    (503 model_not_configured) leaves nothing behind. query, query_since: a saved query's replay, and when that query
    was created (its drift is measured against the replays since then only). enqueue=False is for callers that
    execute the run in their own process (the CLI); if they die before claiming it, the run stays queued and
    visible, and can be cancelled.
    """
    spec = checked_spec(spec)
    queue.check_room(1)
    return _persist(spec, query=query, query_since=query_since, batch=batch, enqueue=enqueue)


def checked_spec(spec: dict) -> dict:
    """The spec as RunSpecSerializer checks and completes it (ValidationError, or ServiceError, when it is not one)."""
    checked = RunSpecSerializer(data=spec)
    checked.is_valid(raise_exception=True)
    return checked.validated_data


def page_submit(*, page_spec: dict, url: str, crawl: Run) -> Run:
    """A page of a crawl (runs/crawl.py), queued as a run whose parent is the crawl: page_spec is the spec of all its
    pages, checked once by checked_spec; each page's URL is checked here. Not enqueued, nor held to QUEUE_MAX_DEPTH:
    the crawl runs it at once, in its own worker."""
    return _persist({**page_spec, "url": validate_target_url(url)}, parent=crawl, enqueue=False)


def _persist(
    spec: dict,
    *,
    enqueue: bool,
    query: str | None = None,
    query_since: datetime | None = None,
    batch: Batch | None = None,
    parent: Run | None = None,
) -> Run:
    with transaction.atomic():
        run = Run.objects.create(
            kind=spec["kind"],
            url=spec["url"],
            spec=spec,
            query=query,
            query_since=query_since,
            batch=batch,
            parent=parent,
        )
        events.event_run_queued(run)
        if enqueue:
            queue.enqueue(run)
    return run


def batch_submit(*, specs: list[dict]) -> tuple[Batch, list[Run]]:
    """Persist validated specs as one batch of queued runs in one transaction, then enqueue them all."""
    queue.check_room(len(specs))
    with transaction.atomic():
        batch = Batch.objects.create()
        runs = Run.objects.bulk_create(
            Run(kind=spec["kind"], url=spec["url"], spec=spec, batch=batch) for spec in specs
        )
        events.event_runs_queued(runs)
        queue.enqueue_many(runs)
    return batch, runs


def run_cancel(*, run: Run) -> Run:
    """Cancel a queued or running run. A running run's worker notices at its next checkpoint (within ~1 s). A crawl's
    unfinished pages are cancelled with it."""
    with transaction.atomic():
        run.refresh_from_db()
        if run.is_final:
            raise ServiceError("already_finished", f"The run already finished as {run.status}.", status_code=409)
        if not run.cancel():
            raise ServiceError("conflict", "The run changed state while cancelling; try again.", status_code=409)
        events.event_run_finished(run)
        cancel_pages(run)
    return run


def cancel_pages(crawl: Run) -> int:
    """Cancel a crawl's pages that have not finished (queued ones would otherwise wait for ever: only the crawl runs
    them); how many."""
    cancelled = 0
    for page in Run.objects.filter(parent=crawl, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]):
        if page.cancel():
            events.event_run_finished(page)
            cancelled += 1
    return cancelled


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
    metrics.run_claimed(run)
    return run


def run_record_step(
    *,
    run: Run,
    index: int,
    action: str,
    url: str,
    observation: str,
    screenshot: bytes | None,
    duration_ms: int,
    page: PageCopy | None = None,
) -> bool:
    """Write one step (its screenshot, the page it loaded to the archive) of the attempt that owns the run; False
    if it no longer does.

    Observations past OBSERVATION_MAX_CHARS are cut (and say so); screenshots past SCREENSHOT_MAX_BYTES are dropped.
    """
    if len(observation) > settings.OBSERVATION_MAX_CHARS:
        cut = len(observation) - settings.OBSERVATION_MAX_CHARS
        observation = (
            observation[: settings.OBSERVATION_MAX_CHARS] + f"\n[… {cut} more characters cut: OBSERVATION_MAX_CHARS]"
        )
    if screenshot is not None and len(screenshot) > settings.SCREENSHOT_MAX_BYTES:
        log.warning(
            "run %s step %d: screenshot of %d bytes dropped (SCREENSHOT_MAX_BYTES)", run.pk, index, len(screenshot)
        )
        screenshot = None
    screenshot_name = f"{index}.jpg" if screenshot is not None else ""
    # Files are written aside first and put in place only while this attempt holds the lease (the renewal's row lock
    # is held until the transaction ends): an attempt that lost its lease never overwrites the new one's files.
    aside: list[tuple[Path, Path]] = []
    if screenshot is not None:
        folder = resources.screenshot_dir(run.pk)
        folder.mkdir(parents=True, exist_ok=True)
        written = folder / f".{index}.attempt-{run.attempts}.tmp"
        written.write_bytes(screenshot)
        aside.append((written, folder / screenshot_name))
    archived = archive.put_aside(run.pk, run.attempts, index, page) if page is not None else None
    if archived is not None:
        aside.append(archived[:2])
    with transaction.atomic():
        if not run.renew_lease(lease_seconds=settings.RUN_LEASE_SECONDS, steps_added=1):
            for written, _ in aside:
                written.unlink(missing_ok=True)
            return False
        for written, final in aside:
            os.replace(written, final)
        step = Step.objects.create(
            run=run,
            index=index,
            action=action,
            url=url,
            observation=observation,
            screenshot=screenshot_name,
            page=archived[2] if archived else None,
            duration_ms=duration_ms,
        )
        events.event_step(
            run, step, screenshot_url=resources.screenshot_url(run.pk, index) if screenshot_name else None
        )
    return True


def run_reextract(*, source: Run, changes: object) -> Run:
    """An extract run on the page `source` archived instead of the network, validated and queued like any run."""
    return run_submit(spec=reextract_spec(source=source, changes=changes))


def reextract_spec(*, source: Run, changes: object) -> dict:
    """The spec of a re-extraction of `source`'s archived page: the schema, instruction and model are the source
    run's unless `changes` (ReextractSerializer) gives others."""
    body = ReextractSerializer(data=changes)
    body.is_valid(raise_exception=True)
    data = body.validated_data
    archived = source.steps.filter(page__isnull=False)
    step = (archived.filter(index=data["step"]) if "step" in data else archived.order_by("-index")).first()
    if step is None:
        where = f"at step {data['step']}" if "step" in data else "(it loaded none, or it was pruned)"
        raise ServiceError("no_archived_page", f"Run {source.pk} has no archived page {where}.", status_code=409)
    schema = data.get("schema", source.spec.get("schema"))
    if schema is None:
        message = f"Run {source.pk} is a {source.kind} run, with no schema to reuse: give one."
        raise ServiceError("invalid_request", f"schema: {message}", fields={"schema": [message]})
    spec = {
        "kind": "extract",
        "url": step.page["url"],
        "schema": schema,
        "source": {"archivedRun": str(source.pk), "step": step.index},
    }
    instruction = data.get("instruction", source.spec.get("instruction", ""))
    if instruction:
        spec["instruction"] = instruction
    model = (data.get("options") or {}).get("model") or (source.spec.get("options") or {}).get("model")
    if model:
        spec["options"] = {"model": model}
    return spec


def run_finish(
    *, run: Run, result: object = None, error: dict | None = None, usage: dict | None = None, extracted_by: str = ""
) -> bool:
    """Record the outcome; a successful saved-query replay also records its drift from the previous success, and a
    re-extraction its drift from the extract run whose page it read."""
    with transaction.atomic():
        drift = None
        source = run.spec.get("source") if not error else None
        if source:
            compared = Run.objects.filter(pk=source["archivedRun"], kind=Run.Kind.EXTRACT).first()
            if compared is not None and compared.status == Run.Status.SUCCEEDED:
                drift = {"comparedWith": str(compared.pk), **result_drift(compared.result, result)}
        elif run.query and not error:
            # Only replays of this query: a deleted query's runs keep the name a new query may take.
            previous = (
                Run.objects.filter(
                    query=run.query, status=Run.Status.SUCCEEDED, created_at__gte=run.query_since or run.created_at
                )
                .exclude(pk=run.pk)
                .order_by("-finished_at")
                .first()
            )
            if previous is not None:
                drift = {"comparedWith": str(previous.pk), **result_drift(previous.result, result)}
        if not run.finish(result=result, error=error, usage=usage, drift=drift, extracted_by=extracted_by):
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
                queue.enqueue(run)
                counts["requeued"] += 1
    if any(counts.values()):
        log.warning("reaper: %(requeued)d run(s) re-queued, %(failed)d failed after their last attempt", counts)
    return counts


def run_wait(*, run: Run, timeout_s: float, poll_s: float = 0.05) -> Run:
    """The run once it is final, or as it is when timeout_s has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        run.refresh_from_db()
        if run.is_final or time.monotonic() >= deadline:
            return run
        time.sleep(poll_s)
