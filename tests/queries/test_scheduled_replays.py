"""Scheduled replays on a live service (`serve`, its workers and django-q2's scheduler): on time, never two of a query
at once (a due time while one runs is skipped and counted), and no burst of missed ones after a restart."""

from __future__ import annotations

import datetime as dt
import itertools
import sqlite3
import time

import pytest

from tests.live import LiveService

pytestmark = pytest.mark.live

SCHEMA = {"type": "object", "properties": {"title": {"type": ["string", "null"], "x-selector": "h1"}}}
# A few-seconds schedule needs a lower minimum, and a scheduler that looks often.
FAST = {"SCHEDULE_MIN_SECONDS": "1", "SCHEDULE_CHECK_SECONDS": "0.2", "WORKERS": "2"}


def created_times(service: LiveService, query: str) -> list[dt.datetime]:
    runs = service.get(f"/api/runs?query={query}&limit=500").json()["results"]
    return sorted(dt.datetime.fromisoformat(run["createdAt"]) for run in runs)


def wait_for_runs(service: LiveService, query: str, count: int, timeout: float) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = service.get(f"/api/runs?query={query}&limit=500").json()["results"]
        if len(runs) >= count:
            return runs
        time.sleep(0.2)
    raise AssertionError(f"{query}: {len(runs)} replays after {timeout} s, expected {count}")


def test_replays_come_on_time_and_never_two_at_once(tmp_path, site):
    service = LiveService(tmp_path, **FAST).start()
    try:
        quick = {"name": "quick", "url": site.url("/static"), "schema": SCHEMA, "schedule": {"everySeconds": 2}}
        # A page that takes 3 s, on a 1 s schedule: most due times find a replay still running.
        slow = {"name": "slow", "url": site.url("/slow?ms=3000"), "schema": SCHEMA, "schedule": {"everySeconds": 1}}
        for body in (quick, slow):
            assert service.post("/api/queries", body).status_code == 201
        # On time: each replay of the quick query queued within a second of the due time it replays (read from
        # nextRunAt as it moves; the scheduler looks every 0.2 s). A due time while the one before still runs, such
        # as the first with the browser starting, is skipped.
        dues: set[dt.datetime] = set()
        deadline = time.monotonic() + 40
        while len(times := created_times(service, "quick")) < 6:
            assert time.monotonic() < deadline, times
            if next_run := service.get("/api/queries/quick").json()["nextRunAt"]:
                dues.add(dt.datetime.fromisoformat(next_run))
            time.sleep(0.25)
        late = [(when - max(due for due in dues if due <= when)).total_seconds() for when in times[1:]]
        assert all(0 <= seconds <= 1.0 for seconds in late), late

        slow_runs = wait_for_runs(service, "slow", 3, timeout=30)
        done = [service.wait(run["id"], timeout=30) for run in slow_runs]
        spans = sorted(
            (dt.datetime.fromisoformat(run["createdAt"]), dt.datetime.fromisoformat(run["finishedAt"])) for run in done
        )
        # Never two at once: each replay was queued after the one before it had finished.
        for (_, finished), (queued, _) in itertools.pairwise(spans):
            assert queued >= finished, spans
        assert all(run["status"] == "succeeded" for run in done), [run["error"] for run in done]
        assert service.get("/api/queries/slow").json()["skippedTicks"] >= 2
    finally:
        service.stop()


def test_a_restart_replays_missed_due_times_once_not_in_a_burst(tmp_path, site):
    service = LiveService(tmp_path, **FAST).start()
    body = {"name": "beat", "url": site.url("/static"), "schema": SCHEMA, "schedule": {"everySeconds": 1}}
    try:
        assert service.post("/api/queries", body).status_code == 201
        wait_for_runs(service, "beat", 2, timeout=20)
    finally:
        service.stop()
    stopped = dt.datetime.now(dt.UTC)
    with sqlite3.connect(tmp_path / "db.sqlite3") as db:  # nothing ticks while the service is down
        (skipped_before,) = db.execute("SELECT skipped_ticks FROM queries_savedquery WHERE name = 'beat'").fetchone()
    time.sleep(8)  # eight due times pass while nothing runs
    starting = time.monotonic()
    restarted = LiveService(tmp_path, **FAST).start()
    try:
        time.sleep(3)
        replays = [when for when in created_times(restarted, "beat") if when >= stopped]
        skipped = restarted.get("/api/queries/beat").json()["skippedTicks"] - skipped_before
        up = time.monotonic() - starting  # longer than 3 s when the machine is busy: the service starts slowly
        # One catch-up, then the beat (one due time a second since the restart began), each replayed or skipped: the
        # eight missed ones fired at once would be eight more.
        assert replays, "no replay after the restart"
        assert len(replays) + skipped <= 2 + up, (replays, skipped, up)
        assert restarted.get("/api/queries/beat").json()["nextRunAt"] is not None
    finally:
        restarted.stop()
