"""Work on runs that spans models, the queue and the event outbox."""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.tasks import async_task

from profiles.store import StateFileError, check_storage_state_file, profile_path
from queries.models import SavedQuery
from runs import events
from runs.drift import result_drift
from runs.engine.browser import shared_browser_thread
from runs.engine.fetch import fetch
from runs.engine.netpolicy import NetworkPolicy
from runs.engine.search import searxng_search
from runs.engine.spec import EngineError, FetchOptions, FetchSpec, NullRecorder
from runs.models import Batch, Run, Step
from service.errors import ServiceError

log = logging.getLogger(__name__)

JOB = "runs.jobs.execute_run"
SEARCH_FETCH_PARALLEL = 4


def _enqueue(run: Run) -> None:
    run_id = str(run.pk)
    transaction.on_commit(lambda: async_task(JOB, run_id, task_name=f"run-{run_id}"))


def queue_release_taken_tasks() -> int:
    """Make every task that a cluster took from the queue but never acknowledged deliverable again.

    A cluster that is stopped or killed may hold tasks it had prefetched but not started; django-q2 would deliver
    them again only after its retry time (RUN_TIMEOUT_MAX_MS + 90 s). Called when workers start. A task that another
    live cluster is running is delivered twice at most, which is harmless: only one claim of a run can succeed.
    """
    now = timezone.now()
    released = OrmQ.objects.filter(key=Conf.CLUSTER_NAME, lock__gt=now).update(lock=now)
    if released:
        log.info("queue: %d task(s) taken by an earlier cluster are deliverable again", released)
    return released


def run_hand_back(run_id: str) -> None:
    """A stopping worker got a run it will not start: queue it again for whichever worker comes next."""
    async_task(JOB, run_id, task_name=f"run-{run_id}")


def _enqueue_many(runs: list[Run]) -> None:
    run_ids = [str(run.pk) for run in runs]

    def enqueue() -> None:
        with transaction.atomic():
            for run_id in run_ids:
                async_task(JOB, run_id, task_name=f"run-{run_id}")

    transaction.on_commit(enqueue)


def network_policy() -> NetworkPolicy:
    """Where runs and synchronous fetches may connect, from ALLOW_PRIVATE_NETWORKS and NETWORK_ALLOWLIST; who answers
    the guard's DNS lookups, from NETWORK_DNS_SERVERS (empty: the system's resolver configuration)."""
    return NetworkPolicy(
        allow_private=settings.ALLOW_PRIVATE_NETWORKS,
        allowlist=tuple(settings.NETWORK_ALLOWLIST),
        nameservers=tuple(settings.NETWORK_DNS_SERVERS),
    )


def storage_state_path(spec: dict) -> str | None:
    """The state file a run starts from; checked again at execution (like at submit), since files change."""
    if spec.get("profile"):
        path = profile_path(settings.DATA_DIR, spec["profile"])
        if not path.is_file():
            raise EngineError("unknown_profile", f"The profile {spec['profile']!r} no longer exists.")
        return str(path)
    if spec.get("storageStatePath"):
        try:
            return str(check_storage_state_file(spec["storageStatePath"], settings.DATA_DIR))
        except StateFileError as error:
            raise EngineError("invalid_storage_state", str(error)) from None
    return None


def screenshot_dir(run_id: str) -> Path:
    return settings.DATA_DIR / "screenshots" / str(run_id)


def screenshot_url(run_id: str, index: int) -> str:
    return f"/api/runs/{run_id}/steps/{index}/screenshot"


def _check_queue_room(adding: int) -> None:
    """QUEUE_MAX_DEPTH queued runs at most: past it, submitters are told to come back later (429)."""
    queued = Run.objects.filter(status=Run.Status.QUEUED).count()
    if queued + adding > settings.QUEUE_MAX_DEPTH:
        raise ServiceError(
            "queue_full",
            f"The queue is full ({queued} runs waiting, QUEUE_MAX_DEPTH={settings.QUEUE_MAX_DEPTH}); try again later.",
            status_code=429,
            headers={"Retry-After": "30"},
        )


def run_submit(*, spec: dict, query: str | None = None, batch: Batch | None = None, enqueue: bool = True) -> Run:
    """Persist a validated spec as a queued run, publish run-queued, and enqueue it after commit.

    enqueue=False is for callers that execute the run in their own process (the CLI); if they die before
    claiming it, the run stays queued and visible, and can be cancelled.
    """
    _check_queue_room(1)
    with transaction.atomic():
        run = Run.objects.create(kind=spec["kind"], url=spec["url"], spec=spec, query=query, batch=batch)
        events.event_run_queued(run)
        if enqueue:
            _enqueue(run)
    return run


def batch_submit(*, specs: list[dict]) -> tuple[Batch, list[Run]]:
    """Persist validated specs as one batch of queued runs in one transaction, then enqueue them all."""
    _check_queue_room(len(specs))
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
    """Write one step (and its screenshot) of the attempt that owns the run; False if it no longer does.

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
    written: Path | None = None
    if screenshot is not None:
        # Written aside first and put in place only while this attempt holds the lease (the renewal's row lock is
        # held until the transaction ends): an attempt that lost its lease never overwrites the new one's picture.
        folder = screenshot_dir(run.pk)
        folder.mkdir(parents=True, exist_ok=True)
        written = folder / f".{index}.attempt-{run.attempts}.tmp"
        written.write_bytes(screenshot)
    with transaction.atomic():
        if not run.renew_lease(lease_seconds=settings.RUN_LEASE_SECONDS):
            if written is not None:
                written.unlink(missing_ok=True)
            return False
        if written is not None:
            os.replace(written, written.parent / screenshot_name)
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
    """Record the outcome; a successful saved-query replay also records its drift from the previous success."""
    with transaction.atomic():
        drift = None
        if run.query and not error:
            # Only replays of this query: a deleted query's runs keep the name a new query may take.
            saved = SavedQuery.objects.filter(name=run.query).values_list("created_at", flat=True).first()
            previous = (
                Run.objects.filter(
                    query=run.query, status=Run.Status.SUCCEEDED, created_at__gte=saved or run.created_at
                )
                .exclude(pk=run.pk)
                .order_by("-finished_at")
                .first()
            )
            if previous is not None:
                drift = {"comparedWith": str(previous.pk), **result_drift(previous.result, result)}
        if not run.finish(result=result, error=error, usage=usage, drift=drift):
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


# Synchronous fetch: how engine failures map to HTTP statuses (anything else is the remote side's fault: 502).
FETCH_ERROR_STATUS = {
    "timeout": 504,
    "url_not_allowed": 400,
    "unknown_profile": 400,
    "invalid_storage_state": 400,
    "busy": 429,
}
BUSY_RETRY_AFTER_S = 5


def page_fetch(
    *,
    url: str,
    main_content: bool = True,
    render: str = "auto",
    timeout_ms: int = 30_000,
    wait_for: str | None = None,
    profile: str | None = None,
    storage_state: str | None = None,
) -> dict:
    """Fetch a page as Markdown now, without a run: plain HTTP in this thread, Chromium on the process's browser
    thread when render asks for it (or auto finds a JavaScript shell). The result says which was used."""
    try:
        spec = FetchSpec(
            url=url,
            options=FetchOptions(main_content=main_content, timeout_ms=timeout_ms, wait_for=wait_for, render=render),
            storage_state_path=storage_state_path({"profile": profile, "storageStatePath": storage_state}),
            network=network_policy(),
        )
        browser = shared_browser_thread(settings.BROWSER_EXECUTABLE, settings.BROWSER_ARGS, settings.BROWSER_SANDBOX)
        result = fetch(spec, NullRecorder(), browser.browser, in_browser_thread=browser.call)
    except EngineError as error:
        retry = {"Retry-After": str(BUSY_RETRY_AFTER_S)} if error.code == "busy" else None
        raise ServiceError(
            error.code, error.message, status_code=FETCH_ERROR_STATUS.get(error.code, 502), headers=retry
        ) from None
    return result.to_dict()


def run_wait(*, run: Run, timeout_s: float, poll_s: float = 0.05) -> Run:
    """The run once it is final, or as it is when timeout_s has passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        run.refresh_from_db()
        if run.is_final or time.monotonic() >= deadline:
            return run
        time.sleep(poll_s)


def page_fetch_persisted(*, spec: dict) -> dict:
    """A fetch kept as a run: queued for the workers like any run, answered when it finishes."""
    run = run_submit(spec=spec)
    run = run_wait(run=run, timeout_s=spec["options"]["timeoutMs"] / 1000 + 60)
    kept = {"runId": str(run.pk)}  # a failure is kept too: its answer says which run holds the trace
    if not run.is_final:
        raise ServiceError(
            "timeout",
            f"The run {run.pk} did not finish in time; follow it at /api/runs/{run.pk}.",
            status_code=504,
            extra=kept,
        )
    if run.status != Run.Status.SUCCEEDED:
        error = run.error or {"code": "cancelled", "message": "The run was cancelled."}
        raise ServiceError(
            error["code"], error["message"], status_code=FETCH_ERROR_STATUS.get(error["code"], 502), extra=kept
        )
    return {**run.result, **kept}


def web_search(
    *,
    query: str,
    limit: int = 10,
    categories: str | None = None,
    language: str | None = None,
    time_range: str | None = None,
    fetch_pages: bool = False,
    main_content: bool = True,
) -> list[dict]:
    """Search with SearXNG; with fetch_pages, every hit also gets its page as Markdown (or why it could not)."""
    if not settings.SEARXNG_URL:
        raise ServiceError(
            "search_not_configured",
            "Search needs a SearXNG instance: set SEARXNG_URL (for example http://127.0.0.1:8888) and enable its "
            "json format.",
            status_code=503,
        )
    try:
        hits = searxng_search(
            settings.SEARXNG_URL,
            query,
            limit=limit,
            categories=categories,
            language=language,
            time_range=time_range,
        )
    except EngineError as error:
        status = 400 if error.code == "search_rejected" else 502
        raise ServiceError(error.code, error.message, status_code=status) from None
    results = [hit.to_dict() for hit in hits]
    if fetch_pages and results:

        def with_page(result: dict) -> dict:
            try:
                page = page_fetch(url=result["url"], main_content=main_content)
            except ServiceError as error:
                return {**result, "error": {"code": error.error_code, "message": str(error.detail)}}
            return {**result, "markdown": page["markdown"]}

        with ThreadPoolExecutor(max_workers=min(SEARCH_FETCH_PARALLEL, len(results))) as pool:
            results = list(pool.map(with_page, results))
    return results
