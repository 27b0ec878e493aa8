"""Worker death, over and over: SIGKILL the worker holding a run, N times in a row (issue: reliability).

    .venv/bin/python -m tests.bench.worker_death [--kills 20]

Each round submits a fetch of a slow page, waits until it runs, kills its worker process, and waits for the run to
end: it must succeed exactly once (one run-finished event, attempts 2, one clean trace). Afterwards: Chromium
processes left by killed workers are counted, the cluster must still take work, and a run whose worker is killed on
every attempt must be failed after RUN_MAX_ATTEMPTS with worker_lost instead of being retried forever.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

from websockets.sync.client import connect

from tests.bench.goals import Result, print_table, rows
from tests.live import KEY, SHORT_LEASE_SECONDS, LiveService, chromium_pids
from tests.site import TestSite


def kill_worker(service: LiveService, run_id: str) -> None:
    service.wait(run_id, statuses=("running", "succeeded", "failed", "cancelled"))
    if service.get(f"/api/runs/{run_id}").json()["status"] != "running":
        return
    os.kill(service.worker_pid(run_id), signal.SIGKILL)


def measure(kills: int) -> dict[str, int]:
    killed: list[str] = []
    not_good: set[str] = set()  # not succeeded after exactly 2 attempts with one clean trace
    with TestSite() as site, tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(Path(data_dir), lease_seconds=SHORT_LEASE_SECONDS, RUN_MAX_ATTEMPTS="3").start()
        try:
            finished_events: dict[str, int] = {}
            ok = 0
            started = time.monotonic()
            frames: list[dict] = []
            stop = threading.Event()

            def listen() -> None:
                with connect(service.events_url, additional_headers={"Authorization": f"Bearer {KEY}"}) as ws:
                    while not stop.is_set():
                        try:
                            frames.append(json.loads(ws.recv(timeout=0.5)))
                        except TimeoutError:
                            continue

            listener = threading.Thread(target=listen, daemon=True)
            listener.start()
            time.sleep(0.5)
            for n in range(kills):
                run_id = service.submit({"kind": "fetch", "url": site.url(f"/slow?ms=3000&n={n}")})["id"]
                killed.append(run_id)
                kill_worker(service, run_id)
                run = service.wait(run_id, timeout=90)
                good = (
                    run["status"] == "succeeded"
                    and run["attempts"] == 2
                    and [s["action"] for s in run["steps"]] == ["navigate", "snapshot"]
                )
                ok += good
                if not good:
                    not_good.add(run_id)
                print(f"kill {n + 1:2}: {run['status']} after {run['attempts']} attempts", flush=True)
            time.sleep(1)
            stop.set()
            listener.join()
            for frame in frames:
                if frame["type"] == "run-finished":
                    finished_events[frame["runId"]] = finished_events.get(frame["runId"], 0) + 1
            elapsed = time.monotonic() - started
            after = service.wait(service.submit({"kind": "fetch", "url": site.url("/static")})["id"])

            doomed = service.submit({"kind": "fetch", "url": site.url("/slow?ms=5000&doomed=1")})["id"]
            for attempt in range(1, 4):  # RUN_MAX_ATTEMPTS=3: kill each attempt as soon as it is claimed
                deadline = time.monotonic() + 60
                run = service.get(f"/api/runs/{doomed}").json()
                while time.monotonic() < deadline and run["status"] in ("queued", "running"):
                    if run["status"] == "running" and run["attempts"] == attempt:
                        os.kill(service.worker_pid(doomed), signal.SIGKILL)
                        break
                    time.sleep(0.05)
                    run = service.get(f"/api/runs/{doomed}").json()
            doomed_run = service.wait(doomed, timeout=90)
            time.sleep(2)
            browsers = len(chromium_pids(service.marker))  # killed workers' browsers must be gone: <= WORKERS
        finally:
            service.stop()
        time.sleep(2)
        orphans = chromium_pids(service.marker)
    print(
        f"\n{ok}/{kills} killed runs finished exactly once "
        f"(run-finished events per run: {sorted(set(finished_events.values()))}) in {elapsed:.0f} s; "
        f"cluster afterwards: {after['status']}; "
        f"always-killed run: {doomed_run['status']} {doomed_run['error'] and doomed_run['error']['code']} "
        f"after {doomed_run['attempts']} attempts; Chromium browsers after {kills + 3} kills: {browsers} "
        f"(2 workers); Chromium processes left after stop: {len(orphans)}"
    )

    not_once = not_good | {run_id for run_id in killed if finished_events.get(run_id, 0) != 1}
    return {
        "killed runs not finished exactly once": len(not_once),
        "always-killed run failed after RUN_MAX_ATTEMPTS (1 = yes)": int(
            doomed_run["status"] == "failed"
            and (doomed_run["error"] or {}).get("code") == "worker_lost"
            and doomed_run["attempts"] == 3
        ),
        "cluster takes work afterwards (1 = yes)": int(after["status"] == "succeeded"),
        "Chromium processes left after stop": len(orphans),
    }


def figures(full: bool = False) -> Result:
    kills = 20 if full else 2
    return Result(f"{kills} kills", measure(kills))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kills", type=int, default=20)
    args = parser.parse_args()
    print_table(rows("worker_death", Result(f"{args.kills} kills", measure(args.kills))))


if __name__ == "__main__":
    main()
