"""Saved queries that replay by themselves, on django-q2's scheduler.

- Each scheduled query has one django-q2 `Schedule` row (func TICK_JOB, args the query's id, so a name never
  matters), written in the same transaction as the query (`keep_in_step`). Its `next_run` is the next due time.
- `work` calls django-q2's `scheduler()` every SCHEDULE_CHECK_SECONDS (runs/queue.py `run_scheduler`; the cluster's
  own call, every 15 s, is off). For a due row it runs a TICK_JOB task with the due time, then saves the row with the
  next due time, which `_next_run` computes from the query's rule (queries/schedule.py: cron in a time zone, or every
  N s) rather than django-q2's own (cron in UTC only, whole minutes). The tick runs right there, in `work`'s process
  (django-q2's sync option), so it never waits behind runs for a free worker.
- The tick (`replay_on_schedule`) takes its due time once (several `work` processes may fire the same row), then
  replays the query unless a replay of it is still queued or running: that tick is skipped and counted.

A schedule survives restarts (the rows are in the database). Due times missed while nothing ran are not replayed in
a burst: the first look after a restart fires the row once, and the next due time is the first one after now.
"""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction
from django.db.models import F
from django.db.models.signals import pre_save
from django.utils import timezone
from django_q.models import Schedule

from queries.models import SavedQuery
from queries.schedule import next_due
from runs.models import Run

log = logging.getLogger(__name__)

TICK_JOB = "queries.scheduling.replay_on_schedule"


def keep_in_step(query: SavedQuery) -> None:
    """The query's Schedule row as its `schedule` says: written with the next due time, or deleted."""
    rows = Schedule.objects.filter(func=TICK_JOB, args=str(query.pk))
    if not query.schedule:
        rows.delete()
        return
    row = rows.first() or Schedule(func=TICK_JOB, args=str(query.pk), intended_date_kwarg="due")
    # The tick runs in the scheduler's own process (django-q2's sync option), not as a task behind the runs that
    # keep every worker busy: it only queues a replay.
    row.kwargs = repr({"q_options": {"sync": True}})
    row.name = f"saved query {query.name}"[:100]
    row.schedule_type = Schedule.CRON if "cron" in query.schedule else Schedule.MINUTES
    row.cron = query.schedule.get("cron")
    row.minutes = None if "cron" in query.schedule else max(1, query.schedule["everySeconds"] // 60)
    row.repeats = -1
    row.save()  # django-q2 sets a new cron row's next_run itself, in UTC: ours follows
    Schedule.objects.filter(pk=row.pk).update(next_run=next_due(query.schedule, after=timezone.now()))


def next_run_at(query: SavedQuery) -> datetime | None:
    if not query.schedule:
        return None
    return Schedule.objects.filter(func=TICK_JOB, args=str(query.pk)).values_list("next_run", flat=True).first()


def forget(query_id: int) -> None:
    Schedule.objects.filter(func=TICK_JOB, args=str(query_id)).delete()


def _next_run(sender, instance: Schedule, **_) -> None:
    """django-q2's scheduler has just fired the row and set its own next time: ours replaces it (the rule's first due
    time after now, keeping the beat of the one that fired)."""
    if instance.func != TICK_JOB or instance.pk is None:
        return
    before = Schedule.objects.filter(pk=instance.pk).values("next_run", "task").first()
    if before is None or not instance.task or before["task"] == instance.task:
        return  # not a firing: keep_in_step writes its own time
    query = SavedQuery.objects.filter(pk=int(instance.args)).only("schedule").first()
    if query is None or not query.schedule:
        return
    instance.next_run = next_due(query.schedule, after=timezone.now(), previous=before["next_run"])


def connect() -> None:
    """At start (QueriesConfig.ready), in every process: whichever scheduler fires a row computes its next time."""
    pre_save.connect(_next_run, sender=Schedule, dispatch_uid="queries.scheduling.next_run")


def replay_on_schedule(query_id: str | int, due: str) -> str:
    """A due time of a query's schedule (django-q2 passes it as `due`): replay the query, once per due time, unless
    a replay of it is still queued or running. Returns what it did: replayed <run id>, skipped, taken or gone."""
    from queries.services import query_replay

    due_at = datetime.fromisoformat(due)
    with transaction.atomic():
        taken = (
            SavedQuery.objects.filter(pk=int(query_id), schedule__isnull=False)
            .exclude(schedule_tick=due_at)
            .update(schedule_tick=due_at)
        )
        if not taken:
            if SavedQuery.objects.filter(pk=int(query_id), schedule__isnull=False).exists():
                return "taken"  # another tick task of the same due time
            # The query or its schedule went without its row (deleted from a shell, say): the row goes too, rather
            # than fire for nothing for ever.
            forget(query_id)
            log.info("saved query %s: gone or no longer scheduled, its schedule row deleted", query_id)
            return "gone"
        query = SavedQuery.objects.get(pk=int(query_id))
        if Run.objects.filter(query=query.name, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).exists():
            SavedQuery.objects.filter(pk=query.pk).update(skipped_ticks=F("skipped_ticks") + 1)
            log.info("saved query %s: due at %s, skipped (a replay is still queued or running)", query.name, due)
            return "skipped"
        run = query_replay(query=query, overrides={})
    log.info("saved query %s: due at %s, replay %s queued", query.name, due, run.pk)
    return f"replayed {run.pk}"
