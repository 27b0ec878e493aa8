"""Scale-out: two web processes (daphne) and two worker processes on one PostgreSQL, Redis for wake-ups,
shared storage for the data directory. Events of runs submitted through one web process reach a WebSocket client
of the other; no run executes twice. And QUEUE_POLL_SECONDS sets how often a worker cluster polls the queue
(counted on PostgreSQL, whose statistics count every poll of the queue table)."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections import Counter

import psycopg
import pytest
from websockets.sync.client import connect

from service.processes import stop_when_parent_dies
from tests.live import (
    KEY,
    REDIS_URL,
    ROOT,
    LiveService,
    ScratchPostgres,
    postgres_available,
    redis_available,
)

pytestmark = pytest.mark.live
RUNS = 12


@pytest.mark.skipif(
    not (postgres_available() and redis_available()), reason="needs PostgreSQL on :5432 and Redis on :6379"
)
def test_two_web_and_two_worker_processes_share_the_work_and_the_stream(tmp_path, site):
    with ScratchPostgres() as database:
        # The production lease: the test helper's 4 s lease can lapse on a loaded 2-core machine, and a lapsed
        # lease is a (correct) retry, which is not what this test is about.
        common = {"DATABASE_URL": database.url, "REDIS_URL": REDIS_URL, "WORKERS": "1", "RUN_LEASE_SECONDS": "20"}
        web1 = LiveService(tmp_path, **common).start()  # migrates first; the second finds nothing to do
        web2 = LiveService(tmp_path, **common).start()
        try:
            with connect(web1.events_url, additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
                submitted = [
                    web2.submit({"kind": "fetch", "url": site.url(f"/page/{n}"), "options": {"screenshots": False}})
                    for n in range(RUNS)
                ]
                ids = {run["id"] for run in submitted}
                frames: list[dict] = []
                finished: set[str] = set()
                deadline = time.monotonic() + 120
                while finished != ids and time.monotonic() < deadline:
                    frame = json.loads(ws.recv(timeout=60))
                    frames.append(frame)
                    if frame["type"] == "run-finished":
                        finished.add(frame["runId"])
            assert finished == ids
            starts = Counter(frame["runId"] for frame in frames if frame["type"] == "run-started")
            assert starts == dict.fromkeys(ids, 1), frames  # every run started once: none executed twice
            event_ids = [frame["eventId"] for frame in frames]
            assert event_ids == sorted(set(event_ids)), frames  # in order, no duplicates
            for run_id in ids:
                run = web1.get(f"/api/runs/{run_id}").json()
                assert (run["status"], run["attempts"], run["stepCount"]) == ("succeeded", 1, 2), run
            with psycopg.connect(database.url) as db:
                workers = {row[0] for row in db.execute("select worker from runs_run")}
            assert len(workers) == 2  # both worker processes took runs
        finally:
            web2.stop()
            web1.stop()


FAST_POLL, SLOW_POLL = 0.05, 4.0
POLL_WINDOW_SECONDS = 12.0  # how long polls are counted (a measuring window, not a bound)


def queue_scans(database_url: str) -> int:
    """Reads of django-q2's queue table so far: each poll of an empty queue is one."""
    with psycopg.connect(database_url) as db:
        row = db.execute(
            "select coalesce(seq_scan, 0) + coalesce(idx_scan, 0) from pg_stat_user_tables"
            " where relname = 'django_q_ormq'"
        ).fetchone()
    return row[0]


@pytest.mark.skipif(not postgres_available(), reason="needs PostgreSQL on :5432")
def test_queue_poll_seconds_sets_how_often_an_idle_worker_cluster_polls_the_queue(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERVICE_", "DATABASE_URL", "REDIS_URL"))}
    env.update(SERVICE_DATA_DIR=str(tmp_path), WORKERS="1", LOG_LEVEL="WARNING")
    with ScratchPostgres() as fast_db, ScratchPostgres() as slow_db:
        for database in (fast_db, slow_db):
            subprocess.run(
                [sys.executable, "manage.py", "migrate"],
                cwd=ROOT,
                env={**env, "DATABASE_URL": database.url},
                check=True,
                capture_output=True,
            )
        clusters = [
            subprocess.Popen(
                [sys.executable, "manage.py", "work"],
                cwd=ROOT,
                env={**env, "DATABASE_URL": database.url, "QUEUE_POLL_SECONDS": str(poll)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=functools.partial(stop_when_parent_dies, os.getpid()),
            )
            for database, poll in ((fast_db, FAST_POLL), (slow_db, SLOW_POLL))
        ]
        try:
            # A cluster reads the queue table once as it starts (tasks an earlier cluster took are released), then
            # polls it once its processes are up: that can take many seconds on a loaded machine. The window opens
            # once both clusters are seen polling, i.e. their count rose after that first read.
            deadline = time.monotonic() + 120  # only a failure bound: clusters start in seconds
            first = [0, 0]
            while True:
                counts = queue_scans(fast_db.url), queue_scans(slow_db.url)
                first = [f or c for f, c in zip(first, counts, strict=True)]
                if all(f and c > f for f, c in zip(first, counts, strict=True)):
                    break
                assert time.monotonic() < deadline and all(c.poll() is None for c in clusters), "no cluster polled"
                time.sleep(0.2)
            before = counts
            time.sleep(POLL_WINDOW_SECONDS)
            fast, slow = queue_scans(fast_db.url) - before[0], queue_scans(slow_db.url) - before[1]
        finally:
            for cluster in clusters:
                cluster.terminate()
            for cluster in clusters:
                cluster.wait(timeout=60)
    # The slow cluster polls no more often than every SLOW_POLL seconds (one more for where the window falls and
    # one for PostgreSQL's statistics, flushed about once a second); the fast one many times as often.
    assert 1 <= slow <= POLL_WINDOW_SECONDS / SLOW_POLL + 2, (fast, slow)
    assert fast >= 5 * slow, (fast, slow)
    print(f"queue polls in {POLL_WINDOW_SECONDS:g} s: {fast} at QUEUE_POLL_SECONDS={FAST_POLL}, {slow} at {SLOW_POLL}")
