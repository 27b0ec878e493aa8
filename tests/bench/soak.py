"""Soak: 2 workers fetching in a loop for N minutes; worker RSS, Chromium processes, open file descriptors and the
SQLite WAL size sampled every minute, with the growth from the first to the last sample (goal: flat, < 10%).

    .venv/bin/python -m tests.bench.soak [--minutes 30]
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import requests

from tests.bench.goals import Result, print_table, rows
from tests.live import LiveService, chromium_pids
from tests.site import TestSite


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def rss_kb(pid: int) -> int:
    try:
        for line in (Path("/proc") / str(pid) / "status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def fds(pid: int) -> int:
    try:
        return len(list((Path("/proc") / str(pid) / "fd").iterdir()))
    except OSError:
        return 0


def python_workers(service: LiveService) -> list[int]:
    """The serve process and its Python descendants (daphne, the cluster and its worker processes)."""
    pids = [service.process.pid, *descendants(service.process.pid)]
    result = []
    for pid in pids:
        try:
            if "python" in (Path("/proc") / str(pid) / "cmdline").read_bytes().decode(errors="replace"):
                result.append(pid)
        except OSError:
            continue
    return result


def chromium_processes(service: LiveService) -> list[int]:
    """Every Chromium process under serve: browsers, renderers, GPU and utility processes."""
    found = []
    for pid in descendants(service.process.pid):
        try:
            if "chrom" in (Path("/proc") / str(pid) / "comm").read_text():
                found.append(pid)
        except OSError:
            continue
    return found


def slope_per_hour(samples: list[dict], key: str) -> float:
    """Least-squares slope of one measure against the minute, scaled to an hour."""
    xs, ys = [s["minute"] for s in samples], [s[key] for s in samples]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return 60 * sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread if spread else 0.0


def measure(minutes: float) -> dict[str, float]:
    with TestSite() as site, tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(Path(data_dir), WORKERS="2").start()
        stop = threading.Event()
        done = [0]

        def loop() -> None:
            n = 0
            while not stop.is_set():
                batch = [{"kind": "fetch", "url": site.url(f"/page/{n + k}")} for k in range(4)]
                try:
                    ids = service.post("/api/batches", {"runs": batch}).json()["runs"]
                    for run_id in ids:
                        service.wait(run_id, timeout=120)
                        done[0] += 1
                except requests.ConnectionError:
                    if stop.is_set():  # the service is stopping at the end of the soak
                        return
                    raise
                n += 4

        feeder = threading.Thread(target=loop, daemon=True)
        feeder.start()
        samples = []
        try:
            end = time.monotonic() + minutes * 60
            while True:
                pythons = python_workers(service)
                wal = Path(data_dir) / "db.sqlite3-wal"
                sample = {
                    "minute": len(samples),
                    "runs": done[0],
                    "python_rss_mb": sum(rss_kb(pid) for pid in pythons) / 1024,
                    "chromium": len(chromium_pids(service.marker)),
                    "chromium_all": len(chromium_processes(service)),
                    "fds": sum(fds(pid) for pid in pythons),
                    "wal_mb": wal.stat().st_size / 1e6 if wal.exists() else 0.0,
                }
                samples.append(sample)
                print(
                    f"min {sample['minute']:3}  runs {sample['runs']:6}  python RSS {sample['python_rss_mb']:7.1f} MB  "
                    f"chromium {sample['chromium']:3} ({sample['chromium_all']:3} processes)  "
                    f"fds {sample['fds']:4}  WAL {sample['wal_mb']:6.1f} MB",
                    flush=True,
                )
                if time.monotonic() >= end:
                    break
                time.sleep(min(60, max(0.0, end - time.monotonic())))
        finally:
            stop.set()
            service.stop()
    steady = samples[1:] if len(samples) > 2 else samples  # minute 0 is start-up
    first, last = steady[0], steady[-1]
    found: dict[str, float] = {}
    names = {
        "python_rss_mb": "python RSS growth %",
        "chromium": "Chromium processes growth %",
        "fds": "open fds growth %",
        "wal_mb": "WAL size growth %",
    }
    for key in ("python_rss_mb", "chromium", "chromium_all", "fds", "wal_mb"):
        growth = (last[key] - first[key]) / first[key] * 100 if first[key] else 0.0
        if key in names:
            found[names[key]] = growth
        print(
            f"{key:>14}: {first[key]:8.1f} -> {last[key]:8.1f}  ({growth:+.1f}%)  "
            f"slope {slope_per_hour(steady, key):+.2f}/h"
        )
    print(f"{last['runs']} runs in {minutes:g} min")
    return found


def figures(full: bool = False) -> Result:
    return Result("30 minutes", measure(30))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--minutes", type=float, default=30)
    args = parser.parse_args()
    print_table(rows("soak", Result(f"{args.minutes:g} minutes", measure(args.minutes))))


if __name__ == "__main__":
    main()
