"""Fetch throughput with 1, 2 and 4 worker processes, on SQLite and on PostgreSQL (+ Redis), and the queue pickup
latency of each: where does the embedded default stop scaling on this machine?

    .venv/bin/python -m tests.bench.scale_workers [--runs 500] [--workers 1 2 4] [--pickups 20]

Each configuration is a fresh `manage.py serve` (daphne + WORKERS workers + reaper). The runs are one batch of fetches
of local pages without screenshots (POST /api/batches), so the queue and the database are what is measured, next to
the browser work itself. Throughput = runs / (last finishedAt - first createdAt). Pickup = startedAt - createdAt of
runs submitted one at a time to the idle cluster afterwards.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

from tests.bench.goals import Result, print_table, rows
from tests.live import REDIS_URL, LiveService, ScratchPostgres, postgres_available, redis_available
from tests.site import TestSite


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure(site: TestSite, workers: int, runs: int, pickups: int, **env: str) -> dict:
    with tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(Path(data_dir), WORKERS=str(workers), RUN_LEASE_SECONDS="30", **env).start(timeout=120)
        try:
            service.wait(service.submit({"kind": "fetch", "url": site.url("/static")})["id"])  # warm up
            specs = [
                {"kind": "fetch", "url": site.url(f"/page/{n}"), "options": {"screenshots": False}} for n in range(runs)
            ]
            batch = service.session.post(f"{service.base_url}/api/batches", json={"runs": specs}, timeout=120).json()
            deadline = time.monotonic() + 1800
            while True:
                counts = service.get(f"/api/batches/{batch['id']}").json()["counts"]
                if counts["queued"] == counts["running"] == 0 or time.monotonic() > deadline:
                    break
                time.sleep(1)
            finished = []
            url = f"/api/runs?batch={batch['id']}&limit=500"
            while url:
                page = service.session.get(service.base_url + url if url.startswith("/") else url, timeout=30).json()
                finished += page["results"]
                url = page["next"]
            created = min(datetime.fromisoformat(r["createdAt"]) for r in finished)
            last = max(datetime.fromisoformat(r["finishedAt"]) for r in finished if r["finishedAt"])
            failed = sum(r["status"] != "succeeded" for r in finished)
            latencies = []
            for n in range(pickups):
                run = service.wait(
                    service.submit({"kind": "fetch", "url": site.url(f"/page/{n}"), "options": {"screenshots": False}})[
                        "id"
                    ]
                )
                latencies.append(
                    (
                        datetime.fromisoformat(run["startedAt"]) - datetime.fromisoformat(run["createdAt"])
                    ).total_seconds()
                    * 1000
                )
        finally:
            service.stop()
    return {
        "throughput": len(finished) / (last - created).total_seconds(),
        "failed": failed,
        "pickup_p50": statistics.median(latencies),
        "pickup_p99": percentile(latencies, 0.99),
    }


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--pickups", type=int, default=20)
    return parser


def measure_all(args: argparse.Namespace) -> dict[str, float]:
    backends = ["sqlite"] + (["postgres"] if postgres_available() and redis_available() else [])
    rows_ = []
    with TestSite() as site:
        for workers in args.workers:
            for backend in backends:
                if backend == "postgres":
                    with ScratchPostgres() as database:
                        result = measure(
                            site, workers, args.runs, args.pickups, DATABASE_URL=database.url, REDIS_URL=REDIS_URL
                        )
                else:
                    result = measure(site, workers, args.runs, args.pickups)
                rows_.append((backend, workers, result))
                print(
                    f"{backend:>8}  workers {workers}:  {result['throughput']:6.1f} runs/s  "
                    f"failed {result['failed']}  pickup p50 {result['pickup_p50']:5.0f} ms  "
                    f"p99 {result['pickup_p99']:5.0f} ms",
                    flush=True,
                )
    print("\n| backend | workers | runs/s | failed | pickup p50 ms | pickup p99 ms |\n|---|---|---|---|---|---|")
    for backend, workers, result in rows_:
        print(
            f"| {backend} | {workers} | {result['throughput']:.1f} | {result['failed']} | "
            f"{result['pickup_p50']:.0f} | {result['pickup_p99']:.0f} |"
        )
    found: dict[str, float] = {}
    for backend, workers, result in rows_:
        found[f"{backend}, {workers} worker{'s' if workers > 1 else ''}: runs/s"] = result["throughput"]
        found[f"{backend}, {workers} worker{'s' if workers > 1 else ''}: pickup p50 ms"] = result["pickup_p50"]
    return found


def figures(full: bool = False) -> Result:
    args = arguments().parse_args([] if full else ["--runs", "50", "--workers", "1", "2", "--pickups", "5"])
    return Result(f"{args.runs} runs per configuration", measure_all(args))


def main() -> None:
    args = arguments().parse_args()
    print_table(rows("scale_workers", Result(f"{args.runs} runs per configuration", measure_all(args))))


if __name__ == "__main__":
    main()
