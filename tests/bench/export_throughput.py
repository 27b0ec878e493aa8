"""Export throughput: GET /api/export of 100,000 runs as JSON and as CSV — rows per second and the peak RSS
growth of the process that serves it.

    .venv/bin/python -m tests.bench.export_throughput [--runs 100000] [--modes inprocess,live]

The runs are a fixed mix written straight into a fresh SQLite database: 40% fetch runs (about 1 KB of
Markdown and ten links each), 20% extract runs with an object, 20% with a list of three objects, 10% agent
runs, 10% failed runs with no result — 1.4 CSV rows per run. Each export is measured twice:

- inprocess: Django's test client (WSGI-style) in a fresh process, the streaming response consumed chunk by
  chunk, the RSS being that process's: the view and the export generators with nothing around them;
- live: `manage.py serve` (tests/live.py) read over HTTP with requests, the RSS being daphne's.

In both, the client parses the body as it arrives (CSV records; JSON array elements, each decoded) and the export
fails unless the rows received are the rows seeded: an export that answers `[]` or a cut body is a failure, not a
speed. Inprocess, where the client is the serving process, the time spent parsing is taken off the figure.

Peak RSS growth is VmHWM after the export (reset through /proc/<pid>/clear_refs first) less VmRSS before,
cross-checked by sampling VmRSS every 10 ms. "first byte" is when the first body chunk arrived: an export
that is collected before it is sent shows it there. Rows per CPU-second of the serving process is the figure
to compare on a busy machine, where wall-clock rows/s depends on what else runs.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import csv
import json
import multiprocessing
import os
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

from tests.bench.goals import Result, print_table, rows
from tests.live import KEY, LiveService

FORMATS = ("json", "csv")
GOAL = "goal >= 20,000 rows/s, RSS growth <= 50 MB"


def configure_django(data_dir: Path) -> None:
    """Point this process's Django at the benchmark's data directory (as LiveService does for serve)."""
    for name in [name for name in os.environ if name.startswith(("SERVICE_", "DATABASE_URL", "REDIS_URL"))]:
        del os.environ[name]
    os.environ.update(SERVICE_DATA_DIR=str(data_dir), SERVICE_API_KEY=KEY, LOG_LEVEL="WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "service.settings")
    import django

    django.setup()


MARKDOWN = (
    '# Page {n}\n\nA paragraph with a comma, a "quoted" word and a line break,\nthen more text. ' * 6
    + "\n\n- item one\n- item two, with = sign\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
)


def seed_result(n: int) -> tuple[str, str, object, dict | None, int]:
    """kind, status, result, error and CSV row count of the n-th run."""
    url = f"https://shop.example/item/{n}"
    share = n % 10
    if share < 4:
        links = [f"https://shop.example/item/{n + k}" for k in range(1, 11)]
        result = {
            "url": url,
            "finalUrl": url,
            "status": 200,
            "title": f"Item {n}",
            "markdown": MARKDOWN,
            "links": links,
        }
        return "fetch", "succeeded", result, None, 1
    product = {
        "name": f"Widget {n}, large",
        "price": n / 100,
        "currency": "EUR",
        "inStock": n % 3 == 0,
        "brand": {"name": "Acme", "country": "DE"},
        "tags": ["tools", "garden"],
    }
    if share < 6:
        return "extract", "succeeded", product, None, 1
    if share < 8:
        return "extract", "succeeded", [product, {**product, "name": "Other"}, {**product, "price": None}], None, 3
    if share < 9:
        return "agent", "succeeded", {"answer": f"The order {n} was placed.", "orderId": n}, None, 1
    return "fetch", "failed", None, {"code": "navigation_failed", "message": "net::ERR_NAME_NOT_RESOLVED"}, 1


def seed(count: int) -> int:
    """Write count runs; the number of CSV rows they export to."""
    from runs.models import Run

    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows = 0
    pending = []
    for n in range(count):
        kind, status, result, error, records = seed_result(n)
        rows += records
        url = f"https://shop.example/item/{n}"
        created = start + timedelta(seconds=n)
        pending.append(
            Run(
                id=uuid.UUID(int=n + 1),
                kind=kind,
                status=status,
                spec={"kind": kind, "url": url, "options": {"mainContent": True, "render": "auto"}},
                url=url,
                attempts=1,
                result=result,
                error=error,
                usage={"inputTokens": 0, "outputTokens": 0, "browserMs": 812},
                created_at=created,
                started_at=created + timedelta(milliseconds=40),
                finished_at=created + timedelta(milliseconds=900),
            )
        )
        if len(pending) == 2000:
            Run.objects.bulk_create(pending)
            pending = []
    Run.objects.bulk_create(pending)
    return rows


def read_status(pid: int, field: str) -> int:
    """A VmRSS/VmHWM figure of a process, in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


class Failed(Exception):
    """An export that did not come back whole."""


@dataclass
class Figures:
    seconds: float
    first_byte: float
    body_bytes: int
    rows: int
    rss_growth: int
    sampled_growth: int
    cpu_seconds: float


class RssWatch:
    """Peak RSS of a process while a block runs: VmHWM (reset on entry when the kernel allows) and samples."""

    def __init__(self, pid: int):
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()

    def __enter__(self) -> RssWatch:
        with contextlib.suppress(OSError):  # not every kernel lets us reset VmHWM; the samples remain
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        self.before = read_status(self.pid, "VmRSS")
        self.peak = self.before
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, read_status(self.pid, "VmRSS"))

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, read_status(self.pid, "VmRSS"))
        self.high_water = read_status(self.pid, "VmHWM")


def csv_lines(chunks: Iterable[bytes]) -> Iterator[str]:
    """Lines of a UTF-8 body arriving in arbitrary chunks (for counting the CSV rows as they come)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    tail = ""
    for chunk in chunks:
        lines = (tail + decoder.decode(chunk)).splitlines(keepends=True)
        tail = lines.pop() if lines and not lines[-1].endswith("\n") else ""
        yield from lines
    if tail + decoder.decode(b"", final=True):
        yield tail


def json_rows(chunks: Iterable[bytes]) -> int:
    """The number of elements of a JSON array arriving in arbitrary chunks, each element parsed (json.raw_decode)
    and only the unparsed tail kept, so a large export does not grow the reader's memory."""
    decoder, text_decoder = json.JSONDecoder(), codecs.getincrementaldecoder("utf-8")()
    text, rows, opened, closed = "", 0, False, False
    for chunk in chunks:
        text += text_decoder.decode(chunk)
        position = 0
        while True:
            while position < len(text) and text[position] in " \t\r\n,":
                position += 1
            if position >= len(text) or closed:
                break
            if not opened:
                if text[position] != "[":
                    raise Failed(f"the JSON export is not an array: it starts with {text[position:][:40]!r}")
                opened, position = True, position + 1
            elif text[position] == "]":
                closed, position = True, position + 1
            else:
                try:
                    _, position = decoder.raw_decode(text, position)
                except json.JSONDecodeError:
                    break  # an element cut by the chunk's end: wait for the rest
                rows += 1
        text = text[position:]
    if not closed or text.strip():
        raise Failed(f"the JSON export is not one whole array (closed: {closed}; left over: {text[:80]!r})")
    return rows


def consume(fmt: str, chunks: Iterable[bytes]) -> tuple[int, int, float, float]:
    """Read a body to the end, parsing it as it comes: bytes, rows received (CSV records less the header, or JSON
    array elements), first-byte time, and the time spent waiting for chunks (not parsing them)."""
    started = time.perf_counter()
    first_byte = waiting = 0.0
    size = 0

    def counted() -> Iterator[bytes]:
        nonlocal first_byte, size, waiting
        source = iter(chunks)
        while True:
            asked = time.perf_counter()
            chunk = next(source, None)
            waiting += time.perf_counter() - asked
            if chunk is None:
                return
            if not first_byte:
                first_byte = time.perf_counter() - started
            size += len(chunk)
            yield chunk

    # CSV: records less the header; JSON: array elements
    rows = sum(1 for _ in csv.reader(csv_lines(counted()))) - 1 if fmt == "csv" else json_rows(counted())
    return size, rows, first_byte, waiting


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_export(
    pid: int, fmt: str, expected_rows: int, request: Callable[[], Iterable[bytes]], *, client_in_process: bool
) -> Figures:
    """One export, its rows counted as they arrive. When the client is the serving process itself (inprocess), the
    time spent parsing is taken off the elapsed time (the figure is the export's, not our reader's); its CPU time
    still includes the parsing."""
    with RssWatch(pid) as watch:
        started, cpu_before = time.perf_counter(), cpu_seconds(pid)
        size, rows, first_byte, waiting = consume(fmt, request())
        seconds, cpu = time.perf_counter() - started, cpu_seconds(pid) - cpu_before
    if client_in_process:
        seconds = waiting
    if rows != expected_rows:
        raise Failed(f"expected {expected_rows} rows, received {rows}")
    return Figures(seconds, first_byte, size, rows, watch.high_water - watch.before, watch.peak - watch.before, cpu)


def _inprocess(data_dir: Path, fmt: str, expected_rows: int, results: multiprocessing.Queue) -> None:
    try:
        configure_django(data_dir)
        from django.test import Client

        client = Client(HTTP_AUTHORIZATION=f"Bearer {KEY}", HTTP_HOST="127.0.0.1")

        def request(**filters: str) -> Iterable[bytes]:
            response = client.get("/api/export", {"format": fmt, **filters})
            if response.status_code != 200:
                raise Failed(f"HTTP {response.status_code}: {response.content[:200]!r}")
            yield from response.streaming_content
            response.close()

        b"".join(request(status="queued"))  # warm up: imports, first queries
        results.put(measure_export(os.getpid(), fmt, expected_rows, request, client_in_process=True))
    except Exception as error:
        results.put(Failed(str(error)))


def inprocess(data_dir: Path, fmt: str, expected_rows: int) -> Figures:
    """One export in a fresh process, so that its RSS growth is the export's alone."""
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    child = spawn.Process(target=_inprocess, args=(data_dir, fmt, expected_rows, results))
    child.start()
    figures = results.get(timeout=600)
    child.join()
    if isinstance(figures, Failed):
        raise figures
    return figures


def daphne_pid(serve_pid: int) -> int:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == serve_pid and b"service.web_server" in cmdline:  # daphne, as `serve` starts it
            return int(entry.name)
    raise SystemExit("no daphne process under serve")


def live(service: LiveService, pid: int, fmt: str, expected_rows: int) -> Figures:
    service.session.get(f"{service.base_url}/api/export?format={fmt}&status=queued", timeout=60)  # warm up

    def request() -> Iterable[bytes]:
        with service.session.get(f"{service.base_url}/api/export?format={fmt}", stream=True, timeout=600) as response:
            if response.status_code != 200:
                raise Failed(f"HTTP {response.status_code}: {response.content[:200]!r}")
            yield from response.iter_content(chunk_size=1 << 16)

    return measure_export(pid, fmt, expected_rows, request, client_in_process=False)


def report(mode: str, fmt: str, runs: int, measured: Callable[[], Figures]) -> dict[str, float | str]:
    try:
        figures = measured()
    except Failed as error:
        print(f"  {fmt:4} {mode:9} failed: {error}", flush=True)
        return {f"{fmt} {mode} rows/s": f"failed: {error}"[:80], f"{fmt} {mode} RSS growth MB": "failed"}
    print(
        f"  {fmt:4} {mode:9} {figures.seconds:6.2f} s  {figures.rows / figures.seconds:7,.0f} rows/s "
        f"({runs / figures.seconds:,.0f} runs/s, {figures.body_bytes / figures.seconds / 1e6:.0f} MB/s of "
        f"{figures.body_bytes / 1e6:.0f} MB; {figures.rows / figures.cpu_seconds:,.0f} rows per CPU-second of "
        f"the serving process)  first byte {figures.first_byte:.2f} s  "
        f"peak RSS +{figures.rss_growth / 1e6:.0f} MB (sampled +{figures.sampled_growth / 1e6:.0f} MB)",
        flush=True,
    )
    return {
        f"{fmt} {mode} rows/s": figures.rows / figures.seconds,
        f"{fmt} {mode} RSS growth MB": figures.rss_growth / 1e6,
    }


def measure(runs: int, modes: list[str]) -> dict[str, float | str]:
    found: dict[str, float | str] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        configure_django(data_dir)
        from django.core.management import call_command
        from django.db import connections

        call_command("migrate", verbosity=0)
        seeding = time.perf_counter()
        csv_rows = seed(runs)
        connections.close_all()
        print(
            f"export of {runs:,} runs ({csv_rows:,} CSV rows), SQLite; seeded in "
            f"{time.perf_counter() - seeding:.0f} s  ({GOAL})",
            flush=True,
        )
        expected = {"json": runs, "csv": csv_rows}
        if "inprocess" in modes:
            for fmt in FORMATS:
                found.update(report("inprocess", fmt, runs, partial(inprocess, data_dir, fmt, expected[fmt])))
        if "live" in modes:
            service = LiveService(data_dir).start()
            try:
                pid = daphne_pid(service.process.pid)
                for fmt in FORMATS:
                    found.update(report("live", fmt, runs, partial(live, service, pid, fmt, expected[fmt])))
            finally:
                service.stop()
    return found


def figures(full: bool = False) -> Result:
    runs = 100_000 if full else 20_000
    return Result(f"{runs:,} runs", measure(runs, ["inprocess", "live"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--modes", default="inprocess,live", help="comma-separated: inprocess, live")
    args = parser.parse_args()
    found = measure(args.runs, args.modes.split(","))
    print()
    print_table(rows("export_throughput", Result(f"{args.runs:,} runs", found)))


if __name__ == "__main__":
    main()
