"""Event latency: from an Event row's commit to the frame at connected WebSocket clients.

    .venv/bin/python -m tests.bench.event_latency [--events 300] [--clients 1 100]

A producer process (another process, as a worker is) commits step events through runs.events, each
stamped with the wall-clock time just before its commit; clients connected to daphne record when each
frame arrives. Variants: the embedded default (SQLite, in-memory layer, the ticker) and SQLite + Redis
channel layer (workers' wake-ups go through Redis).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from websockets.asyncio.client import connect

from tests.bench.goals import Result, print_table, rows
from tests.live import KEY, REDIS_URL, ROOT, LiveService, redis_available

# Publishes through runs.events.event_step, as a worker does; the observation carries the send time.
PRODUCER = """
import json, sys, time, uuid
import django
django.setup()
from django.db import transaction
from runs import events
from runs.models import Run, Step
count, interval = int(sys.argv[1]), float(sys.argv[2])
run = Run(id=uuid.uuid4())
for index in range(count):
    with transaction.atomic():
        step = Step(run=run, index=index, action="bench", observation=json.dumps({"sentAt": time.time()}))
        events.event_step(run, step, screenshot_url=None)
    time.sleep(interval)
"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def measure_once(service: LiveService, clients: int, count: int, interval: float) -> list[float]:
    latencies: list[float] = []
    sockets = [
        await connect(service.events_url, additional_headers={"Authorization": f"Bearer {KEY}"}, max_queue=None)
        for _ in range(clients)
    ]

    async def listen(ws) -> None:
        received = 0
        while received < count:
            frame = json.loads(await ws.recv())
            if frame.get("action") == "bench":
                latencies.append((time.time() - json.loads(frame["observation"])["sentAt"]) * 1000)
                received += 1

    listeners = [asyncio.create_task(listen(ws)) for ws in sockets]
    env = {**service.env, "DJANGO_SETTINGS_MODULE": "service.settings"}
    producer = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PRODUCER, str(count), str(interval), cwd=ROOT, env=env
    )
    await producer.wait()
    await asyncio.wait_for(asyncio.gather(*listeners), timeout=60)
    for ws in sockets:
        await ws.close()
    return latencies


def measure(events: int, interval: float, client_counts: list[int]) -> dict[str, float]:
    variants = {"embedded": {}}
    if redis_available():
        variants["Redis layer"] = {"REDIS_URL": REDIS_URL}
    else:
        print("Redis on 127.0.0.1:6379 is not running: the Redis layer variant is not measured")
    found: dict[str, float] = {}
    for name, env in variants.items():
        with tempfile.TemporaryDirectory() as data_dir:
            service = LiveService(Path(data_dir), **env).start()
            try:
                for clients in client_counts:
                    latencies = asyncio.run(measure_once(service, clients, events, interval))
                    print(
                        f"{name}, {clients} client(s), {events} events: "
                        f"p50 {statistics.median(latencies):.1f} ms  p99 {percentile(latencies, 0.99):.1f} ms  "
                        f"max {max(latencies):.1f} ms"
                    )
                    who = f"{clients} client" + ("s" if clients > 1 else "")
                    found[f"{name}, {who}: p50 ms"] = statistics.median(latencies)
                    found[f"{name}, {who}: p99 ms"] = percentile(latencies, 0.99)
            finally:
                service.stop()
    return found


def figures(full: bool = False) -> Result:
    events = 300 if full else 100
    return Result(f"{events} events", measure(events, 0.02, [1, 100]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--interval", type=float, default=0.02, help="Seconds between events.")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 100])
    args = parser.parse_args()
    found = measure(args.events, args.interval, args.clients)
    print_table(rows("event_latency", Result(f"{args.events} events", found)))


if __name__ == "__main__":
    main()
