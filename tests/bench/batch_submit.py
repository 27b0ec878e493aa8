"""Batch acceptance time: POST /api/batches with 1,000 fetch specs against a live service (embedded default).

    .venv/bin/python -m tests.bench.batch_submit [--specs 1000] [--rounds 5]

The time is the whole HTTP round trip: parsing, validating every spec, one transaction for the batch, its runs and
their run-queued events, and the enqueue after commit. The workers start on the queued runs meanwhile (the URLs
point at a closed port, so each run fails fast), as they would for a user.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from tests.bench.goals import Result, print_table, rows
from tests.live import LiveService, free_port


def measure(specs_per_batch: int, rounds: int) -> dict[str, float]:
    closed = f"http://127.0.0.1:{free_port()}"
    specs = [
        {"kind": "fetch", "url": f"{closed}/page/{n}", "options": {"screenshots": False}}
        for n in range(specs_per_batch)
    ]
    with tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(Path(data_dir)).start()
        try:
            times = []
            for _ in range(rounds):
                started = time.perf_counter()
                response = service.session.post(f"{service.base_url}/api/batches", json={"runs": specs}, timeout=60)
                times.append((time.perf_counter() - started) * 1000)
                if response.status_code != 201 or len(response.json()["runs"]) != specs_per_batch:
                    raise SystemExit(f"the batch was not accepted whole: {response.status_code} {response.text[:200]}")
        finally:
            service.stop()
    print(
        f"batch of {specs_per_batch} specs accepted in (ms): median {statistics.median(times):.0f}  "
        f"min {min(times):.0f}  max {max(times):.0f}  over {rounds} rounds  (goal < 2000)"
    )
    return {f"{specs_per_batch:,} specs accepted, median ms": statistics.median(times), "max ms": max(times)}


def figures(full: bool = False) -> Result:
    rounds = 5 if full else 3
    return Result(f"{rounds} rounds", measure(1000, rounds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--specs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print_table(rows("batch_submit", Result(f"{args.rounds} rounds", measure(args.specs, args.rounds))))


if __name__ == "__main__":
    main()
