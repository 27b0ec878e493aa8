"""Queue pickup latency on the embedded default: submit -> run running (createdAt -> startedAt).

    .venv/bin/python -m tests.bench.queue_pickup [--runs 100]

Runs are submitted one at a time to an idle cluster (2 workers), so the figure is the queue's own latency:
commit, enqueue on commit, the pusher's poll, hand-over to a worker, and the claim's conditional UPDATE.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from datetime import datetime
from pathlib import Path

from tests.bench.goals import Result, print_table, rows
from tests.live import LiveService
from tests.site import TestSite


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure(runs: int) -> dict[str, float]:
    with TestSite() as site, tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(Path(data_dir)).start()
        try:
            service.wait(service.submit({"kind": "fetch", "url": site.url("/static")})["id"])  # warm up
            latencies = []
            for n in range(runs):
                run = service.submit(
                    {"kind": "fetch", "url": site.url(f"/page/{n}"), "options": {"screenshots": False}}
                )
                done = service.wait(run["id"])
                created = datetime.fromisoformat(done["createdAt"])
                started = datetime.fromisoformat(done["startedAt"])
                latencies.append((started - created).total_seconds() * 1000)
        finally:
            service.stop()
    print(
        f"queue pickup over {len(latencies)} runs (ms): p50 {statistics.median(latencies):.0f}  "
        f"p90 {percentile(latencies, 0.90):.0f}  p99 {percentile(latencies, 0.99):.0f}  max {max(latencies):.0f}  "
        "(goal p50 <= 100, p99 <= 300)"
    )
    return {"pickup p50 ms": statistics.median(latencies), "pickup p99 ms": percentile(latencies, 0.99)}


def figures(full: bool = False) -> Result:
    runs = 100 if full else 20
    return Result(f"{runs} runs", measure(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    print_table(rows("queue_pickup", Result(f"{args.runs} runs", measure(args.runs))))


if __name__ == "__main__":
    main()
