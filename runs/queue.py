"""The task queue (django-q2) as runs use it: a run id per task, handed over after the commit that made the run;
how many may wait; tasks a stopped cluster took and never started."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_q.conf import Conf
from django_q.models import OrmQ
from django_q.scheduler import scheduler
from django_q.tasks import async_task

from runs.models import Run
from service.kernel.errors import ServiceError

log = logging.getLogger(__name__)

JOB = "runs.jobs.execute_run"


def enqueue(run: Run) -> None:
    run_id = str(run.pk)
    transaction.on_commit(lambda: async_task(JOB, run_id, task_name=f"run-{run_id}"))


def release_taken_tasks() -> int:
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


def hand_back(run_id: str) -> None:
    """A stopping worker got a run it will not start: queue it again for whichever worker comes next."""
    async_task(JOB, run_id, task_name=f"run-{run_id}")


def enqueue_many(runs: list[Run]) -> None:
    run_ids = [str(run.pk) for run in runs]

    def enqueue() -> None:
        with transaction.atomic():
            for run_id in run_ids:
                async_task(JOB, run_id, task_name=f"run-{run_id}")

    transaction.on_commit(enqueue)


def check_room(adding: int) -> None:
    """QUEUE_MAX_DEPTH queued runs at most: past it, submitters are told to come back later (429). A crawl's pages
    do not count: each is a queued run only between being made and being run, at once, by the crawl's own worker
    (it never waits in the queue)."""
    queued = Run.objects.filter(status=Run.Status.QUEUED, parent__isnull=True).count()
    if queued + adding > settings.QUEUE_MAX_DEPTH:
        raise ServiceError(
            "queue_full",
            f"The queue is full ({queued} runs waiting, QUEUE_MAX_DEPTH={settings.QUEUE_MAX_DEPTH}); try again later.",
            status_code=429,
            headers={"Retry-After": "30"},
        )


def run_scheduler(keep_going: Callable[[], bool]) -> None:
    """`work`'s loop, every SCHEDULE_CHECK_SECONDS while keep_going() holds: django-q2's scheduler (it runs the task of
    every due Schedule row, such as a saved query's replay, queries/scheduling.py), and the webhook deliveries that
    are due again (runs/webhooks.py)."""
    from runs import webhooks

    while keep_going():
        try:
            scheduler()
            webhooks.sweep()
        except Exception:  # the database may be briefly unavailable; look again next time
            log.exception("scheduler: due schedules or deliveries could not be read")
        time.sleep(settings.SCHEDULE_CHECK_SECONDS)
