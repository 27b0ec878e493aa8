"""The whole service as a user runs it: `manage.py serve` in a subprocess, spoken to over HTTP."""

from __future__ import annotations

import functools
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests

from service.processes import stop_when_parent_dies

ROOT = Path(__file__).resolve().parents[1]
KEY = "live-test-key-0123456789"


def browser_sign_in(base_url: str, key: str, session: requests.Session | None = None) -> requests.Response:
    """Sign a requests session in as the playground does: GET /api/session sets the CSRF cookie, the sign-in
    echoes it in X-CSRFToken."""
    session = session if session is not None else requests.Session()
    session.get(f"{base_url}/api/session", timeout=30)
    return session.post(
        f"{base_url}/api/session",
        json={"key": key},
        headers={"X-CSRFToken": session.cookies.get("csrftoken", "")},
        timeout=30,
    )


# For the tests that kill a worker (or let serve kill one at the end of its grace period) and wait for its run to
# be re-queued: with the production lease (RUN_LEASE_SECONDS, 20 s) each would wait 20 s. Every other live service
# keeps the production lease, which a loaded machine cannot lapse by accident (a lapsed lease is a correct retry,
# and would break a test that counts attempts). The heartbeat renews every second, so 5 s leaves four renewals.
SHORT_LEASE_SECONDS = 5
# With a short lease the reaper looks often too, so a re-queue follows the expiry at once (production: 2 s).
SHORT_LEASE_REAP_INTERVAL_SECONDS = 0.5


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


PROBE_PAGE = b"<html><head><title>Probe</title></head><body><main><h1>Probe</h1><p>Answered.</p></main></body></html>"


class _ProbeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # keep test output quiet
        pass

    def do_GET(self):
        site: ProbeSite = self.server.owner
        kind, _, key = self.path.strip("/").partition("/")
        if kind == "hang-once":
            with site.lock:
                first = key not in site.seen
                site.seen.add(key)
            if first:
                # Headers and half a page, then nothing: the load event never fires.
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", "100000")
                self.end_headers()
                self.wfile.write(b"<html><head><title>Hanging</title></head><body><p>Still loading")
                self.wfile.flush()
                time.sleep(ProbeSite.HOLD_SECONDS)
                return
        elif kind == "together":
            with site.lock:
                barrier = site.barriers.setdefault(key, threading.Barrier(site.parties))
            try:
                barrier.wait(timeout=ProbeSite.HOLD_SECONDS)
            except threading.BrokenBarrierError:
                self._send(503, b"<html><head><title>Alone</title></head><body>no one else came</body></html>")
                return
        else:
            self._send(404, b"<html><body>unknown</body></html>")
            return
        self._send(200, PROBE_PAGE)

    def _send(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class ProbeSite:
    """Pages on 127.0.0.1 that show what the workers are doing:
    - /hang-once/<key>: the first request hangs (a run on it is surely still running when a test kills its worker),
      every later one answers at once (the retry is quick).
    - /together/<key>: answers only when `parties` requests for the key are in flight at the same time, so that many
      runs of it finish only if that many workers run them at once (a worker stuck elsewhere makes them time out).
    """

    HOLD_SECONDS = 120  # how long a request is held before the server lets go (only so no thread lives forever)

    def __init__(self, parties: int = 2):
        self.parties = parties
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.barriers: dict[str, threading.Barrier] = {}
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), _ProbeHandler)
        self.http.daemon_threads = True
        self.http.owner = self
        self._thread = threading.Thread(target=self.http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}{path}"

    def wait_until_requested(self, path: str, timeout: float = 60) -> None:
        """Until /hang-once/<key> has been asked for (a run is marked running before its browser starts: only
        from the request on is it surely loading the page)."""
        key = path.strip("/").partition("/")[2]
        deadline = time.monotonic() + timeout
        while key not in self.seen:
            assert time.monotonic() < deadline, f"nobody asked for {path}"
            time.sleep(0.05)

    def __enter__(self) -> ProbeSite:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.http.shutdown()
        self.http.server_close()


def service_pids(data_dir: Path) -> list[int]:
    """Every process of one service instance (serve, daphne, the workers and their Chromium): they all carry
    SERVICE_DATA_DIR in their environment."""
    needle = f"SERVICE_DATA_DIR={data_dir}\0".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if needle in (entry / "environ").read_bytes() + b"\0":
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def chromium_pids(marker: str) -> list[int]:
    """Chromium processes started by one service instance (its BROWSER_ARGS carry a unique marker)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if marker in cmdline and "chrom" in cmdline:
            pids.append(int(entry.name))
    return pids


class LiveService:
    """lease_seconds: RUN_LEASE_SECONDS, only for tests that kill workers (SHORT_LEASE_SECONDS); the production
    default otherwise."""

    def __init__(self, data_dir: Path, *, grace: float = 10, lease_seconds: int | None = None, **env: str):
        self.data_dir = data_dir
        self.grace = grace
        self.port = free_port()
        self.marker = f"--wds-test-instance={uuid.uuid4().hex}"
        self.env = {
            **{
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("SERVICE_", "DATABASE_URL", "REDIS_URL", "PROMETHEUS_MULTIPROC_DIR"))
            },
            "SERVICE_HOST": "127.0.0.1",
            "SERVICE_PORT": str(self.port),
            "SERVICE_DATA_DIR": str(data_dir),
            "SERVICE_API_KEY": KEY,
            "ALLOW_PRIVATE_NETWORKS": "true",
            "WORKERS": "2",
            # One web process unless a test asks for more (tests/service/test_web_processes.py): each one more
            # costs a second of start-up, and most tests are about one request at a time.
            "WEB_PROCESSES": "1",
            **(
                {
                    "RUN_LEASE_SECONDS": str(lease_seconds),
                    "RUN_REAP_INTERVAL_SECONDS": str(SHORT_LEASE_REAP_INTERVAL_SECONDS),
                }
                if lease_seconds is not None
                else {}
            ),
            "BROWSER_ARGS": f"'--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1' {self.marker}",
            "LOG_LEVEL": "WARNING",
            **env,
        }
        self.env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        # LIVE_BACKEND=postgres-redis (make test's second pass) puts every live service on a scratch PostgreSQL
        # database with Redis as the channel layer; a test that passes its own DATABASE_URL keeps it.
        self.scratch: ScratchPostgres | None = None
        if os.environ.get("LIVE_BACKEND") == "postgres-redis" and "DATABASE_URL" not in env:
            self.scratch = ScratchPostgres()
            self.env["DATABASE_URL"] = self.scratch.url
            self.env.setdefault("REDIS_URL", REDIS_URL)
        self.process: subprocess.Popen | None = None
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {KEY}"
        self.log_path = data_dir / "serve.log"

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> LiveService:
        if self.scratch is not None:
            self.scratch.__enter__()
        self.log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--grace", str(self.grace)],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            preexec_fn=functools.partial(stop_when_parent_dies, os.getpid()),  # a killed test run leaves no service
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited: {self.log_path.read_text()[-2000:]}")
            try:
                health = requests.get(self.base_url + "/api/health", timeout=1).json()
                if health["workers"] >= 1:
                    return self
            except (requests.ConnectionError, requests.Timeout, ValueError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"serve did not become healthy: {self.log_path.read_text()[-2000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 40) -> float:
        """Stop serve; returns how long it took."""
        started = time.monotonic()
        if self.process and self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        if self.scratch is not None:
            self.scratch.__exit__(None, None, None)
            self.scratch = None
        return time.monotonic() - started

    def database_text(self) -> str:
        """Everything in the service's database, as text (to prove a secret is not in it)."""
        return database_text(self.env.get("DATABASE_URL") or str(self.data_dir / "db.sqlite3"))

    def execute_many(self, sql: str, rows: list[tuple]) -> None:
        """Write rows straight into the service's database (sql with ? placeholders)."""
        database_url = self.env.get("DATABASE_URL")
        if database_url:
            import psycopg

            with psycopg.connect(database_url) as db, db.cursor() as cursor:
                cursor.executemany(sql.replace("?", "%s"), rows)
        else:
            with sqlite3.connect(self.data_dir / "db.sqlite3", timeout=30) as db:
                db.executemany(sql, rows)

    def get(self, path: str, **kwargs) -> requests.Response:
        return self.session.get(self.base_url + path, timeout=10, **kwargs)

    def post(self, path: str, json=None, **kwargs) -> requests.Response:
        return self.session.post(self.base_url + path, json=json, timeout=10, **kwargs)

    def submit(self, spec: dict) -> dict:
        response = self.post("/api/runs", spec)
        assert response.status_code == 201, response.text
        return response.json()

    def wait(self, run_id: str, statuses=("succeeded", "failed", "cancelled"), timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            run = self.get(f"/api/runs/{run_id}").json()
            if run["status"] in statuses:
                return run
            time.sleep(0.05)
        raise AssertionError(f"run {run_id} did not reach {statuses}: {run['status']}")

    def scalar(self, sql: str, *params):
        """One value read from the service's database (SQLite or PostgreSQL), with ? placeholders; string parameters
        are ids (UUIDs, which SQLite keeps without their dashes)."""
        database_url = self.env.get("DATABASE_URL")
        if database_url:
            import psycopg

            with psycopg.connect(database_url) as db:
                row = db.execute(sql.replace("?", "%s"), params).fetchone()
        else:
            with sqlite3.connect(self.data_dir / "db.sqlite3") as db:
                ids = tuple(param.replace("-", "") if isinstance(param, str) else param for param in params)
                row = db.execute(sql, ids).fetchone()
        return row[0] if row else None

    def worker_pid(self, run_id: str) -> int:
        """The pid of the worker process holding a run (recorded on the row as host:pid)."""
        worker = self.scalar("select worker from runs_run where id = ?", run_id)
        return int(worker.rsplit(":", 1)[1])

    @property
    def events_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/api/events"


POSTGRES_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_URL = "redis://127.0.0.1:6379/7"


def postgres_available() -> bool:
    try:
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN_URL, connect_timeout=3):
            return True
    except Exception:
        return False


def redis_available() -> bool:
    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=3) as connection:
            connection.sendall(b"PING\r\n")
            return connection.recv(16).startswith(b"+PONG")
    except OSError:
        return False


class ScratchPostgres:
    """A fresh PostgreSQL database for one test module, dropped afterwards."""

    def __init__(self) -> None:
        self.name = f"wds_test_{uuid.uuid4().hex[:12]}"
        self.url = f"postgresql://postgres@127.0.0.1:5432/{self.name}"

    def __enter__(self) -> ScratchPostgres:
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{self.name}"')
        return self

    def __exit__(self, *exc) -> None:
        import psycopg

        with psycopg.connect(POSTGRES_ADMIN_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{self.name}" WITH (FORCE)')


def database_text(where: str) -> str:
    """Every row of every table as text: a PostgreSQL URL, or the path of a SQLite file."""
    if where.startswith("postgres"):
        import psycopg

        with psycopg.connect(where) as db:
            tables = [row[0] for row in db.execute("select tablename from pg_tables where schemaname = 'public'")]
            return "\n".join(str(row[0]) for table in tables for row in db.execute(f'select t::text from "{table}" t'))
    with sqlite3.connect(where) as db:
        return "\n".join(db.iterdump())


def django_database_text() -> str:
    """database_text for the test process's own database (pytest-django's test database)."""
    from django.db import connection

    settings = connection.settings_dict
    if connection.vendor == "postgresql":
        host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432
        return database_text(f"postgresql://{settings['USER']}@{host}:{port}/{settings['NAME']}")
    return database_text(str(settings["NAME"]))


# The README is the contract: what it documents about the CLI, read from it (not from the commands' own parsers).
README = ROOT / "README.md"
# README (## CLI), under the table: "`fetch`, `extract` and `agent` runs ... on standard error when it is a terminal
# (nothing when it is not, nor with `--quiet` or `--json` ...); `--queue` hands it to the workers ..., and
# `--queue --wait` follows it there ... `--json` prints the whole run with its steps."
README_RUN_COMMANDS = ("fetch", "extract", "agent", "runs reextract")
README_RUN_OPTIONS = ("--queue", "--wait", "--json", "--quiet")


def _readme_section(heading: str) -> str:
    text = README.read_text()
    return text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]  # with its ### subsections


def readme_cli_options() -> dict[str, dict[str, list[str]]]:
    """Each command's options as the README documents them, with the values it lists (`--render browser|http`):
    {"fetch": {"--render": ["browser", "http"], "--out": [], ...}, "runs export": {...}, "query save": {...}}."""
    cli = _readme_section("## CLI")
    documented: dict[str, dict[str, list[str]]] = {}

    def add(command: str, text: str) -> None:
        options = documented.setdefault(command, {})
        for option in re.findall(r"--[a-z][a-z-]*", text):
            options.setdefault(option, [])
        for option, values in re.findall(r"(--[a-z][a-z-]*) ([a-z]+(?:\\\|[a-z]+)+)", text):
            options[option] = values.split("\\|")

    # The table: | `fetch <url> [--full] [--render browser\|http] ...` | does |
    for code in re.findall(r"^\| `([^`]+)` \|", cli, flags=re.MULTILINE):
        words = []
        for word in code.split():
            if not re.fullmatch(r"[a-z]+", word):
                break
            words.append(word)
        add(" ".join(words), code)
    # The paragraph under the table: options every run command takes (it names others too, for one command each).
    (paragraph,) = [part for part in cli.split("\n\n") if "`--queue`" in part]
    assert all(f"{option}`" in paragraph for option in README_RUN_OPTIONS), "README_RUN_OPTIONS: read the README again"
    for command in README_RUN_COMMANDS:
        add(command, " ".join(README_RUN_OPTIONS))
    # The examples of saved queries and history: .venv/bin/python manage.py query run shoe --wait  # or --storage-state
    for command, rest in re.findall(r"manage\.py ((?:query|runs) [a-z]+)(.*)$", cli, flags=re.MULTILINE):
        add(command, rest)
    return {command: options for command, options in documented.items() if options or command.count(" ")}


def help_entries(text: str) -> dict[str, tuple[str, str]]:
    """argparse's --help output read as a user reads it: option -> (how it is written, its explanation)."""
    entries: dict[str, tuple[str, str]] = {}
    current: list[str] = []
    for line in text.split("\noptions:\n", 1)[1].splitlines():
        if line.startswith("  -"):
            invocation, _, explanation = line.strip().partition("  ")
            current = [token.rstrip(",") for token in invocation.split() if token.startswith("-")]
            for option in current:
                entries[option] = (invocation, explanation.strip())
        elif line.startswith("    ") and current:
            for option in current:
                invocation, explanation = entries[option]
                entries[option] = (invocation, f"{explanation} {line.strip()}".strip())
        else:
            current = []
    return entries
