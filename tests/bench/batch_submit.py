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

from tests.live import LiveService, free_port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--specs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    closed = f"http://127.0.0.1:{free_port()}"
    specs = [
        {"kind": "fetch", "url": f"{closed}/page/{n}", "options": {"screenshots": False}} for n in range(args.specs)
    ]
    with tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(Path(data_dir)).start()
        try:
            times = []
            for _ in range(args.rounds):
                started = time.perf_counter()
                response = service.session.post(f"{service.base_url}/api/batches", json={"runs": specs}, timeout=60)
                times.append((time.perf_counter() - started) * 1000)
                assert response.status_code == 201, response.text
                assert len(response.json()["runs"]) == args.specs
        finally:
            service.stop()
    print(
        f"batch of {args.specs} specs accepted in (ms): median {statistics.median(times):.0f}  "
        f"min {min(times):.0f}  max {max(times):.0f}  over {args.rounds} rounds  (goal < 2000)"
    )


if __name__ == "__main__":
    main()
