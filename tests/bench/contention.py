"""Contention on the embedded SQLite: 4 workers plus 20 concurrent API clients writing and reading for 2 minutes
(issue: reliability). Goal: 0 "database is locked", 0 lost results (every submitted run reaches a final state), 0 5xx.

    .venv/bin/python -m tests.bench.contention [--seconds 120] [--clients 20] [--max-pending 60]

`manage.py serve` with WORKERS=4 on the embedded default (SQLite, in-memory channel layer), the rate limit off and
the service's own lease and reaper settings. Each client is a thread with its own requests.Session doing a random
mix: submit a run (POST /api/runs) or a batch of 5 (POST /api/batches), replay its saved query, cancel a run,
create / PUT / PATCH / delete its saved query, list runs with filters (following the cursor), run details, batch
counts and exports. Runs are fetches of local pages (plain HTTP, Chromium with screenshots, a slow page that is
often cancelled while running) and rule-based extracts (no model). Submitting pauses while more than --max-pending
runs are not yet seen final, so the queue can drain in time; every other operation goes on. Afterwards the script
waits until every submitted run is succeeded, failed or cancelled, and greps serve.log. Exits non-zero on any
"database is locked", lost run, 5xx, request error or unexpected status.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

import requests

from tests.bench.goals import Result, print_table, rows
from tests.bench.soak import descendants
from tests.live import KEY, LiveService
from tests.site import TestSite

FINAL = {"succeeded", "failed", "cancelled"}
LOCKED = "database is locked"
RULE_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "x-selector": "h1.name"},
        "price": {"type": "string", "x-selector": ".price"},
    },
}
# Operation -> weight in each client's random mix.
MIX = {
    "submit": 10,
    "batch": 2,
    "replay": 3,
    "cancel": 2,
    "detail": 20,
    "history": 20,
    "batch_counts": 5,
    "export": 3,
    "query_write": 8,
    "query_read": 5,
}


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Ledger:
    """What all clients did, shared between their threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.submitted: set[str] = set()
        self.pending: set[str] = set()  # submitted, not yet seen in a final state
        self.batches: list[str] = []
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.server_errors: list[str] = []
        self.unexpected: list[str] = []
        self.exceptions: list[str] = []
        self.locked: list[str] = []

    def add_runs(self, run_ids: list[str]) -> None:
        with self.lock:
            self.submitted.update(run_ids)
            self.pending.update(run_ids)

    def saw(self, run: dict) -> None:
        if run["status"] in FINAL:
            with self.lock:
                self.pending.discard(run["id"])

    def pick_pending(self, rng: random.Random) -> str | None:
        with self.lock:
            return rng.choice(tuple(self.pending)) if self.pending else None

    def pick_submitted(self, rng: random.Random) -> str | None:
        with self.lock:
            return rng.choice(tuple(self.submitted)) if self.submitted else None


class Client:
    def __init__(self, number: int, service: LiveService, site: TestSite, ledger: Ledger, max_pending: int) -> None:
        self.number = number
        self.base_url = service.base_url
        self.site = site
        self.ledger = ledger
        self.max_pending = max_pending
        self.rng = random.Random(number)
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {KEY}"
        self.query_name = f"contention-{number}"
        self.query_exists = False
        self.pages = 0

    def call(self, endpoint: str, method: str, path: str, expected: tuple[int, ...], body=None):
        """One request, counted under `endpoint`; the response, or None when it did not get one."""
        url = path if path.startswith("http") else self.base_url + path
        started = time.perf_counter()
        try:
            response = self.session.request(method, url, json=body, timeout=60)
            text = response.text
        except requests.RequestException as error:
            with self.ledger.lock:
                self.ledger.exceptions.append(f"{endpoint}: {error!r}")
            return None
        elapsed = (time.perf_counter() - started) * 1000
        with self.ledger.lock:
            self.ledger.latencies[endpoint].append(elapsed)
            if LOCKED in text:
                self.ledger.locked.append(f"{endpoint} {response.status_code}: {text[:300]}")
            if response.status_code >= 500:
                self.ledger.server_errors.append(f"{endpoint} {response.status_code}: {text[:300]}")
            elif response.status_code not in expected:
                self.ledger.unexpected.append(f"{endpoint} {response.status_code}: {text[:300]}")
        return response

    def spec(self) -> dict:
        self.pages += 1
        page = self.site.url(f"/page/{self.number * 100_000 + self.pages}")
        roll = self.rng.random()
        if roll < 0.5:
            return {"kind": "fetch", "url": page, "options": {"screenshots": False}}
        if roll < 0.75:
            return {"kind": "fetch", "url": page, "options": {"render": "browser"}}
        if roll < 0.85:
            return {
                "kind": "fetch",
                "url": self.site.url(f"/slow?ms=3000&n={self.pages}"),
                "options": {"render": "http"},
            }
        return {"kind": "extract", "url": self.site.url("/product"), "schema": RULE_SCHEMA}

    def query_body(self) -> dict:
        return {"url": self.site.url("/product"), "schema": RULE_SCHEMA, "instruction": f"edit {self.rng.random()}"}

    def step(self) -> None:
        operation = self.rng.choices(list(MIX), weights=list(MIX.values()))[0]
        if operation in ("submit", "batch", "replay") and len(self.ledger.pending) >= self.max_pending:
            operation = "detail"
        getattr(self, operation)()

    def submit(self) -> None:
        response = self.call("POST /api/runs", "POST", "/api/runs", (201,), self.spec())
        if response is not None and response.status_code == 201:
            self.ledger.add_runs([response.json()["id"]])

    def batch(self) -> None:
        specs = [self.spec() for _ in range(5)]
        response = self.call("POST /api/batches", "POST", "/api/batches", (201,), {"runs": specs})
        if response is not None and response.status_code == 201:
            created = response.json()
            self.ledger.add_runs(created["runs"])
            with self.ledger.lock:
                self.ledger.batches.append(created["id"])

    def replay(self) -> None:
        if not self.query_exists:
            self.query_write()
            return
        path = f"/api/queries/{self.query_name}/run"
        response = self.call("POST /api/queries/:name/run", "POST", path, (201,), {})
        if response is not None and response.status_code == 201:
            self.ledger.add_runs([response.json()["id"]])

    def cancel(self) -> None:
        run_id = self.ledger.pick_pending(self.rng)
        if run_id:
            # 409: it finished (or changed state) between our pick and the cancel; both are correct answers.
            response = self.call("POST /api/runs/:id/cancel", "POST", f"/api/runs/{run_id}/cancel", (200, 409))
            if response is not None and response.status_code == 200:
                self.ledger.saw(response.json())

    def detail(self) -> None:
        run_id = self.ledger.pick_pending(self.rng) or self.ledger.pick_submitted(self.rng)
        if run_id:
            response = self.call("GET /api/runs/:id", "GET", f"/api/runs/{run_id}", (200,))
            if response is not None and response.status_code == 200:
                self.ledger.saw(response.json())

    def history(self) -> None:
        filters = self.rng.choice(["", "&status=queued", "&status=succeeded", "&kind=extract", "&status=cancelled"])
        with self.ledger.lock:
            if self.ledger.batches and self.rng.random() < 0.3:
                filters = f"&batch={self.rng.choice(self.ledger.batches)}"
        if self.query_exists and self.rng.random() < 0.1:
            filters = f"&query={self.query_name}"
        response = self.call("GET /api/runs", "GET", f"/api/runs?limit=20{filters}", (200,))
        if response is not None and response.status_code == 200:
            page = response.json()
            for run in page["results"]:
                self.ledger.saw(run)
            if page["next"] and self.rng.random() < 0.3:
                self.call("GET /api/runs (next page)", "GET", page["next"], (200,))

    def batch_counts(self) -> None:
        with self.ledger.lock:
            batch_id = self.rng.choice(self.ledger.batches) if self.ledger.batches else None
        if batch_id:
            self.call("GET /api/batches/:id", "GET", f"/api/batches/{batch_id}", (200,))

    def export(self) -> None:
        with self.ledger.lock:
            batch_id = self.rng.choice(self.ledger.batches) if self.ledger.batches else None
        fmt = self.rng.choice(["json", "csv"])
        filters = f"&batch={batch_id}" if batch_id else "&status=cancelled"
        self.call("GET /api/export", "GET", f"/api/export?format={fmt}{filters}", (200,))

    def query_write(self) -> None:
        path = f"/api/queries/{self.query_name}"
        if not self.query_exists:
            body = {"name": self.query_name, **self.query_body()}
            response = self.call("POST /api/queries", "POST", "/api/queries", (201,), body)
            self.query_exists = response is not None and response.status_code == 201
            return
        change = self.rng.choice(["put", "patch", "patch", "delete"])
        if change == "put":
            self.call("PUT /api/queries/:name", "PUT", path, (200,), self.query_body())
        elif change == "patch":
            self.call("PATCH /api/queries/:name", "PATCH", path, (200,), {"instruction": f"edit {self.rng.random()}"})
        else:
            response = self.call("DELETE /api/queries/:name", "DELETE", path, (204,))
            self.query_exists = not (response is not None and response.status_code == 204)

    def query_read(self) -> None:
        if self.query_exists and self.rng.random() < 0.5:
            self.call("GET /api/queries/:name", "GET", f"/api/queries/{self.query_name}", (200,))
        else:
            self.call("GET /api/queries", "GET", "/api/queries", (200,))


def log_exceptions(lines: list[str]) -> list[str]:
    """The exception line closing each traceback in a log."""
    found, inside = [], False
    for line in lines:
        if line.startswith("Traceback"):
            inside = True
        elif inside and line and not line[0].isspace():
            found.append(line)
            inside = False
    return found


def cpu_seconds(service: LiveService) -> dict[str, float]:
    """CPU time used so far by the web processes (daphne), by the rest of the service (serve, workers, Chromium) and
    by this process."""
    used = {"web (daphne)": 0.0, "workers and Chromium": 0.0}
    for pid in [service.process.pid, *descendants(service.process.pid)]:
        try:
            fields = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
            # `serve` starts each web process as `python -m service.web_server` (daphne under it)
            is_web = b"service.web_server" in (Path("/proc") / str(pid) / "cmdline").read_bytes()
        except OSError:
            continue
        # utime, stime and the same for its exited children (Chromium's renderers come and go)
        ticks = sum(int(value) for value in fields[11:15])
        used["web (daphne)" if is_web else "workers and Chromium"] += ticks / os.sysconf("SC_CLK_TCK")
    used["this load generator"] = time.process_time()
    return used


def cpu_share(before: dict[str, float], after: dict[str, float], seconds: float) -> str:
    return ", ".join(f"{name} {(after[name] - before[name]) / seconds * 100:.0f}%" for name in before)


def final_statuses(service: LiveService, ledger: Ledger) -> dict[str, dict]:
    """Every run in the service, by id (the whole history, 500 a page)."""
    runs: dict[str, dict] = {}
    url = f"{service.base_url}/api/runs?limit=500"
    while url:
        response = service.session.get(url, timeout=60)
        if LOCKED in response.text:
            ledger.locked.append(f"GET /api/runs (drain) {response.status_code}: {response.text[:300]}")
        response.raise_for_status()
        page = response.json()
        runs.update((run["id"], run) for run in page["results"])
        url = page["next"]
    return runs


def arguments() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--max-pending", type=int, default=60, help="Submit only while fewer runs are unfinished.")
    parser.add_argument("--drain-seconds", type=float, default=600, help="How long to wait for the last runs.")
    return parser


def measure(args: argparse.Namespace) -> dict[str, int | float]:
    ledger = Ledger()
    with TestSite() as site, tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(
            Path(data_dir),
            WORKERS=str(args.workers),
            API_RATE_LIMIT="0",
            RUN_LEASE_SECONDS="20",
            RUN_REAP_INTERVAL_SECONDS="2",
        ).start(timeout=120)
        try:
            clients = [Client(n, service, site, ledger, args.max_pending) for n in range(args.clients)]
            deadline = time.monotonic() + args.seconds

            def loop(client: Client) -> None:
                while time.monotonic() < deadline:
                    client.step()

            threads = [threading.Thread(target=loop, args=(client,)) for client in clients]
            load_average, cpu_before = os.getloadavg()[0], cpu_seconds(service)
            started = time.monotonic()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            load_seconds = time.monotonic() - started
            cpu = cpu_share(cpu_before, cpu_seconds(service), load_seconds)
            print(
                f"load done after {load_seconds:.0f} s; waiting for {len(ledger.pending)} unfinished runs", flush=True
            )

            drain_started = time.monotonic()
            while True:
                runs = final_statuses(service, ledger)
                unfinished = [run_id for run_id in ledger.submitted if runs.get(run_id, {}).get("status") not in FINAL]
                if not unfinished or time.monotonic() - drain_started > args.drain_seconds:
                    break
                time.sleep(2)
            drain_seconds = time.monotonic() - drain_started
        finally:
            service.stop()
        log_lines = service.log_path.read_text(errors="replace").splitlines()

    locked_log = [line for line in log_lines if LOCKED in line]
    exceptions_in_log = log_exceptions(log_lines)
    outcomes = Counter(runs[run_id]["status"] for run_id in ledger.submitted if run_id in runs)
    failures = Counter(
        runs[run_id]["error"]["code"]
        for run_id in ledger.submitted
        if run_id in runs and runs[run_id]["status"] == "failed"
    )
    requests_done = sum(len(values) for values in ledger.latencies.values())

    print(
        f"\n{args.clients} clients, {args.workers} workers, {load_seconds:.0f} s on the embedded SQLite "
        f"({os.cpu_count()} cores shared with this load generator; 1-minute load average at the start "
        f"{load_average:.1f})"
    )
    print(f"CPU used during the load, in % of one core: {cpu}")
    print("\n| endpoint | requests | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|")
    for endpoint, values in sorted(ledger.latencies.items()):
        print(
            f"| {endpoint} | {len(values)} | {statistics.median(values):.0f} | {percentile(values, 0.99):.0f} | "
            f"{max(values):.0f} |"
        )
    figures = {
        "requests done": requests_done,
        "requests/s": f"{requests_done / load_seconds:.1f}",
        "HTTP 5xx": len(ledger.server_errors),
        "unexpected status": len(ledger.unexpected),
        "request errors": len(ledger.exceptions),
        '"database is locked" in responses': len(ledger.locked),
        '"database is locked" in serve.log': len(locked_log),
        "tracebacks in serve.log": len(exceptions_in_log),
        "runs submitted": len(ledger.submitted),
        "runs final": sum(outcomes.values()),
        "  succeeded / failed / cancelled": " / ".join(str(outcomes[s]) for s in ("succeeded", "failed", "cancelled")),
        "  failed by error code": dict(failures) or "-",
        "lost (not final)": len(unfinished),
        "drain after load": f"{drain_seconds:.0f} s",
    }
    print("\n| figure | value |\n|---|---|")
    for name, value in figures.items():
        print(f"| {name} | {value} |")
    for title, lines in (
        ("5xx", ledger.server_errors),
        ("unexpected", ledger.unexpected),
        ("request errors", ledger.exceptions),
        ("locked (responses)", ledger.locked),
        ("locked (serve.log)", locked_log),
        ("lost", unfinished),
        ("serve.log", exceptions_in_log),
    ):
        for line in lines[:5]:
            print(f"{title}: {line}")
    return {
        '"database is locked" (responses + log)': len(ledger.locked) + len(locked_log),
        "runs lost (not final)": len(unfinished),
        "HTTP 5xx": len(ledger.server_errors),
        "requests/s": requests_done / load_seconds,
        "request errors and unexpected statuses": len(ledger.exceptions) + len(ledger.unexpected),
    }


def figures(full: bool = False) -> Result:
    quick = [] if full else ["--seconds", "20", "--clients", "8"]
    args = arguments().parse_args(quick)
    return Result(f"{args.clients} clients, {args.workers} workers, {args.seconds:g} s", measure(args))


def main() -> None:
    args = arguments().parse_args()
    found = measure(args)
    print_table(rows("contention", Result(f"{args.clients} clients, {args.seconds:g} s", found)))
    failed = any(found[name] for name in found if name != "requests/s")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
