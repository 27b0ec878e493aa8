"""RUN_REAP_INTERVAL_SECONDS has the effect the README gives it: a `manage.py reap --loop` (the reaper of the split
topology; `serve` runs the same loop) looks for expired leases that often, no more.

No wall-clock bound is guessed: the short-interval reaper's own passes measure a window, and the long-interval
reaper must not have re-queued anything within several such windows."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from runs.models import Run
from tests.live import ROOT

pytestmark = pytest.mark.django_db(transaction=True)
SHORT_INTERVAL = "0.2"
LONG_INTERVAL = "600"  # the largest value the setting takes
PASSES = 3
# Only a failure bound: on a working reaper the condition holds after one interval.
GENEROUS_SECONDS = 60


def database_url() -> str:
    """The test database, so that the reaper process and this test see the same rows."""
    settings = connection.settings_dict
    if connection.vendor == "postgresql":
        host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432
        return f"postgresql://{settings['USER']}@{host}:{port}/{settings['NAME']}"
    return f"sqlite:///{settings['NAME']}"


def start_reaper(data_dir, interval: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SERVICE_", "DATABASE_URL", "REDIS_URL"))}
    env.update(
        SERVICE_DATA_DIR=str(data_dir),
        DATABASE_URL=database_url(),
        RUN_REAP_INTERVAL_SECONDS=interval,
        LOG_LEVEL="ERROR",
    )
    return subprocess.Popen([sys.executable, "manage.py", "reap", "--loop"], cwd=ROOT, env=env)


def expired_run() -> Run:
    """A run whose worker died: running, lease already expired."""
    return Run.objects.create(
        kind="fetch",
        url="https://example.com/",
        spec={"kind": "fetch", "url": "https://example.com/"},
        status="running",
        attempts=1,
        worker="gone:1",
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )


def wait_requeued(run: Run, reaper: subprocess.Popen) -> None:
    deadline = time.monotonic() + GENEROUS_SECONDS
    while Run.objects.get(pk=run.pk).status != "queued":
        assert reaper.poll() is None, f"the reaper exited with {reaper.returncode}"
        assert time.monotonic() < deadline, "the reaper never re-queued an expired run"
        time.sleep(0.02)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(timeout=30)


def test_a_long_reap_interval_leaves_an_expired_lease_alone_while_a_short_one_requeues_it(data_dir):
    # The short interval: time PASSES re-queues of leases that expired one after another.
    short = start_reaper(data_dir, SHORT_INTERVAL)
    try:
        wait_requeued(expired_run(), short)  # it is up and reaping
        started = time.monotonic()
        for _ in range(PASSES):
            wait_requeued(expired_run(), short)
        window = time.monotonic() - started
    finally:
        stop(short)

    # The long interval: the pass at start re-queues what had expired before, then nothing for the interval.
    early = expired_run()
    long = start_reaper(data_dir, LONG_INTERVAL)
    try:
        wait_requeued(early, long)
        late = expired_run()
        time.sleep(2 * window)  # twice as long as the short reaper needed for PASSES passes
        assert Run.objects.get(pk=late.pk).status == "running"
        assert long.poll() is None  # still looping, only not yet looking again
    finally:
        stop(long)
