"""A crawl run: from its start URL, every page in scope as a run of its own (`parent` = the crawl): a fetch run, or an
extract run when the crawl has a schema.

The decisions (normalisation, scope, robots, traps, politeness, the frontier) are runs/engine/crawl_rules.py's; this
module does the I/O around them in the crawl's worker:
- robots.txt of the start URL's origin (unless respectRobots is false) and its sitemaps, /sitemap.xml (sitemap auto
  or only; sitemap indexes followed, a few levels), fetched over plain HTTP through the network guard;
- each page as a child run (render auto: plain HTTP, Chromium for a JavaScript shell; http; browser), submitted and
  executed here, in the crawl's own worker (a crawl never waits for a free worker, nor holds one that its pages wait
  for): up to MAX_IN_FLIGHT pages at a time, as per-host concurrency and delay allow, each in a thread; their
  Markdown conversions in the worker's converter processes, CONVERTERS of them started at its first crawl (Python's
  conversion is CPU-bound: threads alone would hold a crawl to one core); their browser work on the crawl's own
  Chromiums (BROWSERS), so a page that needs a browser never holds up the plain-HTTP ones; each of them reads its
  pages one after the other in one tab (TAB_PAGES, then a fresh one), as one browser session goes through a site,
  not each in a fresh context: a fresh context costs Chromium a new renderer process per page. The links of each
  page are offered to the frontier;
- a step of the crawl per page: what was found, queued and skipped with the reason;
- the frontier written at most every SAVE_SECONDS (CrawlFrontier). A crawl taken over after its worker died goes on
  from it: a page whose child run already finished is not fetched again (its links are taken from its result), one
  whose child run is unfinished is waited for or run again.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.util
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from contextvars import copy_context
from dataclasses import dataclass, field

import requests
from django.conf import settings
from django.db import connection

from runs import archive, services
from runs.engine.browser import BrowserThread
from runs.engine.crawl_rules import (
    CrawlEntry,
    CrawlScope,
    Frontier,
    RobotsRules,
    canonical_of,
    links_and_canonical,
    normalize_url,
    parse_sitemap,
    robots_url_of,
)
from runs.engine.fetch import conversions, page_loaded
from runs.engine.http_fetch import USER_AGENT
from runs.engine.netguard import REFUSED_HEADER, guarded_session
from runs.engine.spec import RunAborted
from runs.models import CrawlFrontier, Run
from runs.resources import network_policy

log = logging.getLogger(__name__)

# robots.txt groups are matched by product token: the service's own name, else the rules for every crawler.
ROBOTS_AGENT = "web-data-service"
SITEMAP_DEPTH = 3  # sitemap indexes followed this many levels
SITEMAP_TIMEOUT_SECONDS = 15
IDLE_SECONDS = 0.2  # how long the loop sleeps when no host may start a page yet
MAX_IN_FLIGHT = 16  # pages of a crawl loaded at a time, whatever the hosts allow
CONVERTERS = max(1, os.cpu_count() or 1)  # processes converting a crawl's pages to Markdown
BROWSERS = 2  # Chromiums a crawl starts for its pages that need one (render browser, or auto and a JS shell)
TAB_PAGES = 50  # pages each of them reads in one tab, one after the other, before a fresh one (fetch.py _page_tab)
SAVE_SECONDS = 1.0  # the frontier is written at most this often while pages finish
# ... and at most this share of the crawl's time goes to writing it: a frontier of many thousand URLs takes tens of
# milliseconds to write, which is then done less often (a crawl taken over re-reads the links of the pages finished
# since, from their child runs: it loses no page either way).
SAVE_SHARE = 0.05


def _get(url: str) -> tuple[int | None, bytes, dict]:
    """A plain GET through the network guard: (status or None when unreachable, body, headers)."""
    session = guarded_session(network_policy())
    session.headers["User-Agent"] = USER_AGENT
    try:
        response = session.get(url, timeout=SITEMAP_TIMEOUT_SECONDS)
    except requests.RequestException:
        return None, b"", {}
    finally:
        session.close()
    if response.headers.get(REFUSED_HEADER):
        return None, b"", {}
    return response.status_code, response.content[:50_000_000], dict(response.headers)


def new_frontier(spec: dict) -> Frontier:
    options = spec["crawl"]
    scope = CrawlScope.of(
        spec["url"],
        scope=options["scope"],
        max_depth=options["maxDepth"],
        include=options["include"],
        exclude=options["exclude"],
    )
    return Frontier(
        scope=scope,
        max_pages=options["maxPages"],
        per_host_concurrency=options["perHostConcurrency"],
        delay_ms=options["delayMs"],
        respect_robots=options["respectRobots"],
        user_agent=ROBOTS_AGENT,
    )


_converters: ProcessPoolExecutor | None = None
_converters_lock = threading.Lock()


def converter_processes(count: int) -> ProcessPoolExecutor:
    """This process's pool of processes that convert crawled pages to Markdown, started (all of them) at its first
    crawl and kept for the next ones; started again if one of them died (the pool is then broken).

    A django-q worker is a daemonic process, which multiprocessing forbids to have children: the flag is lifted while
    they start (from this thread, now, not later from a page's thread). They end when this process exits, or with it
    when it dies: their pipe to it closes."""
    global _converters
    with _converters_lock:
        if _converters is not None and not getattr(_converters, "_broken", False):
            return _converters
        pool = ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn"))
        config = multiprocessing.current_process()._config  # type: ignore[attr-defined]
        daemon = config.get("daemon")
        config["daemon"] = False
        try:
            for started in [pool.submit(int) for _ in range(count)]:
                started.result()
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
        finally:
            if daemon is not None:
                config["daemon"] = daemon
        # A multiprocessing child (a django-q worker) leaves through multiprocessing's own exit, which joins its
        # non-daemonic children without running atexit: shut the pool down first, among its finalizers.
        multiprocessing.util.Finalize(pool, pool.shutdown, kwargs={"cancel_futures": True}, exitpriority=10)
        _converters = pool
        return pool


@dataclass
class PageDone:
    """A page's child run, finished, with its links and canonical URL. A fetch page's result has both; an extract
    page's result is the data, so they are read from the page it archived (None when it archived none)."""

    run: Run
    links: list[str] | None = None
    canonical: str | None = None

    @classmethod
    def of(cls, run: Run) -> PageDone:
        result = run.result if isinstance(run.result, dict) else {}
        if run.kind == Run.Kind.FETCH and "canonical" in result:  # its links and canonical URL are in its result
            return cls(run, canonical=normalize_url(result["canonical"]) if result["canonical"] else None)
        step = run.steps.filter(page__isnull=False).order_by("-index").first() if run.is_final else None
        copy = archive.read_page(step) if step is not None else None
        if copy is None:
            return cls(run)
        if run.kind == Run.Kind.FETCH:  # a result from before fetch results said their canonical URL
            return cls(run, canonical=canonical_of(copy.html, copy.url))
        links, canonical = links_and_canonical(copy.html, copy.url)
        return cls(run, links, canonical)


@dataclass
class PageInFlight:
    """A page started by the crawl: its entry, the browser lane it was given, and whether its host was released."""

    entry: CrawlEntry
    lane: BrowserThread
    loaded: Future = field(default_factory=Future)  # set by the page's thread once it is loaded
    released: bool = False  # its place in its host's concurrency given back (loaded, or ended before)

    def announce_loaded(self) -> None:
        if not self.loaded.done():
            self.loaded.set_result(None)


class Crawl:
    """One attempt of a crawl run. execute: how a child run is executed in this process (runs.jobs.execute_run)."""

    def __init__(self, run: Run, recorder, execute: Callable[..., str]):
        self.run = run
        self.recorder = recorder
        self.execute = execute
        self.options = run.spec["crawl"]
        self.frontier = new_frontier(run.spec)
        self.skipped: Counter[str] = Counter()
        self.found = 0
        # url -> its child runs' ids, one per attempt (a 429/503 page is tried again as a new run).
        self.children: dict[str, list[str]] = {}
        self.saved_at = 0.0
        self.save_took = 0.0  # seconds the last save of the frontier took
        self.page_spec: dict | None = None  # see _page_spec

    # Discovery

    def _learn_robots(self, url: str) -> RobotsRules | None:
        robots_url = self.frontier.robots_needed(url)
        if robots_url is None:
            return self.frontier.robots.get(robots_url_of(url))
        status, body, _ = _get(robots_url)
        rules = RobotsRules.from_response(status, body.decode("utf-8", "replace"))
        self.frontier.learn_robots(robots_url, rules)
        return rules

    def _sitemap_pages(self) -> list[str]:
        start = self.frontier.scope.start_url
        origin = robots_url_of(start).removesuffix("/robots.txt")
        rules = self.frontier.robots.get(robots_url_of(start))
        pending = [*(rules.sitemaps() if rules else []), f"{origin}/sitemap.xml"]
        seen: set[str] = set()
        pages: list[str] = []
        for _ in range(SITEMAP_DEPTH):
            nested: list[str] = []
            for sitemap_url in pending:
                if sitemap_url in seen:
                    continue
                seen.add(sitemap_url)
                status, body, _ = _get(sitemap_url)
                if status != 200:
                    continue
                found, more = parse_sitemap(body)
                pages.extend(found)
                nested.extend(more)
            pending = nested
        return pages

    def _offer(self, urls: list[str], depth: int, found_from: str | None) -> dict[str, int]:
        """Offer URLs to the frontier; (reason or "queued") -> count."""
        outcome: Counter[str] = Counter()
        for url in urls:
            self.found += 1
            # robots.txt of the hosts in scope only: a link off the site makes no request.
            if self.frontier.respect_robots and self.frontier.scope.could_contain(url):
                normal = normalize_url(url)
                if normal and self.frontier.scope.contains(normal):
                    self._learn_robots(normal)
            decision = self.frontier.offer(url, depth, found_from)
            outcome[decision.reason or "queued"] += 1
            if decision.reason:
                self.skipped[decision.reason] += 1
        return dict(outcome)

    def _step(self, action: str, url: str, lines: list[str], started: float) -> None:
        self.recorder.step(
            action=action,
            url=url,
            observation="\n".join(lines),
            screenshot=None,
            duration_ms=int((time.monotonic() - started) * 1000),
        )

    def start(self) -> None:
        started = time.monotonic()
        lines = []
        if self.options["respectRobots"]:
            self._learn_robots(self.run.url)
            lines.append(f"robots.txt read: {robots_url_of(self.frontier.scope.start_url)}")
        lines.append(f"start: {self._offer([self.run.url], 0, None)}")
        if self.options["sitemap"] != "off":
            pages = self._sitemap_pages()
            lines.append(f"sitemaps: {len(pages)} pages listed: {self._offer(pages, 1, 'sitemap')}")
        self._step("discover", self.run.url, lines, started)

    # Pages

    def _child(self, entry) -> str:
        """The id of the entry's child run for this attempt: the one an earlier attempt of the crawl made, else a
        new one (queued, not enqueued: this crawl runs it)."""
        made = self.children.setdefault(entry.url, [])
        if len(made) > entry.attempts:
            return made[entry.attempts]
        # Not held to QUEUE_MAX_DEPTH: it never waits in the queue, and waiting for room could wait on runs queued
        # behind this very crawl (one worker).
        child = services.page_submit(page_spec=self._page_spec(), url=entry.url, crawl=self.run)
        made.append(str(child.pk))
        return str(child.pk)

    def _page_spec(self) -> dict:
        """The spec of the crawl's pages (a fetch, or an extract with the crawl's schema), checked once."""
        if self.page_spec is None:
            spec: dict = {"kind": "fetch", "url": self.run.url, "options": {**self._page_options()}}
            if "schema" in self.run.spec:
                spec.update(kind="extract", schema=self.run.spec["schema"])
                if self.run.spec.get("instruction"):
                    spec["instruction"] = self.run.spec["instruction"]
            # A crawl that starts from a profile (or a storage state) reads every page with it.
            spec.update({key: self.run.spec[key] for key in ("profile", "storageStatePath") if key in self.run.spec})
            self.page_spec = services.checked_spec(spec)
        return self.page_spec

    def _page_options(self) -> dict:
        options = self.run.spec.get("options") or {}
        kept = {key: options[key] for key in ("mainContent", "timeoutMs") if key in options}
        return {**kept, "render": self.options.get("render", "http")}

    def _run_child(self, child_id: str, page: PageInFlight) -> PageDone:
        """Execute the child run here (a page thread) and return it finished. One already finished (a crawl taken
        over) is returned as it is; one another worker is running is waited for. The page's lane: the crawl's
        browser its browser work (if any) goes to, on that browser's thread, while the rest of it (plain HTTP,
        conversion, recording) stays in this one; its loaded signal is given by the engine (page_loaded)."""
        page_loaded.set(page.announce_loaded)
        try:
            while True:
                child = Run.objects.get(pk=child_id)
                if child.is_final:
                    return PageDone.of(child)
                if child.status == Run.Status.QUEUED:  # new, handed back, or re-queued after its worker died
                    self.execute(child_id, lane=page.lane)
                    continue
                time.sleep(IDLE_SECONDS)
        finally:
            connection.close()

    def resume(self) -> bool:
        """Load the frontier of an earlier attempt (and the child runs it made); False when there is none."""
        saved = CrawlFrontier.objects.filter(run=self.run).first()
        if saved is None:
            return False
        self.frontier.restore(saved.state)
        self.found = saved.state.get("found", 0)
        self.skipped = Counter(saved.state.get("skipped", {}))
        for child_id, url in Run.objects.filter(parent=self.run).order_by("created_at").values_list("pk", "url"):
            self.children.setdefault(url, []).append(str(child_id))
        return True

    def save(self, *, now: float | None = None) -> None:
        """Persist the frontier, at most every SAVE_SECONDS (or less often, see SAVE_SHARE) unless now is None. Pages
        finished since the last save are not lost: a crawl taken over finds their child runs finished, and takes
        their links from them."""
        if now is not None and now - self.saved_at < max(SAVE_SECONDS, self.save_took / SAVE_SHARE):
            return
        started = time.monotonic()
        # With the counts of discovery, so that a crawl taken over sums up all of it, not its last attempt's.
        state = {**self.frontier.snapshot(), "found": self.found, "skipped": dict(self.skipped)}
        CrawlFrontier.objects.update_or_create(run=self.run, defaults={"state": state})
        self.saved_at = time.monotonic()
        self.save_took = self.saved_at - started

    def page(self, entry, done: PageDone) -> None:
        """A page finished: report it to the frontier, offer its links (unless its canonical URL is a page seen
        already: then it is a duplicate of that one), record the crawl's step."""
        started = time.monotonic()
        child = done.run
        result = child.result if isinstance(child.result, dict) else {}
        error = child.error or {}
        status = result.get("status") or error.get("httpStatus") or error.get("code") or child.status
        retried = self.frontier.report(entry.url, status, now=time.time(), retry_after=error.get("retryAfter"))
        lines = [f"page {child.status}: run {child.pk} (depth {entry.depth})"]
        canonical = self.frontier.note_canonical(entry.url, done.canonical) if not retried else None
        links = result.get("links") if child.kind == Run.Kind.FETCH else done.links
        if retried:
            lines.append(f"HTTP {status}: the host is backed off, and the page tried again later")
        elif canonical is not None and canonical.reason:
            self.skipped["canonical"] += 1
            lines.append(f"a duplicate of its canonical URL {done.canonical}, seen already: its links not followed")
        elif child.status == Run.Status.SUCCEEDED and self.options["sitemap"] != "only":
            if links is None:
                lines.append("links unknown: the page was not archived (ARCHIVE_RETENTION_DAYS=0) or is gone")
            else:
                lines.append(f"{len(links)} links: {self._offer(links, entry.depth + 1, entry.url)}")
        elif error:
            lines.append(f"{error.get('code')}: {error.get('message')}")
        self.save(now=time.monotonic())
        self._step("page", entry.url, lines, started)

    def loop(self) -> None:
        """Start pages as the frontier allows (per-host concurrency and delay), at most MAX_IN_FLIGHT at a time, each
        in a thread of its own; conversions go to the processes of converter_processes (CONVERTERS). A page frees
        its place in its host's concurrency once it is loaded, not when it is converted and recorded."""
        in_flight: dict[Future, PageInFlight] = {}
        # Each its own Chromium, started when a page first needs one (render browser, or auto and a JS shell).
        lanes = [
            BrowserThread(
                settings.BROWSER_EXECUTABLE,
                settings.BROWSER_ARGS,
                settings.BROWSER_SANDBOX,
                max_waiting=MAX_IN_FLIGHT,
                tab_pages=TAB_PAGES,
            )
            for _ in range(min(BROWSERS, self.options["perHostConcurrency"]))
        ]
        loading: Counter[BrowserThread] = Counter({lane: 0 for lane in lanes})  # pages of each lane not loaded yet
        token = conversions.set(None)
        try:
            with ThreadPoolExecutor(MAX_IN_FLIGHT, thread_name_prefix="crawl-page") as pages:
                conversions.set(converter_processes(CONVERTERS))
                try:
                    while True:
                        self.recorder.checkpoint()
                        while len(in_flight) < MAX_IN_FLIGHT:
                            entry = self.frontier.next_ready(time.time())
                            if entry is None:
                                break
                            page = PageInFlight(entry, lane=min(lanes, key=loading.__getitem__))
                            loading[page.lane] += 1
                            child_id = self._child(entry)
                            in_flight[pages.submit(copy_context().run, self._run_child, child_id, page)] = page
                        if not in_flight and self.frontier.is_finished():
                            break
                        next_start = self.frontier.next_start_time()
                        timeout = min(1.0, max(IDLE_SECONDS, (next_start or 0) - time.time()))
                        if not in_flight:
                            time.sleep(timeout)
                            continue
                        signals = [page.loaded for page in in_flight.values() if not page.released]
                        done, _ = wait([*in_flight, *signals], timeout=timeout, return_when=FIRST_COMPLETED)
                        for future, page in in_flight.items():
                            if not page.released and (page.loaded.done() or future.done()):
                                page.released = True
                                loading[page.lane] -= 1
                                self.frontier.release(page.entry.url)
                        for future in done:
                            if future in in_flight:
                                self.page(in_flight.pop(future).entry, future.result())
                finally:
                    for future in in_flight:
                        future.cancel()
        finally:
            conversions.reset(token)
            for lane in lanes:
                lane.close()

    def summary(self) -> dict:
        pages = Run.objects.filter(parent=self.run)
        by_status = dict(Counter(pages.values_list("status", flat=True)))
        return {
            "pages": pages.count(),
            "byStatus": by_status,
            "found": self.found,
            "skipped": dict(self.skipped),
            "frontier": self.frontier.counts_by_status(),
        }


def run_crawl(run: Run, recorder, execute: Callable[..., str]) -> dict:
    crawl = Crawl(run, recorder, execute)
    try:
        if not crawl.resume():
            crawl.start()
            crawl.save()
        crawl.loop()
    except RunAborted:
        raise  # cancelled (its pages with it), or taken over by another attempt, which runs them
    except BaseException:
        services.cancel_pages(run)  # the crawl failed: nothing would ever run its queued pages
        raise
    crawl.save()
    return crawl.summary()
