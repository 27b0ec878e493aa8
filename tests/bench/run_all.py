"""Every benchmark, one table: each figure next to the goal an issue named for it.

    .venv/bin/python -m tests.bench [--full] [--only NAME ...]      (make bench, make bench FULL=1)

Quick mode (the default) runs each benchmark on a small sample so that the whole table comes in a few minutes; the
sample is named next to each benchmark, and a figure from a small sample is a smoke reading, not the full figure.
Benchmarks that only make sense long (the 30-minute soak, the 1/2/4-worker scaling) are not run in quick mode and
say so. --full runs each with the sizes the issues asked for (an hour or more). Each benchmark runs in a process of
its own (the export benchmark sets up Django in its process; a crash in one does not lose the others' figures).
The machine may be shared: compare the ratios measured side by side, not absolute rates.
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import queue
import sys
import time
import traceback

from tests.bench.goals import NOT_RUN_QUICK, Result, print_table, rows

# In the order they run: pure-CPU ones first, then those that start the service.
BENCHMARKS = (
    "markdown_quality",
    "product_extraction",
    "fetch_throughput",
    "crawl",
    "queue_pickup",
    "event_latency",
    "agent_overhead",
    "compiled_replay",
    "batch_submit",
    "sync_fetch",
    "export_throughput",
    "worker_death",
    "contention",
    "load",
    "web_tier",
    "schedules",
    "scale_workers",
    "soak",
)
# Too long to mean anything on a small sample.
FULL_ONLY = {"scale_workers", "soak"}


def _measure(name: str, full: bool, results: multiprocessing.Queue) -> None:
    try:
        module = importlib.import_module(f"tests.bench.{name}")
        results.put(module.figures(full=full))
    except BaseException as error:  # SystemExit from a module's own checks included: report it, do not lose it
        traceback.print_exc()
        results.put(f"error: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:120])


def measure(name: str, full: bool) -> Result | str:
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    child = spawn.Process(target=_measure, args=(name, full, results))
    child.start()
    while True:
        try:
            result = results.get(timeout=5)
            break
        except queue.Empty:
            if child.is_alive():
                continue
            try:  # it may have answered just before it exited
                result = results.get(timeout=1)
            except queue.Empty:
                result = f"error: the benchmark's process exited with {child.exitcode}"
            break
    child.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--full", action="store_true", help="The sizes the issues asked for (an hour or more).")
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, metavar="NAME", help="Run only these benchmarks.")
    args = parser.parse_args()
    selected = [name for name in BENCHMARKS if not args.only or name in args.only]
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    table = []
    started = time.monotonic()
    for name in selected:
        if not args.full and name in FULL_ONLY:
            table += rows(name, NOT_RUN_QUICK)
            continue
        print(f"\n=== {name} ({'full' if args.full else 'quick'})", flush=True)
        began = time.monotonic()
        result = measure(name, args.full)
        print(f"=== {name}: {time.monotonic() - began:.0f} s", flush=True)
        table += rows(name, result)
    load = os.getloadavg()
    print(
        f"\n{'Full' if args.full else 'Quick'} mode, {time.monotonic() - started:.0f} s; {os.cpu_count()} cores, "
        f"load average now {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (a shared machine slows the absolute "
        "figures: trust the ratios measured side by side more)\n"
    )
    print_table(table)
    sys.exit(1 if any(row[2].startswith("error") for row in table) else 0)


if __name__ == "__main__":
    main()
