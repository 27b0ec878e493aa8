"""The web tier under load (issue 21): the run list, a run's detail and health, each at 100 concurrent connections
for 20 s, with WEB_PROCESSES=1 and the default (one per core) side by side in one run, on one data directory holding
500 fetch runs of real pages (../shared/datasets/article-extraction, fetched by the service itself over plain
HTTP, guard on).

    .venv/bin/python -m tests.bench.web_tier [--seed-runs 500] [--seconds 20] [--connections 100] [--rounds 1]

The load generator is wrk (Debian's package; `apt-get install wrk`): a C event loop that takes a fraction of a core,
so the server keeps the machine's cores (a Python client would take one of the two from the server it measures).
Each configuration runs on a fresh `serve` over the same data directory, workers idle, the rate limit off. An error
is a non-2xx answer or a socket error (connect, read, write, timeout). `GET /api/runs?limit=20&include=result` is
the old list shape (every run's whole result), measured beside the new one on the same service.

Then the rate limit across processes: API_RATE_LIMIT=100, the default number of web processes, 4 clients sending 50
requests each on fresh connections: exactly 100 must pass.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from tests.bench.fetch_throughput import ARTICLES, DatasetSite
from tests.bench.goals import Result, print_table, rows
from tests.live import KEY, LiveService

AUTH_HEADER = f"Authorization: Bearer {KEY}"
UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def wrk(url: str, seconds: float, connections: int) -> dict[str, float]:
    """req/s, p50 and p99 in ms, and errors, as wrk reports them."""
    threads = min(2, connections)
    # A 10 s timeout: a slow answer is counted in the latencies, not dropped (wrk's default of 2 s would drop it and
    # the server would still do its work).
    command = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds:g}s", "--timeout", "10s", "--latency"]
    command += ["-H", AUTH_HEADER, url]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    latency = {
        percent: float(number) * UNITS[unit]
        for percent, number, unit in re.findall(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)\s*$", output, re.MULTILINE)
    }
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", output))
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    return {
        "req/s": float(re.search(r"Requests/sec:\s+([\d.]+)", output)[1]),
        "p50": latency["50"],
        "p99": latency["99"],
        "errors": errors + (int(non_2xx[1]) if non_2xx else 0),
        "bytes": 0.0,
    }


def start(data_dir: Path, site_port: int, **env: str) -> LiveService:
    settings = {
        "WORKERS": "1",
        "API_RATE_LIMIT": "0",
        "ALLOW_PRIVATE_NETWORKS": "false",
        "NETWORK_ALLOWLIST": f"127.0.0.1:{site_port}",
        **env,
    }
    service = LiveService(data_dir, **settings)
    service.env["BROWSER_ARGS"] = service.marker  # the guard resolves names; Chromium gets no resolver rules
    if "WEB_PROCESSES" not in env:
        service.env.pop("WEB_PROCESSES")  # the service's own default: one per core
    return service.start(timeout=120)


def seed(data_dir: Path, site: DatasetSite, count: int) -> str:
    """count fetch runs of the dataset's pages, finished; returns one run's id (for the detail)."""
    service = start(data_dir, site.port, WORKERS="2")
    try:
        urls = site.urls()
        # Over plain HTTP: the same Markdown as in a browser for these pages, in a fraction of the time.
        options = {"render": "http"}
        specs = [{"kind": "fetch", "url": f"{urls[n % len(urls)]}?copy={n}", "options": options} for n in range(count)]
        batch = service.session.post(f"{service.base_url}/api/batches", json={"runs": specs}, timeout=120).json()
        deadline = time.monotonic() + 3600
        while time.monotonic() < deadline:
            counts = service.get(f"/api/batches/{batch['id']}").json()["counts"]
            print(f"  seeding: {counts}", file=sys.stderr)
            if counts["queued"] == counts["running"] == 0:
                break
            time.sleep(5)
        return batch["runs"][0]
    finally:
        service.stop()


def body_bytes(service: LiveService, path: str) -> int:
    return len(service.get(path).content)


def rate_limit_passed(data_dir: Path, site_port: int) -> tuple[int, int]:
    """(requests that passed of 200, web processes they were answered by) with API_RATE_LIMIT=100."""
    service = start(data_dir, site_port, API_RATE_LIMIT="100")
    try:
        # Health is not limited: the budget is spent on the list, as a client would.
        def spender(_: int) -> list[requests.Response]:
            headers = {"Authorization": f"Bearer {KEY}", "Connection": "close"}
            return [
                requests.get(service.base_url + "/api/runs?limit=1", headers=headers, timeout=10) for _ in range(50)
            ]

        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = [answer for chunk in pool.map(spender, range(4)) for answer in chunk]
        passed = [answer for answer in answers if answer.status_code == 200]
        return len(passed), len({answer.headers.get("X-Served-By") for answer in passed})
    finally:
        service.stop()


def measure(args: argparse.Namespace) -> dict[str, float | int | str]:
    if shutil.which("wrk") is None:
        sys.exit("wrk is not installed: apt-get install wrk")
    root = Path(tempfile.mkdtemp(prefix="web-tier-"))
    data_dir = root / "data"
    data_dir.mkdir()
    files = sorted(ARTICLES.glob("*.html.gz"))
    found: dict[str, float | int | str] = {}
    with DatasetSite(files) as site:
        run_id = seed(data_dir, site, args.seed_runs)
        endpoints = {
            "list": "/api/runs?limit=20",
            "list with results (old shape)": "/api/runs?limit=20&include=result",
            "detail": f"/api/runs/{run_id}",
            "health": "/api/health",
        }
        configurations = {"WEB_PROCESSES=1": {"WEB_PROCESSES": "1"}, "default": {}}
        figures: dict[tuple[str, str], list[dict[str, float]]] = {}
        for _ in range(args.rounds):
            for label, env in configurations.items():
                service = start(data_dir, site.port, **env)
                try:
                    processes = len(
                        {
                            requests.get(service.base_url + "/api/health", headers={"Connection": "close"}).headers[
                                "X-Served-By"
                            ]
                            for _ in range(40)
                        }
                    )
                    found[f"{label}: web processes answering"] = processes
                    for name, path in endpoints.items():
                        if name.startswith("list with") and label != "WEB_PROCESSES=1":
                            continue
                        figure = wrk(service.base_url + path, args.seconds, args.connections)
                        figure["bytes"] = body_bytes(service, path)
                        figures.setdefault((label, name), []).append(figure)
                        print(f"  {label} {name}: {figure}", file=sys.stderr)
                finally:
                    service.stop()
        for (label, name), runs in figures.items():
            best = max(runs, key=lambda figure: figure["req/s"])
            found[f"{label}, {name}: req/s"] = round(best["req/s"], 1)
            found[f"{label}, {name}: p50 ms"] = round(best["p50"], 1)
            found[f"{label}, {name}: p99 ms"] = round(best["p99"], 1)
            found[f"{label}, {name}: errors"] = int(sum(run["errors"] for run in runs))
            found[f"{label}, {name}: body KB"] = round(best["bytes"] / 1024, 1)
        for name in ("list", "detail", "health"):
            one = found[f"WEB_PROCESSES=1, {name}: req/s"]
            found[f"default vs WEB_PROCESSES=1, {name}: ratio"] = round(found[f"default, {name}: req/s"] / one, 2)
        found["list (default) vs the old list shape: ratio"] = round(
            found["default, list: req/s"] / found["WEB_PROCESSES=1, list with results (old shape): req/s"], 2
        )
        passed, answering = rate_limit_passed(data_dir, site.port)
        found["rate limit 100/min, 200 requests from 4 clients: passed"] = passed
        found["rate limit: web processes that answered them"] = answering
    found["cores"] = os.cpu_count() or 1
    shutil.rmtree(root, ignore_errors=True)
    return found


def figures(full: bool = False) -> Result:
    """For tests.bench.run_all: the issue's sizes in full mode; 100 runs and 5 s an endpoint otherwise."""
    args = arguments().parse_args([] if full else ["--seed-runs", "100", "--seconds", "5"])
    return Result(f"{args.connections} connections, {args.seconds:g} s, {args.seed_runs} runs", measure(args))


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed-runs", type=int, default=500)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--connections", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1, help="Alternate the configurations this many times.")
    return parser


def main() -> None:
    args = arguments().parse_args()
    found = measure(args)
    for name, value in found.items():
        print(f"{name}: {value}")
    print_table(rows("web_tier", Result(f"{args.connections} connections, {args.seconds:g} s", found)))
    errors = sum(value for name, value in found.items() if name.endswith(": errors"))
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
