"""README, Scale-out: daphne alone, `manage.py work` and `manage.py reap --loop` as separate processes on one
database (the embedded SQLite default here; PostgreSQL in make test's second pass). A run submitted to daphne is
executed by the separate worker; a killed worker's run is re-queued by the separate reaper, and by nothing else."""

from __future__ import annotations

import functools
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import requests

from service.processes import stop_when_parent_dies
from tests.live import ROOT, SHORT_LEASE_REAP_INTERVAL_SECONDS, SHORT_LEASE_SECONDS, LiveService

pytestmark = pytest.mark.live
# Only failure bounds: a working build gets there in a few seconds.
GENEROUS_SECONDS = 120


def ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1:
        stat = (Path("/proc") / str(pid) / "stat").read_text()
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        chain.append(pid)
    return chain


class SplitTopology:
    """The README's commands, each in a process of its own: migrate once, then daphne, work and reap --loop."""

    def __init__(self, tmp_path: Path):
        # LiveService for its environment and HTTP helpers only; `serve` is never started. A short lease (and the
        # reaper interval that goes with it): this test kills a worker and waits for its lease to lapse.
        self.live = LiveService(tmp_path, lease_seconds=SHORT_LEASE_SECONDS, WORKERS="1")
        self.processes: dict[str, subprocess.Popen] = {}
        self.log = (tmp_path / "split.log").open("ab")

    def command(self, name: str, *args: str) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env=self.live.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            preexec_fn=functools.partial(stop_when_parent_dies, os.getpid()),
        )
        self.processes[name] = process
        return process

    def start(self) -> SplitTopology:
        if self.live.scratch is not None:
            self.live.scratch.__enter__()
        subprocess.run(
            [sys.executable, "manage.py", "migrate"], cwd=ROOT, env=self.live.env, check=True, stdout=self.log
        )
        self.command("daphne", "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.live.port), "service.asgi:application")
        self.command("work", "manage.py", "work")
        self.command("reap", "manage.py", "reap", "--loop")
        deadline = time.monotonic() + GENEROUS_SECONDS
        while True:
            assert all(p.poll() is None for p in self.processes.values()), self.live.log_path.parent / "split.log"
            assert time.monotonic() < deadline, "the split topology never became healthy"
            try:
                if requests.get(self.live.base_url + "/api/health", timeout=1).json()["workers"] >= 1:
                    return self
            except (requests.ConnectionError, requests.Timeout, ValueError):
                pass
            time.sleep(0.2)

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)  # a paused reaper must be able to stop
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.log.close()
        if self.live.scratch is not None:
            self.live.scratch.__exit__(None, None, None)

    def lease_expired(self, run_id: str) -> bool:
        database_url = self.live.env.get("DATABASE_URL")
        if database_url:
            import psycopg

            with psycopg.connect(database_url) as db:
                (lease,) = db.execute("select lease_expires_at from runs_run where id = %s", (run_id,)).fetchone()
            return lease < datetime.now(UTC)
        with sqlite3.connect(self.live.data_dir / "db.sqlite3") as db:
            (lease,) = db.execute(
                "select lease_expires_at from runs_run where id = ?", (run_id.replace("-", ""),)
            ).fetchone()
        return datetime.fromisoformat(lease).replace(tzinfo=UTC) < datetime.now(UTC)


@pytest.fixture
def split(tmp_path):
    topology = SplitTopology(tmp_path).start()
    yield topology
    topology.stop()


def test_daphne_alone_takes_runs_the_separate_worker_executes_and_the_separate_reaper_requeues(split, site):
    live, processes = split.live, split.processes
    run = live.wait(live.submit({"kind": "fetch", "url": site.url("/static")})["id"], timeout=GENEROUS_SECONDS)
    assert (run["status"], run["attempts"], run["result"]["title"]) == ("succeeded", 1, "Flood at the mill"), run
    executed_by = live.worker_pid(run["id"])
    assert processes["work"].pid in ancestors(executed_by)  # a process of `manage.py work`, not of daphne

    slow = live.submit({"kind": "fetch", "url": site.url("/slow?ms=4000")})
    live.wait(slow["id"], statuses=("running",), timeout=GENEROUS_SECONDS)
    processes["reap"].send_signal(signal.SIGSTOP)  # the reaper pauses: nothing else may re-queue the run
    os.kill(live.worker_pid(slow["id"]), signal.SIGKILL)
    deadline = time.monotonic() + GENEROUS_SECONDS
    while not split.lease_expired(slow["id"]):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(4 * SHORT_LEASE_REAP_INTERVAL_SECONDS)  # four reaper intervals: daphne and work leave it alone
    assert live.get(f"/api/runs/{slow['id']}").json()["status"] == "running"
    processes["reap"].send_signal(signal.SIGCONT)
    finished = live.wait(slow["id"], timeout=GENEROUS_SECONDS)
    assert (finished["status"], finished["attempts"]) == ("succeeded", 2), finished
    assert processes["work"].pid in ancestors(live.worker_pid(slow["id"]))
