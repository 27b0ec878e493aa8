"""Scale-out: two web processes (daphne) and two worker processes on one PostgreSQL, Redis for wake-ups,
shared storage for the data directory. Events of runs submitted through one web process reach a WebSocket client
of the other; no run executes twice."""

from __future__ import annotations

import json
import time
from collections import Counter

import psycopg
import pytest
from websockets.sync.client import connect

from tests.live import KEY, REDIS_URL, LiveService, ScratchPostgres, postgres_available, redis_available

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
