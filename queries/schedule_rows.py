"""A saved query's row in django-q2's Schedule table: written, read and deleted with the query, and its next due time
kept by the query's own rule (queries/schedule.py) when django-q2's scheduler fires it. What a firing does is
queries/scheduling.py's (TICK_JOB)."""

from __future__ import annotations

from datetime import datetime

from django.db.models.signals import pre_save
from django.utils import timezone
from django_q.models import Schedule

from queries.models import SavedQuery
from queries.schedule import next_due

TICK_JOB = "queries.scheduling.replay_on_schedule"  # the task a row runs: the path is stored in every row


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
