"""Fetch throughput: the service (2 workers) against a plain Playwright script with the same concurrency.

    .venv/bin/python -m tests.bench.fetch_throughput [--pages 200] [--rounds 2]

Both load the same local pages in the same Chromium with the same flags. The plain script is what a user
would write by hand: per page a fresh context, goto (load), page.content(), close. The service does all of
its work per page: queue, claim, settle wait, screenshot, Markdown, links, steps, events, result.
Rounds alternate (plain, service, plain, service…) so machine noise hits both alike.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from runs.engine.browser import LAUNCH_ARGS, find_system_executable
from tests.live import LiveService
from tests.site import TestSite

HOST_RULES = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"


def _plain_worker(urls: list[str]) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=find_system_executable(), args=[*LAUNCH_ARGS, HOST_RULES])
        for url in urls:
            context = browser.new_context()
            page = context.new_page()
            page.goto(url, wait_until="load")
            page.content()
            context.close()
        browser.close()


def plain_script(urls: list[str], concurrency: int) -> float:
    shares = [urls[i::concurrency] for i in range(concurrency)]
    # Browsers start before the clock, as the service's workers have theirs warm after the first page.
    processes = [multiprocessing.Process(target=_plain_worker, args=(share[:1],)) for share in shares]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    started = time.perf_counter()
    processes = [multiprocessing.Process(target=_plain_worker, args=(share,)) for share in shares]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    return len(urls) / (time.perf_counter() - started)


def service_run(service: LiveService, urls: list[str], options: dict) -> float:
    database = service.data_dir / "db.sqlite3"
    with sqlite3.connect(database) as db:
        done_before = db.execute("select count(*) from runs_run where finished_at is not null").fetchone()[0]
    started = time.perf_counter()
    for url in urls:
        service.submit({"kind": "fetch", "url": url, "options": options})
    while True:
        with sqlite3.connect(database) as db:
            done = db.execute("select count(*) from runs_run where finished_at is not null").fetchone()[0]
            failed = db.execute("select count(*) from runs_run where status != 'succeeded'").fetchone()[0]
        if done - done_before >= len(urls):
            break
        time.sleep(0.05)
    elapsed = time.perf_counter() - started
    if failed:
        raise SystemExit(f"{failed} runs did not succeed")
    return len(urls) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-screenshots", action="store_true")
    args = parser.parse_args()
    with TestSite() as site, tempfile.TemporaryDirectory() as data_dir:
        service = LiveService(Path(data_dir), WORKERS="2").start()
        try:
            # Warm the workers' browsers.
            for _ in range(4):
                service.wait(service.submit({"kind": "fetch", "url": site.url("/page/0")})["id"])
            plain, ours = [], []
            for round_ in range(args.rounds):
                urls = [site.url(f"/page/{round_ * args.pages + n}") for n in range(args.pages)]
                plain.append(plain_script(urls, concurrency=2))
                ours.append(service_run(service, urls, {"screenshots": not args.no_screenshots}))
                print(
                    f"round {round_ + 1}: plain {plain[-1]:.1f} pages/s, service {ours[-1]:.1f} pages/s, "
                    f"ratio {ours[-1] / plain[-1]:.2f}"
                )
        finally:
            service.stop()
    ratios = sorted(o / p for o, p in zip(ours, plain, strict=True))
    print(
        f"ratio per round {', '.join(f'{r:.2f}' for r in ratios)}; median {statistics.median(ratios):.2f} "
        "(goal >= 0.85)"
    )


if __name__ == "__main__":
    main()
