"""Saved queries that replay by themselves, on django-q2's scheduler.

- Each scheduled query has one django-q2 `Schedule` row (func TICK_JOB, args the query's id, so a name never
  matters), written in the same transaction as the query (queries/schedule_rows.py `keep_in_step`). Its `next_run` is
  the next due time.
- `work` calls django-q2's `scheduler()` every SCHEDULE_CHECK_SECONDS (runs/queue.py `run_scheduler`; the cluster's
  own call, every 15 s, is off). For a due row it runs a TICK_JOB task with the due time, then saves the row with the
  next due time, which schedule_rows's `_next_run` computes from the query's rule (queries/schedule.py: cron in a time
  zone, or every N s) rather than django-q2's own (cron in UTC only, whole minutes). The tick runs right there, in
  `work`'s process (django-q2's sync option), so it never waits behind runs for a free worker.
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

from queries.models import SavedQuery
from queries.schedule_rows import forget
from queries.services import query_replay
from runs.models import Run

log = logging.getLogger(__name__)


def replay_on_schedule(query_id: str | int, due: str) -> str:
    """A due time of a query's schedule (django-q2 passes it as `due`): replay the query, once per due time, unless
    a replay of it is still queued or running. Returns what it did: replayed <run id>, skipped, taken or gone."""
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
