"""Fetch throughput: the service against a plain Playwright script doing the same pages at the same concurrency.

    .venv/bin/python -m tests.bench.fetch_throughput [--dataset article-extraction|tiny] [--pages N] [--rounds 2]
                                                     [--guard on off]

What users run: real pages (../shared/datasets/article-extraction, news pages full of scripts and third-party
subresources; read from there and served ungzipped by a loopback HTTP server), submitted as one batch of fetch runs
with default options to `manage.py serve` in the default configuration: WORKERS=2, the production lease, the network
guard on with NETWORK_ALLOWLIST=127.0.0.1:<site port> so the local site is reachable (`--guard off` adds a service
with ALLOW_PRIVATE_NETWORKS=true next to it). `--dataset tiny` is the old figure on small local test pages
(tests/site.py), without subresources.

The plain script is what a user writes by hand: per page a fresh context, goto (load), a JPEG screenshot of the
viewport, page.content(), close; WORKERS pages at a time, each in a long-lived process that has started Playwright's
driver and launched the same Chromium with the same flags before the clock starts (as the service's workers have
theirs warm; names that do not resolve fail at once for both sides, see HOST_RULES). The processes wait at a
barrier; the clock starts when they are released together and stops when the last page is done: only the page loop
is timed. Rounds alternate (plain, service, plain, service…) over the same pages so machine noise hits both alike;
the ratio is taken per round. Pages/s counts the pages that loaded (succeeded) on each side.

Per page: the service's time is the run's startedAt -> finishedAt (worker time), the plain script's is new_context ->
close. The rounds' per-page times are not comparable page by page: the plain script waits the whole PAGE_TIMEOUT_MS
for a page whose load event never comes (p68 of article-extraction), and meanwhile its other process loads its pages
alone, uncontended, while the service's two workers go on two at a time. So "> 3x" is judged in a pass of its own
after the rounds: every page loaded alone, by the plain script and then by the service (one run, waited for), side by
side; a page is "> 3x" when the service's time is more than three times the plain script's.
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import statistics
import tempfile
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.bench.goals import Result, print_table, rows
from tests.bench.markdown_quality import plain_text, score
from tests.datasets import DATASETS
from tests.live import LiveService
from tests.site import TestSite

ARTICLES = DATASETS / "article-extraction" / "html"
WORKERS = 2  # the service's default; the plain script runs as many pages at a time
PAGE_TIMEOUT_MS = 60_000  # the service's default timeoutMs, for the plain script's goto
# This machine has no internet, and Chromium's own resolver takes ~4 s per page to give up on the third-party names of
# a real page where getaddrinfo (what the network guard uses) answers at once. Chromium that resolves names itself
# (the plain script, the service with the guard off) gets this rule, so that a name that does not resolve costs it
# what it costs the guard, and the slow resolver does not flatter the service.
HOST_RULES = "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
# The production defaults (tests/live.py shortens the lease for its tests).
POLL_S = 1.0  # how often a round looks whether its batch is done
ALONE_POLL_S = 0.2  # how often the per-page pass looks whether its one run is done
DEFAULTS = {"WORKERS": str(WORKERS), "RUN_LEASE_SECONDS": "20", "RUN_REAP_INTERVAL_SECONDS": "2"}


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        pass  # a page's beacon or a closed tab leaving mid-answer: nothing the benchmark needs to hear about


class DatasetSite:
    """Pages of a dataset, ungzipped, on a loopback HTTP server at /<n>.html. Anything else is a 404 (the pages'
    relative subresources): the same for both sides."""

    def __init__(self, files: list[Path]):
        self.pages = [gzip.decompress(path.read_bytes()) for path in files]
        self.ids = [path.name.removesuffix(".html.gz") for path in files]

    def __enter__(self) -> DatasetSite:
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name = self.path.split("?", 1)[0].lstrip("/")
                number = name.removesuffix(".html")
                if name.endswith(".html") and number.isdigit() and int(number) < len(pages):
                    body, status = pages[int(number)], 200
                else:
                    body, status = b"not found", 404
                self.send_response(status)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{self.port}/{n}.html" for n in range(len(self.pages))]


def _plain_worker(
    jobs: multiprocessing.Queue, results: multiprocessing.Queue, start: multiprocessing.Barrier, one_tab: bool
) -> None:
    """A user's script, kept alive between rounds: Playwright and Chromium start once, before any clock. one_tab: the
    script's pages one after the other in one tab (goto, screenshot, content), not each in a fresh context."""
    from playwright.sync_api import sync_playwright

    from runs.engine.browser import LAUNCH_ARGS, VIEWPORT, find_system_executable

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=find_system_executable(), args=[*LAUNCH_ARGS, HOST_RULES])
        while (urls := jobs.get()) is not None:
            times: dict[str, float] = {}
            failures: dict[str, str] = {}
            start.wait()
            tab = browser.new_context(viewport=VIEWPORT).new_page() if one_tab else None
            for url in urls:
                began = time.perf_counter()
                context = tab.context if tab is not None else browser.new_context(viewport=VIEWPORT)
                try:
                    page = tab or context.new_page()
                    page.goto(url, wait_until="load", timeout=PAGE_TIMEOUT_MS)
                    page.screenshot(type="jpeg", quality=60)
                    page.content()
                except Exception as error:  # the page failed for the plain script: count it, go on
                    failures[url] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
                finally:
                    if tab is None:
                        context.close()
                times[url] = time.perf_counter() - began
            if tab is not None:
                tab.context.close()
            results.put((times, failures))
        browser.close()


class PlainScript:
    """WORKERS long-lived processes, each with its own Chromium, released together by a barrier for each round."""

    def __init__(self, concurrency: int = WORKERS, *, one_tab: bool = False):
        spawn = multiprocessing.get_context("spawn")
        self.concurrency = concurrency
        self.start = spawn.Barrier(concurrency + 1)
        self.results = spawn.Queue()
        self.jobs = [spawn.Queue() for _ in range(concurrency)]
        self.processes = [
            spawn.Process(target=_plain_worker, args=(jobs, self.results, self.start, one_tab), daemon=True)
            for jobs in self.jobs
        ]
        for process in self.processes:
            process.start()

    def run(self, urls: list[str]) -> tuple[float, dict[str, float], dict[str, str]]:
        """Pages loaded per second, seconds per page and failures of one round over urls."""
        for number, jobs in enumerate(self.jobs):
            jobs.put(urls[number :: self.concurrency])
        self.start.wait(timeout=300)  # every process has its browser up and its pages in hand
        started = time.perf_counter()
        times: dict[str, float] = {}
        failures: dict[str, str] = {}
        for _ in self.jobs:
            their_times, their_failures = self.results.get(timeout=PAGE_TIMEOUT_MS / 1000 * len(urls) + 60)
            times.update(their_times)
            failures.update(their_failures)
        return (len(urls) - len(failures)) / (time.perf_counter() - started), times, failures

    def close(self) -> None:
        for jobs in self.jobs:
            jobs.put(None)
        for process in self.processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()


def service_round(
    service: LiveService,
    urls: list[str],
    phases: dict[str, list[float]] | None = None,
    markdown: dict[str, str] | None = None,
) -> tuple[float, dict[str, float], dict[str, str]]:
    """One batch of fetch runs with default options, as a user submits them: pages that succeeded per second, worker
    seconds per page, failures (url -> error code and message). Fills `phases` (seconds per run, by phase) when
    given."""
    started = datetime.now(UTC)
    response = service.session.post(
        f"{service.base_url}/api/batches", json={"runs": [{"kind": "fetch", "url": url} for url in urls]}, timeout=120
    )
    assert response.status_code == 201, response.text
    batch = response.json()["id"]
    # Waiting costs the service nothing measurable: one look a second (each look is a request the web process
    # answers on the same two cores as the workers' browsers), and the round ends when its last run finished (the
    # runs' own finishedAt, the service's clock, which is this machine's), not at the look that saw it.
    while True:
        counts = service.get(f"/api/batches/{batch}").json()["counts"]
        if counts["queued"] == counts["running"] == 0:
            break
        time.sleep(POLL_S)
    runs = []
    # A list shows a run without its result unless asked (?include=result): the Markdown is compared with the plain
    # script's.
    url = f"{service.base_url}/api/runs?batch={batch}&limit=500{'&include=result' if markdown is not None else ''}"
    while url:
        page = service.session.get(url, timeout=60).json()
        runs += page["results"]
        url = page["next"]
    elapsed = max(datetime.fromisoformat(run["finishedAt"]) for run in runs if run["finishedAt"]) - started
    elapsed = elapsed.total_seconds()
    times = {
        run["url"]: seconds_between(run["startedAt"], run["finishedAt"])
        for run in runs
        if run["startedAt"] and run["finishedAt"]
    }
    failures = {
        run["url"]: f"{(run['error'] or {}).get('code')}: {(run['error'] or {}).get('message', '')[:100]}"
        for run in runs
        if run["status"] != "succeeded"
    }
    if phases is not None:
        add_phases(service, runs, elapsed, phases)
    if markdown is not None:
        markdown.update((run["url"], run["result"]["markdown"]) for run in runs if run["status"] == "succeeded")
    return (len(urls) - len(failures)) / elapsed, times, failures


def per_page_pass(
    plain: PlainScript, services: dict[str, LiveService], urls: list[str]
) -> tuple[dict[str, float], dict[str, dict[str, tuple[float, dict]]]]:
    """Every page alone on each side, one after the other: the plain script's seconds per page, and per guard the
    service's worker seconds per page with the run's step durations (navigate, snapshot)."""
    plain_alone: dict[str, float] = {}
    service_alone: dict[str, dict[str, tuple[float, dict]]] = {guard: {} for guard in services}
    for url in urls:
        times, _ = plain.run([url])[1:]
        plain_alone.update(times)
        for guard, service in services.items():
            run_id = service.submit({"kind": "fetch", "url": url})["id"]
            while (run := service.get(f"/api/runs/{run_id}").json())["status"] in ("queued", "running"):
                time.sleep(ALONE_POLL_S)
            if run["startedAt"] and run["finishedAt"]:
                steps = {step["action"]: step["durationMs"] / 1000 for step in run["steps"]}
                service_alone[guard][url] = (seconds_between(run["startedAt"], run["finishedAt"]), steps)
    return plain_alone, service_alone


def add_phases(service: LiveService, runs: list[dict], elapsed: float, phases: dict[str, list[float]]) -> None:
    """Where a run's time goes: the navigate step (context ready -> page settled, read and screenshot), the snapshot
    step (HTML -> Markdown), the rest of the worker's time on the run (context set-up and close, recording steps and
    events, finishing), and the time the workers held no run (queue pickup, idle at the round's start and end),
    per run."""
    worker_total = 0.0
    for run in runs:
        if not (run["startedAt"] and run["finishedAt"]):
            continue
        detail = service.get(f"/api/runs/{run['id']}").json()
        steps = {step["action"]: step["durationMs"] / 1000 for step in detail["steps"]}
        worker = seconds_between(run["startedAt"], run["finishedAt"])
        worker_total += worker
        phases.setdefault("navigate step", []).append(steps.get("navigate", 0.0))
        phases.setdefault("snapshot step", []).append(steps.get("snapshot", 0.0))
        phases.setdefault("worker, outside the steps", []).append(
            worker - steps.get("navigate", 0.0) - steps.get("snapshot", 0.0)
        )
    phases.setdefault("workers holding no run", []).append((elapsed * WORKERS - worker_total) / max(1, len(runs)))


def seconds_between(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def start_service(data_dir: Path, guard: str, site_port: int) -> LiveService:
    data_dir.mkdir()
    env = dict(DEFAULTS)
    if guard == "on":
        env.update(ALLOW_PRIVATE_NETWORKS="false", NETWORK_ALLOWLIST=f"127.0.0.1:{site_port}")
    else:
        env.update(ALLOW_PRIVATE_NETWORKS="true")
    service = LiveService(data_dir, **env)
    # With the guard on, Chromium sends every request to the guard and resolves nothing itself: no rule, as in
    # production (the marker, an unknown switch Chromium ignores, lets tests/live.py find this instance's processes).
    service.env["BROWSER_ARGS"] = service.marker if guard == "on" else f"'{HOST_RULES}' {service.marker}"
    return service.start(timeout=120)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure(dataset: str, pages: int, rounds: int, guards: list[str]) -> dict[str, float | int | str]:
    """Plain script and service(s) side by side; prints the detail, returns the figures by name."""
    label = "real pages" if dataset == "article-extraction" else "tiny pages"
    if dataset == "article-extraction":
        site_context = DatasetSite(sorted(ARTICLES.glob("*.html.gz"))[:pages])
    else:
        site_context = TestSite()
    figures: dict[str, float | int | str] = {}
    with site_context as site, tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as tmp:
        if dataset == "article-extraction":
            urls, port = site.urls(), site.port
        else:
            urls, port = [site.url(f"/page/{n}") for n in range(pages)], site.server.server_address[1]
        warm_url = urls[0]
        services: dict[str, LiveService] = {}
        plain = PlainScript()
        try:
            for guard in guards:
                services[guard] = start_service(Path(tmp) / guard, guard, port)
                for _ in range(2 * WORKERS):  # warm the workers' browsers
                    services[guard].wait(services[guard].submit({"kind": "fetch", "url": warm_url})["id"], timeout=120)
            plain.run([warm_url] * WORKERS)  # and the plain processes' (their first context, first page)
            plain_rates, plain_times, plain_failed = [], {}, {}
            ours = {guard: {"rates": [], "times": {}, "failed": {}, "phases": {}, "markdown": {}} for guard in guards}
            for round_ in range(rounds):
                rate, times, failed = plain.run(urls)
                plain_rates.append(rate)
                plain_failed.update(failed)
                for url, seconds in times.items():
                    plain_times.setdefault(url, []).append(seconds)
                line = f"round {round_ + 1}: plain {rate:.2f} pages/s ({len(failed)} failed)"
                for guard in guards:
                    side = ours[guard]
                    rate, times, failed = service_round(services[guard], urls, side["phases"], side["markdown"])
                    ours[guard]["rates"].append(rate)
                    ours[guard]["failed"].update(failed)
                    for url, seconds in times.items():
                        ours[guard]["times"].setdefault(url, []).append(seconds)
                    line += f"; service guard {guard} {rate:.2f} pages/s ({len(failed)} failed)"
                print(line, flush=True)
            plain_alone, service_alone = per_page_pass(plain, services, urls)
        finally:
            plain.close()
            for service in services.values():
                service.stop()
        for guard, service in services.items():
            log = service.log_path.read_text(errors="replace")
            if "Traceback" in log:  # an internal_error's story: the first one in the service's log
                print(f"service guard {guard}, first traceback in serve.log:\n{log[log.index('Traceback') :][:3000]}")
    plain_median = {url: statistics.median(times) for url, times in plain_times.items()}
    print(
        f"{label}, {len(urls)} pages x {rounds} rounds, {WORKERS} at a time on each side; plain Playwright: "
        f"{statistics.mean(plain_rates):.2f} pages/s, per page p50 {statistics.median(plain_median.values()):.2f} s "
        f"p90 {percentile(list(plain_median.values()), 0.9):.2f} s max {max(plain_median.values()):.2f} s, "
        f"failed {len(plain_failed)}"
    )
    figures[f"{label}, guard {guards[0]}: plain Playwright pages/s"] = statistics.mean(plain_rates)
    for url, error in sorted(plain_failed.items()):
        print(f"  plain failed {url}: {error}")
    for guard in guards:
        side = ours[guard]
        ratios = [service / plain for service, plain in zip(side["rates"], plain_rates, strict=True)]
        service_median = {url: statistics.median(times) for url, times in side["times"].items()}
        alone = service_alone[guard]
        slow = sorted(
            (alone[url][0] / plain_alone[url], url)
            for url in alone
            if url in plain_alone and url not in plain_failed and alone[url][0] > 3 * plain_alone[url]
        )
        alone_ratios = [alone[url][0] / plain_alone[url] for url in alone if url in plain_alone]
        lost = sorted(set(side["failed"]) - set(plain_failed))
        print(
            f"service, guard {guard}: {statistics.mean(side['rates']):.2f} pages/s; ratio per round "
            f"{', '.join(f'{r:.2f}' for r in ratios)} (median {statistics.median(ratios):.2f}); per page (worker time) "
            f"p50 {statistics.median(service_median.values()):.2f} s p90 "
            f"{percentile(list(service_median.values()), 0.9):.2f} s max {max(service_median.values()):.2f} s; "
            f"failed {len(side['failed'])} ({len(lost)} that plain loaded)"
        )
        print(
            f"  each page alone (service worker time / plain time): median {statistics.median(alone_ratios):.2f}, "
            f"p90 {percentile(alone_ratios, 0.9):.2f}, max {max(alone_ratios):.2f}; {len(slow)} pages > 3x"
        )
        print(
            "  per run, mean: "
            + ", ".join(f"{phase} {statistics.mean(values):.3f} s" for phase, values in side["phases"].items())
            + f"; plain script per page {statistics.mean(plain_median.values()):.3f} s"
        )
        for ratio, url in slow[-10:]:
            seconds, steps = alone[url]
            split = ", ".join(f"{action} {duration:.2f} s" for action, duration in steps.items())
            print(f"  {ratio:5.1f}x  {url}  alone: service {seconds:.2f} s ({split}), plain {plain_alone[url]:.2f} s")
        for url in lost:
            print(f"  failed {url}: {side['failed'][url]}")
        figures[f"{label}, guard {guard}: service pages/s"] = statistics.mean(side["rates"])
        figures[f"{label}, guard {guard}: service/plain"] = statistics.median(ratios)
        figures[f"{label}, guard {guard}: pages > 3x their plain time"] = len(slow)
        # The median per page, free of the rounds' concurrency: the rounds' pages/s ratio leans on the pages where the
        # plain script waits its whole timeout (p68 of article-extraction, in the full set).
        figures[f"{label}, guard {guard}: each page alone, service/plain time"] = statistics.median(alone_ratios)
        figures[f"{label}, guard {guard}: pages failed that plain loaded"] = len(lost)
        if dataset == "article-extraction":
            quality = markdown_f1(site, side["markdown"])
            print(f"  the service's Markdown (main content, rendered page) against the ground truth: F1 {quality:.3f}")
            figures[f"{label}, guard {guard}: service Markdown F1"] = quality
    return figures


def markdown_f1(site: DatasetSite, markdown: dict[str, str]) -> float:
    """Mean 4-word-shingle F1 of the runs' Markdown against the dataset's articleBody (tests.bench.markdown_quality's
    metric on the HTML the browser rendered, not the saved file): what a faster load must not cost. Pages that
    failed score 0."""
    truth = json.loads((ARTICLES.parent / "ground-truth.json").read_text())
    scores = [
        score(plain_text(markdown.get(url, "")), truth[page_id]["articleBody"])[2]
        for url, page_id in zip(site.urls(), site.ids, strict=True)
    ]
    return statistics.mean(scores)


def figures(full: bool = False) -> Result:
    if not full:
        pages = 10
        return Result(f"{pages} real pages x 2 rounds, guard on", measure("article-extraction", pages, 2, ["on"]))
    found = measure("article-extraction", 181, 2, ["on", "off"])
    found.update(
        (name, value)
        for name, value in measure("tiny", 200, 2, ["off"]).items()
        if name.endswith(("service/plain", "failed that plain loaded"))
    )
    return Result("181 real pages x 2 rounds, guard on and off; 200 tiny pages x 2", found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", choices=["article-extraction", "tiny"], default="article-extraction")
    parser.add_argument("--pages", type=int, default=181, help="The first N pages of the dataset (tiny: N pages).")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--guard", nargs="+", choices=["on", "off"], default=["on"], help="on: the default config.")
    args = parser.parse_args()
    found = measure(args.dataset, args.pages, args.rounds, args.guard)
    print()
    print_table(rows("fetch_throughput", Result(f"{args.pages} pages x {args.rounds} rounds", found)))


if __name__ == "__main__":
    main()
