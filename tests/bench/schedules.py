"""Schedules and webhooks (issue 22): how late a saved query's scheduled replay is queued after its due time, over
50 due times, and how long after a run finishes its webhook delivery reaches the receiver, on a live `serve` with
its workers, the network guard on, pages of ../shared/datasets/article-extraction.

    .venv/bin/python -m tests.bench.schedules [--ticks 50] [--runs 20]

Lateness: the replay's createdAt minus the due time it was replaying (nextRunAt read just before it). It is bounded
by SCHEDULE_CHECK_SECONDS (how often `work` looks for due schedules): the default (5 s) and 1 s are measured side by
side, each on a schedule a little longer than its look, so that no due time is skipped. Delivery latency: the
receiver's clock when the delivery arrived minus the run's finishedAt (both this machine's clock).
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.fetch_throughput import ARTICLES, DatasetSite
from tests.bench.goals import Result, print_table, rows
from tests.live import LiveService
from tests.webhook_receiver import Receiver

SCHEMA = {"type": "object", "properties": {"title": {"type": ["string", "null"], "x-selector": "h1"}}}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def start(data_dir: Path, site: DatasetSite, **env: str) -> LiveService:
    settings = {
        "ALLOW_PRIVATE_NETWORKS": "false",
        "NETWORK_ALLOWLIST": f"127.0.0.1:{site.port}",
        "API_RATE_LIMIT": "0",  # the bench polls
        **env,
    }
    service = LiveService(data_dir, **settings)
    service.env["BROWSER_ARGS"] = service.marker  # the guard resolves names; Chromium gets no resolver rules
    return service.start(timeout=120)


def lateness(site: DatasetSite, root: Path, check_seconds: float, every: int, ticks: int) -> list[float]:
    """Seconds from each due time to its replay's creation, for `ticks` due times."""
    data_dir = root / f"check-{check_seconds:g}"
    data_dir.mkdir()
    service = start(data_dir, site, SCHEDULE_MIN_SECONDS="1", SCHEDULE_CHECK_SECONDS=f"{check_seconds:g}")
    try:
        body = {"name": "watch", "url": f"{site.urls()[0]}", "schema": SCHEMA, "schedule": {"everySeconds": every}}
        assert service.post("/api/queries", body).status_code == 201
        dues: set[dt.datetime] = set()
        deadline = time.monotonic() + every * (ticks + 3) + 60
        late: list[float] = []
        while len(late) < ticks and time.monotonic() < deadline:
            query = service.get("/api/queries/watch").json()
            if query["nextRunAt"]:
                dues.add(dt.datetime.fromisoformat(query["nextRunAt"]))
            runs = service.get("/api/runs?query=watch&limit=500").json()["results"]
            created = sorted(dt.datetime.fromisoformat(run["createdAt"]) for run in runs)
            late = [(when - max(due for due in dues if due <= when)).total_seconds() for when in created if
                    any(due <= when for due in dues)]  # fmt: skip
            time.sleep(0.05)
        skipped = service.get("/api/queries/watch").json()["skippedTicks"]
        print(f"  check {check_seconds:g} s: {len(late)} replays, {skipped} skipped", file=sys.stderr)
        return late[:ticks]
    finally:
        service.stop()


def delivery_latency(site: DatasetSite, root: Path, runs: int) -> list[float]:
    data_dir = root / "webhooks"
    data_dir.mkdir()
    with Receiver() as receiver:
        allowed = f"127.0.0.1:{site.port},127.0.0.1:{receiver.server.server_address[1]}"
        service = start(data_dir, site, NETWORK_ALLOWLIST=allowed)
        try:
            body = {"url": receiver.url, "events": ["run.finished"]}
            assert service.post("/api/webhooks", body).status_code == 201
            found: list[float] = []
            for n in range(runs):
                run = service.submit({"kind": "fetch", "url": site.urls()[n % len(site.urls())]})
                finished = service.wait(run["id"], timeout=120)
                arrived = receiver.wait_for(n + 1, timeout=60)[n]
                ended = dt.datetime.fromisoformat(finished["finishedAt"]).timestamp()
                found.append(arrived.wall - ended)
            return found
        finally:
            service.stop()


def measure(args: argparse.Namespace) -> dict[str, float | int | str]:
    root = Path(tempfile.mkdtemp(prefix="schedules-"))
    found: dict[str, float | int | str] = {}
    with DatasetSite(sorted(ARTICLES.glob("*.html.gz"))[:20]) as site:
        for check, every in ((5.0, 6), (1.0, 2)):
            late = lateness(site, root, check, every, args.ticks)
            label = f"SCHEDULE_CHECK_SECONDS={check:g}, every {every} s"
            found[f"{label}: due times measured"] = len(late)
            found[f"{label}: lateness p50 s"] = round(statistics.median(late), 2)
            found[f"{label}: lateness p99 s"] = round(percentile(late, 0.99), 2)
            found[f"{label}: lateness max s"] = round(max(late), 2)
        latency = delivery_latency(site, root, args.runs)
        found["webhook delivery after run-finished: runs"] = len(latency)
        found["webhook delivery after run-finished: p50 ms"] = round(statistics.median(latency) * 1000, 1)
        found["webhook delivery after run-finished: p99 ms"] = round(percentile(latency, 0.99) * 1000, 1)
    shutil.rmtree(root, ignore_errors=True)
    return found


def figures(full: bool = False) -> Result:
    args = arguments().parse_args([] if full else ["--ticks", "10", "--runs", "5"])
    return Result(f"{args.ticks} due times per look, {args.runs} deliveries", measure(args))


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ticks", type=int, default=50)
    parser.add_argument("--runs", type=int, default=20)
    return parser


def main() -> None:
    args = arguments().parse_args()
    found = measure(args)
    for name, value in found.items():
        print(f"{name}: {value}")
    print_table(rows("schedules", Result(f"{args.ticks} due times, {args.runs} deliveries", found)))


if __name__ == "__main__":
    main()
