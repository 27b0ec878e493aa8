"""Load: 200 concurrent API clients reading history and details for 60 s, then 200 WebSocket clients on
/api/events while runs are submitted (issue: reliability). Goal: 0 errors, p99 reported, every frame at every client.

    .venv/bin/python -m tests.bench.load [--seconds 60] [--clients 200] [--seed-runs 300] [--ws-runs 30]

`manage.py serve` on the embedded default (SQLite, in-memory channel layer, WORKERS=2), the rate limit off. First
--seed-runs finished runs are made with one batch (fetches of local pages, a fifth of them rule-based extracts).

HTTP: --clients threads, each with its own keep-alive requests.Session and no think time (a closed loop: each
client sends its next request when the last one is answered), half GET /api/runs (limit 20 or 50, sometimes a
kind/status/batch filter, half of the time also the cursor's next page), half GET /api/runs/<id> of a random seeded
run. An error is any status but 200 or any request exception.

WebSocket: --clients connections to /api/events in one asyncio loop, then --ws-runs fetch runs submitted one after
another. Frame latency = receipt at the client - the event's `at` (stamped by the writing process just before its
transaction commits; screenshot frames have no `at` and are only counted). Every client must receive exactly the
events the outbox holds for those runs (read back afterwards with ?after=0&runId=<id>).

The load generator shares the machine's cores (2 where this was written) with daphne, the workers and Chromium; the
CPU each of them used in both phases is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

import requests
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.bench.contention import cpu_seconds, cpu_share, log_exceptions
from tests.bench.goals import Result, print_table, rows
from tests.live import KEY, LiveService
from tests.site import TestSite

AUTH = {"Authorization": f"Bearer {KEY}"}
RULE_SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "x-selector": "h1.name"}}}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def seed(service: LiveService, site: TestSite, count: int) -> tuple[str, list[str]]:
    """One batch of finished runs: its id and the run ids."""
    specs = [
        {"kind": "extract", "url": site.url("/product"), "schema": RULE_SCHEMA}
        if n % 5 == 0
        else {"kind": "fetch", "url": site.url(f"/page/{n}"), "options": {"screenshots": False}}
        for n in range(count)
    ]
    batch = service.session.post(f"{service.base_url}/api/batches", json={"runs": specs}, timeout=120).json()
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline:
        counts = service.get(f"/api/batches/{batch['id']}").json()["counts"]
        if counts["queued"] == counts["running"] == 0:
            break
        time.sleep(1)
    return batch["id"], batch["runs"]


def http_load(service: LiveService, clients: int, seconds: float, batch_id: str, run_ids: list[str]) -> dict:
    latencies: dict[str, list[float]] = defaultdict(list)
    errors: list[str] = []
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def get(session: requests.Session, endpoint: str, url: str) -> dict | None:
        started = time.perf_counter()
        try:
            response = session.get(url, timeout=60)
        except requests.RequestException as error:
            with lock:
                errors.append(f"{endpoint}: {error!r}")
            return None
        elapsed = (time.perf_counter() - started) * 1000
        with lock:
            latencies[endpoint].append(elapsed)
            if response.status_code != 200:
                errors.append(f"{endpoint} {response.status_code}: {response.text[:300]}")
                return None
        return response.json()

    def client(number: int) -> None:
        rng = random.Random(number)
        session = requests.Session()
        session.headers.update(AUTH)
        filters = ["", "", "&kind=extract", "&kind=fetch", "&status=succeeded", f"&batch={batch_id}"]
        while time.monotonic() < deadline:
            if rng.random() < 0.5:
                url = f"{service.base_url}/api/runs?limit={rng.choice([20, 50])}{rng.choice(filters)}"
                page = get(session, "GET /api/runs", url)
                if page and page["next"] and rng.random() < 0.5:
                    get(session, "GET /api/runs (next page)", page["next"])
            else:
                get(session, "GET /api/runs/:id", f"{service.base_url}/api/runs/{rng.choice(run_ids)}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"latencies": latencies, "errors": errors, "seconds": time.monotonic() - started}


async def websocket_load(service: LiveService, site: TestSite, clients: int, runs: int, interval: float) -> dict:
    sockets = [await connect(service.events_url, additional_headers=AUTH, max_queue=None) for _ in range(clients)]
    received: list[list[tuple[float, dict]]] = [[] for _ in sockets]
    submitted_at: dict[str, float] = {}
    all_submitted = asyncio.Event()
    closed: list[str] = []

    async def listen(ws, frames: list[tuple[float, dict]]) -> None:
        finished: set[str] = set()
        while not (all_submitted.is_set() and finished.issuperset(submitted_at)):
            try:
                text = await asyncio.wait_for(ws.recv(), 1)
            except TimeoutError:
                continue
            except ConnectionClosed as error:  # e.g. dropped as too far behind (4408)
                closed.append(str(error))
                return
            frame = json.loads(text)
            frames.append((time.time(), frame))
            if frame["type"] == "run-finished":
                finished.add(frame["runId"])

    listeners = [asyncio.create_task(listen(ws, frames)) for ws, frames in zip(sockets, received, strict=True)]
    for n in range(runs):
        spec = {"kind": "fetch", "url": site.url(f"/page/{n}")}
        sent = time.time()
        run = await asyncio.to_thread(service.submit, spec)
        submitted_at[run["id"]] = sent
        await asyncio.sleep(interval)
    all_submitted.set()
    _, late = await asyncio.wait(listeners, timeout=300)
    for task in late:
        task.cancel()
    for ws in sockets:
        await ws.close()

    outbox: set[int] = set()
    for run_id in submitted_at:
        async with connect(f"{service.events_url}?after=0&runId={run_id}", additional_headers=AUTH) as ws:
            while True:
                frame = json.loads(await asyncio.wait_for(ws.recv(), 30))
                outbox.add(frame["eventId"])
                if frame["type"] == "run-finished":
                    break

    latencies, queued = [], []
    receipts: dict[int, list[float]] = defaultdict(list)
    complete = 0
    for frames in received:
        ours = [(at, frame) for at, frame in frames if frame.get("runId") in submitted_at]
        complete += {frame["eventId"] for _, frame in ours} == outbox and len(ours) == len(outbox)
        for at, frame in ours:
            receipts[frame["eventId"]].append(at)
            if "at" in frame:
                latencies.append((at - datetime.fromisoformat(frame["at"]).timestamp()) * 1000)
            if frame["type"] == "run-queued":
                queued.append((at - submitted_at[frame["runId"]]) * 1000)
    deliveries = sum(len([f for _, f in frames if f.get("runId") in submitted_at]) for frames in received)
    return {
        "latencies": latencies,
        "queued": queued,
        # How far apart the first and the last client received the same event: the cost of the fan-out.
        "spread": [(max(times) - min(times)) * 1000 for times in receipts.values()],
        "complete": complete,
        "outbox": len(outbox),
        "deliveries": deliveries,
        "late": len(late),
        "closed": closed,
    }


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--seed-runs", type=int, default=300)
    parser.add_argument("--ws-runs", type=int, default=30)
    parser.add_argument("--ws-interval", type=float, default=0.3, help="Seconds between WebSocket-phase submits.")
    return parser


def measure(args: argparse.Namespace) -> dict[str, int | float]:
    with TestSite() as site, tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(Path(data_dir), API_RATE_LIMIT="0").start(timeout=120)
        try:
            seeding = time.monotonic()
            batch_id, run_ids = seed(service, site, args.seed_runs)
            print(f"seeded {len(run_ids)} runs in {time.monotonic() - seeding:.0f} s", flush=True)

            load_average, cpu_before = os.getloadavg()[0], cpu_seconds(service)
            http = http_load(service, args.clients, args.seconds, batch_id, run_ids)
            cpu = cpu_share(cpu_before, cpu_seconds(service), http["seconds"])

            cpu_before, ws_started = cpu_seconds(service), time.monotonic()
            ws = asyncio.run(websocket_load(service, site, args.clients, args.ws_runs, args.ws_interval))
            ws_cpu = cpu_share(cpu_before, cpu_seconds(service), time.monotonic() - ws_started)
        finally:
            service.stop()
        exceptions_in_log = log_exceptions(service.log_path.read_text(errors="replace").splitlines())

    everything = [value for values in http["latencies"].values() for value in values]
    print(
        f"\nHTTP: {args.clients} clients (threads, closed loop, no think time) for {http['seconds']:.0f} s on "
        f"{len(run_ids)} seeded runs: {len(everything)} requests, {len(everything) / http['seconds']:.1f} req/s, "
        f"errors {len(http['errors'])}"
    )
    print("\n| endpoint | requests | p50 ms | p95 ms | p99 ms | max ms |\n|---|---|---|---|---|---|")
    for endpoint, values in [*sorted(http["latencies"].items()), ("all", everything)]:
        print(
            f"| {endpoint} | {len(values)} | {statistics.median(values):.0f} | {percentile(values, 0.95):.0f} | "
            f"{percentile(values, 0.99):.0f} | {max(values):.0f} |"
        )
    print(
        f"\nCPU used during the HTTP phase, in % of one core ({os.cpu_count()} cores on the machine, shared): {cpu}; "
        f"1-minute load average at the start {load_average:.1f}"
    )
    for line in http["errors"][:5]:
        print(f"error: {line}")

    latencies, queued = ws["latencies"], ws["queued"]
    print(
        f"\nWebSocket: {args.clients} clients on /api/events (one asyncio loop), {args.ws_runs} fetch runs submitted "
        f"{args.ws_interval:g} s apart: {ws['outbox']} events in the outbox for them, {ws['deliveries']} frames "
        f"delivered of {ws['outbox'] * args.clients} expected; clients with every frame {ws['complete']}/{args.clients}"
        f" (timed out: {ws['late']}, closed by the server: {len(ws['closed'])})"
    )
    for line in ws["closed"][:5]:
        print(f"closed: {line}")
    print(
        f"frame latency (event at -> receipt), {len(latencies)} frames: p50 {statistics.median(latencies):.1f} ms  "
        f"p95 {percentile(latencies, 0.95):.1f} ms  p99 {percentile(latencies, 0.99):.1f} ms  "
        f"max {max(latencies):.1f} ms"
    )
    print(
        f"submit -> run-queued frame, {len(queued)} frames: p50 {statistics.median(queued):.1f} ms  "
        f"p99 {percentile(queued, 0.99):.1f} ms"
    )
    print(
        f"first to last client receiving the same event, {len(ws['spread'])} events: "
        f"p50 {statistics.median(ws['spread']):.1f} ms  p99 {percentile(ws['spread'], 0.99):.1f} ms"
    )
    print(f"CPU used during the WebSocket phase, in % of one core: {ws_cpu}")
    print(f"tracebacks in serve.log: {len(exceptions_in_log)}")
    for line in exceptions_in_log[:5]:
        print(f"serve.log: {line}")
    return {
        "HTTP errors": len(http["errors"]),
        "HTTP req/s": len(everything) / http["seconds"],
        "HTTP p99 ms": percentile(everything, 0.99),
        "WebSocket clients missing a frame": args.clients - ws["complete"],
        "WebSocket frame p99 ms": percentile(latencies, 0.99),
    }


def figures(full: bool = False) -> Result:
    quick = [] if full else ["--seconds", "10", "--clients", "50", "--seed-runs", "30", "--ws-runs", "4"]
    args = arguments().parse_args(quick)
    return Result(f"{args.clients} clients, {args.seconds:g} s", measure(args))


def main() -> None:
    args = arguments().parse_args()
    found = measure(args)
    print_table(rows("load", Result(f"{args.clients} clients, {args.seconds:g} s", found)))
    sys.exit(1 if found["HTTP errors"] or found["WebSocket clients missing a frame"] else 0)


if __name__ == "__main__":
    main()
