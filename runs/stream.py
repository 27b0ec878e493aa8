"""Reading the event outbox for the live stream (DESIGN.md section 5); no ASGI here, only queries."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Max, Min
from django.utils import timezone

from runs.models import Delivery, Event

BATCH = 500


def latest_event_id() -> int:
    return Event.objects.aggregate(latest=Max("id"))["latest"] or 0


def oldest_event_id() -> int | None:
    return Event.objects.aggregate(oldest=Min("id"))["oldest"]


@dataclass
class GapGuard:
    """Holds the cursor back at a hole in the id sequence for a moment (PostgreSQL only).

    PostgreSQL hands out ids at insert and transactions commit in any order, so event 11 can be visible
    before event 10. A reader that jumped past 10 would never send it. SQLite writers are serialised
    (BEGIN IMMEDIATE), so there ids become visible in order and no guard is needed. A hole that stays open
    longer than `patience` seconds is a rolled-back insert and is skipped.
    """

    patience: float = 2.0
    first_seen: dict[int, float] = field(default_factory=dict)

    def visible_bound(self, cursor: int, ids: list[int]) -> int:
        """The highest id up to which every event is known to be committed. Holes below it are forgotten:
        first_seen holds only the one the reader waits at, so a reader can tell "waiting at a hole" from "caught
        up" (a hole skipped long ago made a connection's catch-up poll forever, its batches unread)."""
        bound = cursor
        now = time.monotonic()
        for event_id in ids:
            if event_id != bound + 1:
                seen = self.first_seen.setdefault(bound + 1, now)
                if now - seen < self.patience:
                    break
            bound = event_id
        if self.first_seen:
            self.first_seen = {hole: seen for hole, seen in self.first_seen.items() if hole > bound}
        return bound


def read_events(*, cursor: int, run_id: str | None, guard: GapGuard | None) -> tuple[list[dict], int]:
    """Frames of the events after `cursor` (at most BATCH ids scanned), and the new cursor.

    The cursor moves over every scanned id, also those of other runs when the stream is filtered by run.
    """
    ids = list(Event.objects.after(cursor).values_list("id", flat=True)[:BATCH])
    if not ids:
        return [], cursor
    bound = guard.visible_bound(cursor, ids) if guard is not None else ids[-1]
    if bound == cursor:
        return [], cursor
    events = Event.objects.filter(id__gt=cursor, id__lte=bound).order_by("id")
    if run_id:
        events = events.filter(run_id=run_id)
    return [event.frame() for event in events], bound


def needs_gap_guard() -> bool:
    return connection.vendor == "postgresql"


def prune_events() -> int:
    """Delete events older than EVENT_RETENTION_HOURS, and the webhook deliveries that ended before then (with their
    attempts); returns how many events went."""
    cutoff = timezone.now() - timedelta(hours=settings.EVENT_RETENTION_HOURS)
    deleted, _ = Event.objects.filter(at__lt=cutoff).delete()
    Delivery.objects.filter(status__in=Delivery.ENDED, finished_at__lt=cutoff).delete()
    return deleted
