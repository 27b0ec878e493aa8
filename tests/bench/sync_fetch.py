"""POST /api/fetch with render=http against a local static page, next to the same work done in-process
(requests.get + the same Markdown conversion), in one run so the machine's noise hits both alike.

    .venv/bin/python -m tests.bench.sync_fetch [--requests 300]

Sequential requests: the p50 difference is the service's own overhead per request (HTTP + auth + validation +
JSON). A second service runs with the network guard on (ALLOW_PRIVATE_NETWORKS=false and the test site in
NETWORK_ALLOWLIST), to show what routing every connection through the guard costs.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import requests

from runs.engine.markdown import to_markdown
from tests.bench.goals import Result, print_table, rows
from tests.live import LiveService
from tests.site import TestSite


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def timed(count: int, work) -> list[float]:
    times = []
    for n in range(count):
        started = time.perf_counter()
        work(n)
        times.append((time.perf_counter() - started) * 1000)
    return times


def measure(requests_count: int) -> dict[str, float]:
    with TestSite() as site, tempfile.TemporaryDirectory() as open_dir, tempfile.TemporaryDirectory() as guard_dir:
        port = site.server.server_address[1]
        plain = LiveService(Path(open_dir)).start()
        guarded = LiveService(
            Path(guard_dir), ALLOW_PRIVATE_NETWORKS="false", NETWORK_ALLOWLIST=f"127.0.0.1:{port}"
        ).start()
        try:

            def direct(n: int) -> None:
                # A new connection per page, as the service makes (a kept-alive connection to Python's test
                # server stalls ~40 ms per request on Nagle + delayed ACK, which would flatter the service).
                response = requests.get(site.url(f"/page/{n}"), timeout=10)
                to_markdown(response.text, main_content=True, url=response.url)

            def through(service: LiveService):
                def call(n: int) -> None:
                    response = service.session.post(
                        f"{service.base_url}/api/fetch", json={"url": site.url(f"/page/{n}"), "render": "http"}
                    )
                    if response.status_code != 200:
                        raise SystemExit(f"POST /api/fetch answered {response.status_code}: {response.text[:200]}")

                return call

            for work in (direct, through(plain), through(guarded)):  # warm up
                timed(20, work)
            results = {}
            rounds = 3
            for _ in range(rounds):  # interleaved, so drift hits all three alike
                for name, work in (("in-process", direct), ("service", through(plain)), ("guarded", through(guarded))):
                    results.setdefault(name, []).extend(timed(requests_count // rounds, work))
        finally:
            plain.stop()
            guarded.stop()
    base = statistics.median(results["in-process"])
    for name, times in results.items():
        p50 = statistics.median(times)
        print(
            f"{name:>10}: p50 {p50:6.1f} ms  p90 {percentile(times, 0.9):6.1f} ms  "
            f"{1000 / statistics.mean(times):6.1f} req/s  overhead p50 {p50 - base:+5.1f} ms"
        )
    print("goal: service overhead <= 15 ms p50")
    return {
        "service overhead p50 ms (guard off)": statistics.median(results["service"]) - base,
        "service overhead p50 ms (guard on, default)": statistics.median(results["guarded"]) - base,
        "service req/s (guard on, sequential)": 1000 / statistics.mean(results["guarded"]),
    }


def figures(full: bool = False) -> Result:
    count = 300 if full else 60
    return Result(f"{count} requests per side", measure(count))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()
    print_table(rows("sync_fetch", Result(f"{args.requests} requests per side", measure(args.requests))))


if __name__ == "__main__":
    main()
