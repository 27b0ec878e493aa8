"""SIGTERM to `manage.py serve` while runs are running and queued: it stops within its grace period, loses nothing,
and the next start finishes every run exactly once. SIGKILL to serve: its children stop on their own."""

from __future__ import annotations

import json
import signal
import time

import pytest
import requests
from websockets.sync.client import connect

from tests.live import KEY, SHORT_LEASE_SECONDS, LiveService, chromium_pids, service_pids

pytestmark = pytest.mark.live
GRACE = 4  # serve --grace
# README: on SIGTERM "running runs get --grace seconds ... to finish ... Whatever still runs when the grace period
# ends is killed". Past the grace period serve still kills its workers and the interpreters tear down, which takes a
# few seconds on a loaded 2-core machine.
STOP_MARGIN_SECONDS = 8


def finished_events(service: LiveService, run_ids: list[str]) -> dict[str, int]:
    """How many run-finished events each run has in the stream's history."""
    counts = dict.fromkeys(run_ids, 0)
    with connect(f"{service.events_url}?after=0", additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
        while True:
            try:
                frame = json.loads(ws.recv(timeout=2))
            except TimeoutError:
                return counts
            if frame["type"] == "run-finished" and frame["runId"] in counts:
                counts[frame["runId"]] += 1


def test_sigterm_during_runs_loses_nothing_and_a_restart_finishes_them(tmp_path, site):
    # The run cut off at the end of the grace period is re-queued once its lease expires: a short lease to wait out.
    first = LiveService(tmp_path, grace=GRACE, WORKERS="2", lease_seconds=SHORT_LEASE_SECONDS).start()
    outlives_grace = first.submit({"kind": "fetch", "url": site.url("/slow?ms=7000")})["id"]
    finishes_in_grace = first.submit({"kind": "fetch", "url": site.url("/slow?ms=1500")})["id"]
    waiting = [first.submit({"kind": "fetch", "url": site.url(f"/slow?ms=500&n={n}")})["id"] for n in range(6)]
    for run_id in (outlives_grace, finishes_in_grace):
        first.wait(run_id, statuses=("running",), timeout=30)
    deadline = time.monotonic() + 15
    while not chromium_pids(first.marker) and time.monotonic() < deadline:  # runs are claimed before the browser starts
        time.sleep(0.1)
    assert chromium_pids(first.marker)

    took = first.stop(signal.SIGTERM)
    assert first.process.returncode == 0, first.log_path.read_text()[-3000:]
    log = first.log_path.read_text()
    assert f"workers did not stop within {GRACE}s; killing it" in log  # the 7 s run
    assert took < GRACE + STOP_MARGIN_SECONDS, log[-3000:]
    assert chromium_pids(first.marker) == []
    with pytest.raises(requests.ConnectionError):
        requests.get(first.base_url + "/api/health", timeout=2)

    second = LiveService(tmp_path, WORKERS="2", lease_seconds=SHORT_LEASE_SECONDS).start()
    try:
        # Runs a stopping worker had prefetched but not started were put back on the queue, not left locked in it
        # until the queue's retry time (RUN_TIMEOUT_MAX_MS + 90 s, 390 s, far past these waits): they run as soon
        # as the service is back.
        after_restart = [second.wait(run_id, timeout=60) for run_id in waiting]
        # The run cut off at the grace period is re-queued when its lease expires, and runs again from the start.
        cut_off = second.wait(outlives_grace, timeout=60)
        # The short one finished within the grace period (or, on a slow machine, was cut off and re-queued too).
        short = second.wait(finishes_in_grace, timeout=60)
        runs = [cut_off, short, *after_restart]
        assert [run["status"] for run in runs] == ["succeeded"] * 8, [run["error"] for run in runs]
        assert cut_off["attempts"] == 2 and short["attempts"] in (1, 2)
        assert [run["attempts"] for run in after_restart] == [1] * 6  # never started before the stop
        assert all([step["action"] for step in run["steps"]] == ["navigate", "snapshot"] for run in runs)
        assert set(finished_events(second, [run["id"] for run in runs]).values()) == {1}
    finally:
        second.stop()


def test_a_killed_serve_takes_its_children_with_it(tmp_path, site):
    first = LiveService(tmp_path, WORKERS="1").start()
    first.wait(first.submit({"kind": "fetch", "url": site.url("/static")})["id"])
    processes = service_pids(tmp_path)
    assert chromium_pids(first.marker) and len(processes) > 4  # serve, daphne, work, its worker, Chromium…

    first.process.kill()
    first.process.wait()
    deadline = time.monotonic() + 30
    while service_pids(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert service_pids(tmp_path) == [], "daphne, the workers or Chromium outlived a SIGKILLed serve"
    first.stop()

    # Nothing holds the port or the queue: a new serve on the same port and data directory takes work at once.
    second = LiveService(tmp_path, WORKERS="1")
    second.port = first.port
    second.env["SERVICE_PORT"] = str(first.port)
    second.start()
    try:
        run = second.submit({"kind": "fetch", "url": site.url("/static")})
        assert second.wait(run["id"])["status"] == "succeeded"
    finally:
        second.stop()
