"""Crawl throughput and correctness: `manage.py crawl` against Scrapy's plain CrawlSpider on the same local site.

    .venv/bin/python -m tests.bench.crawl [--pages 1000] [--rounds 2] [--concurrency 8] [--browser-pages 100]

The site (served from memory by a loopback HTTP server in a process of its own) is made of real page bodies from
../shared/datasets/wcxb-dev (read, never changed on disk): each body keeps its own content and links (a <base> with
the page's original URL sends them off-site, as they were) and gets a navigation block of links into the site:
- a home page linking 10 sections, each section page linking its pages, each page linking its neighbours, its
  section and home, once plainly and once with tracking parameters (`?utm_source=…`) and a fragment: duplicates;
- pages listed only in /sitemap.xml (nothing links to them), which robots.txt names;
- a section /private/ linked from home and disallowed by robots.txt;
- a calendar trap: /calendar?month=YYYY-MM links to the next month, for ever.

Both crawlers get the same limits (maxPages, maxDepth) and the same concurrency per host. The service's crawl runs
in the default configuration (SQLite, the network guard on with the site's port allowed, render http) in the
command's process, and every page is a persisted run with its Markdown; Scrapy (HTTP only, ROBOTSTXT_OBEY) yields
each page's URL and title. Rounds alternate Scrapy, service, … so machine noise hits both alike; the ratio is
taken per round. Correctness is the service's: pages found / expected, disallowed pages fetched (0), URLs fetched
twice after normalisation (0), calendar pages fetched (bounded by maxDepth and the trap cap).

Then render=browser on --browser-pages pages against the plain Playwright script of issue 12 (browser_round).
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from runs.engine.crawl_rules import normalize_url, page_key
from tests.bench.fetch_throughput import PlainScript
from tests.bench.goals import Result
from tests.datasets import DATASETS

ROOT = Path(__file__).resolve().parents[2]
PAGES_DIR = DATASETS / "wcxb-dev" / "html"
TRUTH_DIR = DATASETS / "wcxb-dev" / "ground-truth"
SECTIONS = 10
ORPHANS = 30  # pages only the sitemap lists
PRIVATE = 20  # pages robots.txt disallows
MAX_DEPTH = 10
CALENDAR_START = (2026, 1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _with_nav(body: str, base: str, links: list[str], title: str) -> str:
    """A real page with its original URL as <base> (its own links stay off-site) and our links appended."""
    nav = "<nav class='bench-nav'>" + "".join(f"<a href='{href}'>{href}</a> " for href in links) + "</nav>"
    head = f"<base href='{base}'>"
    lowered = body.lower()
    at = lowered.find("<head")
    if at >= 0:
        at = lowered.find(">", at) + 1
        body = body[:at] + head + body[at:]
    else:
        body = f"<html><head>{head}<title>{title}</title></head>" + body
    end = body.lower().rfind("</body>")
    return body[:end] + nav + body[end:] if end >= 0 else body + nav


class Site:
    """The pages by path, and what a correct crawl finds."""

    def __init__(self, port: int, pages: int):
        self.origin = f"http://127.0.0.1:{port}"
        files = sorted(PAGES_DIR.glob("*.html.gz"))
        per_section = max(1, (pages - ORPHANS - 1 - SECTIONS) // SECTIONS)
        self.bodies: dict[str, bytes] = {}
        self.expected: set[str] = set()
        self.private: set[str] = set()
        source = iter(files * 2)

        def add(path: str, links: list[str], *, expected: bool = True) -> None:
            file = next(source)
            truth = json.loads((TRUTH_DIR / file.name.replace(".html.gz", ".json")).read_text())
            html = gzip.decompress(file.read_bytes()).decode("utf-8", "replace")
            absolute = [link if link.startswith("http") else self.origin + link for link in links]
            self.bodies[path] = _with_nav(html, truth.get("url") or "https://example.org/", absolute, path).encode()
            if expected:
                self.expected.add(page_key(normalize_url(self.origin + path)))

        sections = [f"/s{k}" for k in range(SECTIONS)]
        home_links = [*sections, *(f"/private/x{m}" for m in range(PRIVATE)), "/calendar?month=2026-01"]
        add("/", home_links)
        for section in sections:
            paths = [f"{section}/p{j}" for j in range(per_section)]
            add(section, ["/", *paths])
            for j, path in enumerate(paths):
                neighbour = paths[(j + 1) % len(paths)]
                add(path, ["/", section, neighbour, f"{neighbour}?utm_source=nav&utm_medium=bench#top", f"{path}#x"])
        for m in range(ORPHANS):
            add(f"/orphan/o{m}", ["/"])
        for m in range(PRIVATE):
            add(f"/private/x{m}", ["/"], expected=False)
            self.private.add(page_key(normalize_url(f"{self.origin}/private/x{m}")))
        # Every month is the same body: without its canonical link, which would make them one page.
        self.calendar_body = re.sub(
            r"<link[^>]*canonical[^>]*>", "", gzip.decompress(files[-1].read_bytes()).decode("utf-8", "replace")
        )
        sitemap = "".join(
            f"<url><loc>{self.origin}{path}</loc></url>" for path in self.bodies if "/private/" not in path
        )
        self.bodies["/sitemap.xml"] = (
            f"<?xml version='1.0'?><urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>{sitemap}</urlset>"
        ).encode()
        self.bodies["/robots.txt"] = (
            f"User-agent: *\nDisallow: /private/\nSitemap: {self.origin}/sitemap.xml\n".encode()
        )

    def calendar(self, month: str) -> bytes:
        year, number = (int(part) for part in month.split("-"))
        year, number = (year + 1, 1) if number == 12 else (year, number + 1)
        return _with_nav(
            self.calendar_body, "https://example.org/", [f"{self.origin}/calendar?month={year}-{number:02d}"], month
        ).encode()


def _serve(site: Site, port: int, ready) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            body = site.bodies.get(parts.path)
            if parts.path == "/calendar":
                body = site.calendar(parse_qs(parts.query).get("month", ["2026-01"])[0])
            if body is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            kind = (
                "text/plain"
                if parts.path == "/robots.txt"
                else "application/xml"
                if parts.path.endswith(".xml")
                else "text/html; charset=utf-8"
            )
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    ready.set()
    server.serve_forever()


SPIDER = textwrap.dedent(
    """
    import json, re, sys
    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor
    from scrapy.spiders import CrawlSpider, Rule

    start, out, max_pages, max_depth, concurrency = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])

    class Site(CrawlSpider):
        name = "site"
        allowed_domains = ["127.0.0.1"]
        start_urls = [start]
        # The same scope as the service's crawl (scope host: this host and port).
        rules = [Rule(LinkExtractor(allow=[re.escape(start.rstrip("/")) + "/"]), callback="parse_item", follow=True)]

        def parse_start_url(self, response):
            return self.parse_item(response)

        def parse_item(self, response):
            yield {"url": response.url, "title": response.css("title::text").get()}

    process = CrawlerProcess({
        "ROBOTSTXT_OBEY": True, "DEPTH_LIMIT": max_depth, "CLOSESPIDER_PAGECOUNT": max_pages,
        "CONCURRENT_REQUESTS": concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency, "DOWNLOAD_DELAY": 0,
        "LOG_LEVEL": "ERROR", "TELNETCONSOLE_ENABLED": False, "FEEDS": {out: {"format": "jsonlines"}},
    })
    process.crawl(Site)
    process.start()
    """
)


def scrapy_round(site: Site, max_pages: int, concurrency: int, work: Path) -> dict:
    out = work / f"scrapy-{time.monotonic_ns()}.jsonl"
    script = work / "spider.py"
    script.write_text(SPIDER)
    started = time.monotonic()
    subprocess.run(
        [sys.executable, str(script), site.origin + "/", str(out), str(max_pages), str(MAX_DEPTH), str(concurrency)],
        check=True,
        cwd=work,
    )
    elapsed = time.monotonic() - started
    urls = [json.loads(line)["url"] for line in out.read_text().splitlines()] if out.exists() else []
    return {"seconds": elapsed, "pages": len(urls), "urls": urls}


def service_round(site: Site, max_pages: int, concurrency: int, work: Path, port: int, render: str = "http") -> dict:
    data = Path(tempfile.mkdtemp(prefix="crawl-bench-", dir=work))
    env = {
        **os.environ,
        "SERVICE_DATA_DIR": str(data),
        "NETWORK_ALLOWLIST": f"127.0.0.1:{port}",
        "PYTHONUNBUFFERED": "1",
    }
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], check=True, env=env, cwd=ROOT)
    started = time.monotonic()
    subprocess.run(
        [
            *manage,
            "crawl",
            site.origin + "/",
            "--quiet",
            "--render",
            render,
            "--max-pages",
            str(max_pages),
            "--max-depth",
            str(MAX_DEPTH),
            "--per-host-concurrency",
            str(concurrency),
        ],
        check=True,
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=(data / "crawl.log").open("w"),
    )
    elapsed = time.monotonic() - started
    with sqlite3.connect(data / "db.sqlite3") as db:
        pages = db.execute("SELECT url, status, result FROM runs_run WHERE parent_id IS NOT NULL").fetchall()
    succeeded = [(url, json.loads(result or "{}")) for url, status, result in pages if status == "succeeded"]
    with_markdown = sum(1 for _, result in succeeded if (result.get("markdown") or "").strip())
    urls = [url for url, _, _ in pages]
    return {"seconds": elapsed, "pages": len(succeeded), "urls": urls, "markdown": with_markdown}


def browser_round(site: Site, pages: int, work: Path, port: int) -> dict:
    """render=browser on `pages` pages (2 per host: the crawl's two Chromiums) against the plain Playwright script of
    tests.bench.fetch_throughput (issue 12: per page a fresh context, goto, a screenshot, content) loading the same
    pages two at a time, its Chromiums started and the URLs in hand before its clock starts; the crawl's clock
    includes starting its Chromiums and finding the pages. The crawl first (it finds the URLs), then the plain script
    twice: the ratio is taken against the mean of its two rounds.

    The crawl reads each lane's pages one after the other in one tab (runs/engine/fetch.py _page_tab); so the same
    plain script in that way (one tab per process: goto, screenshot, content) is measured too, in rounds alternating
    with the first, and the crawl's ratio to it reported beside."""
    ours = service_round(site, pages, 2, work, port, render="browser")
    urls = [url for url in ours["urls"] if url.startswith(site.origin)][:pages]
    fresh, one_tab = PlainScript(2), PlainScript(2, one_tab=True)
    try:
        rates = {"fresh": [], "one tab": []}
        failures = 0
        for _ in range(2):
            for name, plain in (("fresh", fresh), ("one tab", one_tab)):
                rate, _, failed = plain.run(urls)
                rates[name].append(rate)
                failures += len(failed)
    finally:
        fresh.close()
        one_tab.close()
    plain_rate = sum(rates["fresh"]) / 2
    one_tab_rate = sum(rates["one tab"]) / 2
    service_rate = ours["pages"] / ours["seconds"]
    return {
        "plain pages/s": plain_rate,
        "service pages/s": service_rate,
        "ratio": service_rate / plain_rate,
        "plain one-tab pages/s": one_tab_rate,
        "ratio to one-tab": service_rate / one_tab_rate,
        "plain failures": failures,
        "service pages": ours["pages"],
    }


def correctness(site: Site, urls: list[str]) -> dict:
    normal = [page_key(normalize_url(url)) for url in urls]
    fetched = set(normal)
    calendar = sum(1 for url in fetched if url and "/calendar" in url)
    return {
        "found": len(fetched & site.expected),
        "expected": len(site.expected),
        "disallowed": len(fetched & site.private),
        "duplicates": len(normal) - len(fetched),
        "calendar": calendar,
    }


def measure(pages: int, rounds: int, concurrency: int, browser_pages: int = 0) -> dict:
    port = free_port()
    site = Site(port, pages)
    max_pages = 2 * pages
    ready = multiprocessing.Event()
    server = multiprocessing.Process(target=_serve, args=(site, port, ready), daemon=True)
    server.start()
    ready.wait(30)
    figures: dict = {"site pages": len(site.expected), "rounds": []}
    try:
        with tempfile.TemporaryDirectory(prefix="crawl-bench-") as tmp:
            work = Path(tmp)
            for _ in range(rounds):
                plain = scrapy_round(site, max_pages, concurrency, work)
                ours = service_round(site, max_pages, concurrency, work, port)
                figures["rounds"].append(
                    {
                        "scrapy pages/s": plain["pages"] / plain["seconds"],
                        "service pages/s": ours["pages"] / ours["seconds"],
                        "ratio": (ours["pages"] / ours["seconds"]) / (plain["pages"] / plain["seconds"]),
                        # Scrapy fetches the tracking-parameter duplicates too: its rate of distinct pages.
                        "distinct ratio": (ours["pages"] / ours["seconds"])
                        / (len({page_key(normalize_url(url)) for url in plain["urls"]}) / plain["seconds"]),
                        "scrapy": {k: v for k, v in plain.items() if k != "urls"} | correctness(site, plain["urls"]),
                        "service": {k: v for k, v in ours.items() if k != "urls"} | correctness(site, ours["urls"]),
                    }
                )
                print(json.dumps(figures["rounds"][-1], indent=1), flush=True)
            if browser_pages:
                figures["browser"] = browser_round(site, browser_pages, work, port)
                print(json.dumps(figures["browser"], indent=1), flush=True)
    finally:
        server.terminate()
    return figures


def figures(full: bool = False) -> Result:
    measured = measure(1000 if full else 200, 2 if full else 1, 8, browser_pages=100 if full else 30)
    last = measured["rounds"][-1]
    service = last["service"]
    return Result(
        f"a local site of {measured['site pages']} real WCXB page bodies, render http, 8 per host, "
        f"{len(measured['rounds'])} round(s)",
        {
            "render=http: Scrapy pages/s": last["scrapy pages/s"],
            "render=http: service pages/s": last["service pages/s"],
            "render=http: service/Scrapy (worst round)": min(r["ratio"] for r in measured["rounds"]),
            "render=http: service/Scrapy distinct pages (worst round)": min(
                r["distinct ratio"] for r in measured["rounds"]
            ),
            "pages found / expected": service["found"] / service["expected"],
            "pages with Markdown / pages succeeded": service["markdown"] / max(1, service["pages"]),
            "disallowed pages fetched": service["disallowed"],
            "URLs fetched twice": service["duplicates"],
            "calendar trap pages fetched": service["calendar"],
            "render=browser: plain Playwright pages/s": measured["browser"]["plain pages/s"],
            "render=browser: service pages/s": measured["browser"]["service pages/s"],
            "render=browser: service/plain": measured["browser"]["ratio"],
            "render=browser: plain Playwright in one tab pages/s": measured["browser"]["plain one-tab pages/s"],
            "render=browser: service/plain in one tab": measured["browser"]["ratio to one-tab"],
        },
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--browser-pages", type=int, default=100, help="render=browser pages (0: not measured)")
    args = parser.parse_args()
    measured = measure(args.pages, args.rounds, args.concurrency, args.browser_pages)
    print(json.dumps(measured, indent=1))


if __name__ == "__main__":
    main()
