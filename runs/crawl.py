"""A crawl run: from its start URL, every page in scope as a fetch run of its own (`parent` = the crawl).

The decisions (normalisation, scope, robots, traps, politeness, the frontier) are runs/engine/crawl_rules.py's; this
module does the I/O around them in the crawl's worker:
- robots.txt of the start URL's origin (unless respectRobots is false) and its sitemaps, /sitemap.xml (sitemap auto
  or only; sitemap indexes followed, a few levels), fetched over plain HTTP through the network guard;
- each page as a child fetch run, submitted and executed here, in the crawl's own worker (a crawl never waits for a
  free worker, nor holds one that its pages wait for). Its pages are read over plain HTTP (render http, as a page's
  Markdown needs no browser for server-rendered sites); the links of each page are offered to the frontier;
- a step of the crawl per page: what was found, queued and skipped with the reason;
- the frontier written after every page (CrawlFrontier). A crawl taken over after its worker died goes on from it:
  a page whose child run already finished is not fetched again, one whose child run is unfinished is waited for.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable

import requests
from django.db import transaction

from runs import services
from runs.engine.crawl_rules import (
    CrawlScope,
    Frontier,
    RobotsRules,
    normalize_url,
    parse_sitemap,
    robots_url_of,
)
from runs.engine.http_fetch import USER_AGENT
from runs.engine.netguard import REFUSED_HEADER, network_guard
from runs.models import CrawlFrontier, Run
from runs.resources import network_policy

log = logging.getLogger(__name__)

# robots.txt groups are matched by product token: the service's own name, else the rules for every crawler.
ROBOTS_AGENT = "web-data-service"
SITEMAP_DEPTH = 3  # sitemap indexes followed this many levels
SITEMAP_TIMEOUT_SECONDS = 15
IDLE_SECONDS = 0.2  # how long the loop sleeps when no host may start a page yet


def _get(url: str) -> tuple[int | None, bytes, dict]:
    """A plain GET through the network guard: (status or None when unreachable, body, headers)."""
    session = requests.Session()
    session.trust_env = False
    session.headers["User-Agent"] = USER_AGENT
    policy = network_policy()
    if policy.enforced:
        proxy = network_guard(policy).url
        session.proxies = {"http": proxy, "https": proxy}
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


class Crawl:
    """One attempt of a crawl run. execute: how a child run is executed in this process (runs.jobs.execute_run)."""

    def __init__(self, run: Run, recorder, execute: Callable[[str], str]):
        self.run = run
        self.recorder = recorder
        self.execute = execute
        self.options = run.spec["crawl"]
        self.frontier = new_frontier(run.spec)
        self.skipped: Counter[str] = Counter()
        self.found = 0

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
            normal = normalize_url(url)
            # robots.txt of the hosts in scope only: a link off the site makes no request.
            if self.frontier.respect_robots and normal and self.frontier.scope.contains(normal):
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

    def _child_for(self, url: str) -> Run | None:
        return Run.objects.filter(parent=self.run, url=url).order_by("created_at").first()

    def _fetch(self, url: str) -> Run:
        """The page's child run, finished: an existing one (a crawl taken over), else a new one executed here."""
        child = self._child_for(url)
        if child is None:
            spec = {"kind": "fetch", "url": url, "options": {**self._page_options(), "render": "http"}}
            # A crawl that starts from a profile (or a storage state) reads every page with it.
            spec.update({key: self.run.spec[key] for key in ("profile", "storageStatePath") if key in self.run.spec})
            child = self._submit(spec)
            self.execute(str(child.pk))
        while True:
            child.refresh_from_db()
            if child.is_final:
                return child
            if child.status == Run.Status.QUEUED:  # handed back, or re-queued after its worker died
                self.execute(str(child.pk))
                continue
            self.recorder.checkpoint()
            time.sleep(IDLE_SECONDS)

    def _submit(self, spec: dict) -> Run:
        """The page's child run, queued but not enqueued: this worker runs it at once. It is not held to
        QUEUE_MAX_DEPTH: it never waits in the queue, and waiting for room could wait on runs queued behind this very
        crawl (one worker)."""
        with transaction.atomic():
            return services.run_submit(spec=spec, enqueue=False, parent=self.run, bounded=False)

    def _page_options(self) -> dict:
        options = self.run.spec.get("options") or {}
        return {key: options[key] for key in ("mainContent", "timeoutMs") if key in options}

    def _save(self) -> None:
        CrawlFrontier.objects.update_or_create(run=self.run, defaults={"state": self.frontier.snapshot()})

    def resume(self) -> bool:
        """Load the frontier of an earlier attempt; False when there is none."""
        saved = CrawlFrontier.objects.filter(run=self.run).first()
        if saved is None:
            return False
        self.frontier.restore(saved.state)
        return True

    def page(self, entry) -> None:
        started = time.monotonic()
        child = self._fetch(entry.url)
        result = child.result if isinstance(child.result, dict) else {}
        error = child.error or {}
        status = result.get("status") or error.get("code") or child.status
        retried = self.frontier.report(entry.url, status, now=time.time())
        lines = [f"page {child.status}: run {child.pk} (depth {entry.depth})"]
        if not retried and child.status == Run.Status.SUCCEEDED and self.options["sitemap"] != "only":
            links = result.get("links") or []
            lines.append(f"{len(links)} links: {self._offer(links, entry.depth + 1, entry.url)}")
        elif error:
            lines.append(f"{error.get('code')}: {error.get('message')}")
        self._save()
        self._step("page", entry.url, lines, started)

    def loop(self) -> None:
        while not self.frontier.is_finished():
            self.recorder.checkpoint()
            entry = self.frontier.next_ready(time.time())
            if entry is None:
                next_start = self.frontier.next_start_time()
                time.sleep(min(1.0, max(0.0, (next_start or time.time()) - time.time())) or IDLE_SECONDS)
                continue
            self.page(entry)

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


def run_crawl(run: Run, recorder, execute: Callable[[str], str]) -> dict:
    crawl = Crawl(run, recorder, execute)
    if not crawl.resume():
        crawl.start()
        crawl._save()
    crawl.loop()
    return crawl.summary()
