"""Crawl runs end to end (runs/crawl.py): a live service crawls a small site served on 127.0.0.1 with a link graph,
a robots.txt that disallows a section and names a sitemap, a page only the sitemap lists, duplicate links (tracking
parameters, fragments), a link off the site and a calendar that links on forever."""

from __future__ import annotations

import os
import signal
import time
from datetime import datetime
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.live import SHORT_LEASE_SECONDS, LiveService
from tests.site import PageServer

pytestmark = pytest.mark.live


class CrawlSite(PageServer):
    def page(self, title: str, links: list[str]) -> tuple[int, str, str]:
        anchors = "".join(f'<li><a href="{link}">{link}</a></li>' for link in links)
        body = f"<p>{title} is a page of the crawl site, with enough words to be its main content.</p>"
        return (
            200,
            "text/html",
            f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}<ul>{anchors}</ul></body></html>",
        )

    def answer(self, path: str) -> tuple[int, str, str]:
        parts = urlsplit(path)
        if parts.path == "/robots.txt":
            return 200, "text/plain", f"User-agent: *\nDisallow: /private/\nSitemap: {self.base}/sitemap.xml\n"
        if parts.path == "/sitemap.xml":
            urls = "".join(f"<url><loc>{self.base}{p}</loc></url>" for p in ("/orphan", "/a"))
            return (
                200,
                "application/xml",
                f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>',
            )
        if parts.path == "/":
            return self.page(
                "Home",
                [
                    "/a",
                    "/b",
                    "/a?utm_source=news",
                    "/private/secret",
                    "http://elsewhere.invalid/",
                    f"http://localhost:{self.server.server_address[1]}/c",  # the same server, another host
                    "/calendar?month=1",
                ],
            )
        if parts.path == "/a":
            return self.page("A", ["/c", "/"])
        if parts.path == "/b":
            return self.page("B", ["/a#top", "b-relative-missing"])
        if parts.path in ("/c", "/orphan", "/private/secret"):
            return self.page(parts.path.strip("/"), [])
        if parts.path == "/resume":
            return self.page("Resume", ["/r1", "/r2", "/hang-once", "/r3", "/r4"])
        if parts.path in ("/r1", "/r2", "/r3", "/r4"):
            return self.page(parts.path.strip("/"), [])
        if parts.path == "/hang-once":
            if self.hits[path] == 1:
                time.sleep(30)  # the worker is killed meanwhile
            return self.page("Hung once", [])
        if parts.path == "/app":  # a JavaScript shell: its content and links exist only once scripts ran
            script = (
                "document.getElementById('root').innerHTML = '<h1>Rendered app</h1><p>Written by the script of the "
                'app page.</p><a href="/c">c</a>\';'
            )
            return 200, "text/html", f'<html><body><div id="root"></div><script>{script}</script></body></html>'
        if parts.path == "/busy":  # too busy the first time, with a Retry-After
            if self.hits[path] == 1:
                return 429, "text/html", "<html><body>slow down</body></html>", {"Retry-After": "2"}
            return self.page("Busy", [])
        if parts.path == "/canon":
            return self.page("Canon", ["/a", "/a-print"])
        if parts.path == "/a-print":  # another spelling of /a: its canonical URL says so
            status, kind, body = self.page("A, to print", ["/only-from-print"])
            return status, kind, body.replace("<head>", '<head><link rel="canonical" href="/a">')
        if parts.path == "/long-links":  # one link longer than a run's URL may be, one that is not
            return self.page("Long links", ["/long?q=" + "x" * 2100, "/c"])
        if parts.path == "/held/":  # served only with the slash
            return self.page("Held", [])
        if parts.path == "/slow":  # pages that take a while: a terminal shows the crawl's progress meanwhile
            return self.page("Slow", [f"/slow/{n}" for n in range(1, 5)])
        if parts.path.startswith("/slow/"):
            time.sleep(0.4)
            return self.page(f"Slow {parts.path.rsplit('/', 1)[1]}", [])
        if parts.path == "/session":  # sets a cookie, links to a page that shows the cookies its browser holds
            status, kind, body = self.page("Session", ["/session/show"])
            return status, kind, body, {"Set-Cookie": "visited=yes; Path=/"}
        if parts.path == "/session/show":
            script = (
                "document.getElementById('c').textContent = 'The browser that reads this page holds the cookies ['"
                " + document.cookie + '], which is what this sentence of the crawl site reports.';"
            )
            status, kind, body = self.page("Show", [])
            return status, kind, body.replace("</body>", f"<p id='c'></p><script>{script}</script></body>")
        if parts.path == "/calendar":
            month = int(parse_qs(parts.query)["month"][0])
            return self.page(f"Month {month}", [f"/calendar?month={month + 1}"])
        return 404, "text/html", "<html><body>missing</body></html>"


@pytest.fixture(scope="module")
def crawl_site():
    with CrawlSite() as site:
        yield site


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    live = LiveService(tmp_path_factory.mktemp("crawl"), WORKERS="1").start()
    yield live
    live.stop()


def crawl(service: LiveService, url: str, **options) -> tuple[dict, list[dict]]:
    response = service.session.post(
        f"{service.base_url}/api/runs", json={"kind": "crawl", "url": url, "crawl": options}
    )
    assert response.status_code == 201, response.content
    run = service.wait(response.json()["id"], timeout=120)
    listed = service.get(f"/api/runs?parent={run['id']}&limit=500").json()
    assert "results" in listed, (listed, run)
    pages = listed["results"]
    return run, pages


def test_a_crawl_fetches_every_page_in_scope_once_as_child_runs(service, crawl_site):
    robots_before = crawl_site.hits["/robots.txt"]
    run, pages = crawl(service, crawl_site.base + "/", maxDepth=3)
    # robots.txt of the site, once; none of the hosts its links lead off to (localhost is another host here).
    assert crawl_site.hits["/robots.txt"] - robots_before == 1
    assert run["status"] == "succeeded", run
    base = crawl_site.base
    expected = {f"{base}/", f"{base}/a", f"{base}/b", f"{base}/c", f"{base}/orphan"} | {
        f"{base}/calendar?month={month}"
        for month in (1, 2, 3)  # month 4 is 4 links away: past maxDepth
    }
    missing = f"{base}/b-relative-missing"  # a relative link of /b, to a page that answers 404
    assert {page["url"] for page in pages} == expected | {missing}
    assert {page["url"]: page["status"] for page in pages if page["status"] != "succeeded"} == {missing: "failed"}
    assert all(page["kind"] == "fetch" for page in pages)
    assert all(page["parent"] == run["id"] for page in pages)
    # Each page was asked for once; robots.txt's disallowed section and the link off the site never.
    page_hits = {path: n for path, n in crawl_site.hits.items() if not path.endswith((".txt", ".xml"))}
    assert max(page_hits.values()) == 1, page_hits
    assert crawl_site.hits["/private/secret"] == 0
    assert run["result"]["pages"] == len(expected) + 1
    assert run["result"]["byStatus"] == {"succeeded": len(expected), "failed": 1}
    skipped = run["result"]["skipped"]
    assert skipped["robots"] >= 1 and skipped["out_of_scope"] >= 1 and skipped["duplicate"] >= 3
    assert skipped["depth"] >= 1
    # The crawl's trace: discovery first, then a step per page saying what its links came to.
    detail = service.get(f"/api/runs/{run['id']}").json()
    actions = [step["action"] for step in detail["steps"]]
    assert actions[0] == "discover" and actions.count("page") == len(expected) + 1
    assert "sitemaps: 2 pages listed" in detail["steps"][0]["observation"]
    # The crawl's export is its pages.
    exported = service.get(f"/api/export?format=json&parent={run['id']}").json()
    assert sorted(page["url"] for page in exported) == sorted(page["url"] for page in pages)
    # A page's own run holds its Markdown, as a fetch run does.
    home = next(page for page in pages if page["url"] == f"{base}/")
    assert "Home is a page of the crawl site" in service.get(f"/api/runs/{home['id']}").json()["result"]["markdown"]


def test_max_pages_is_exact_and_the_rest_is_skipped_for_the_limit(service, crawl_site):
    run, pages = crawl(service, crawl_site.base + "/", maxPages=3, sitemap="off")
    assert run["status"] == "succeeded", run
    assert len(pages) == 3 and run["result"]["pages"] == 3
    assert run["result"]["skipped"]["limit"] >= 1


def test_include_and_exclude_globs_choose_the_pages(service, crawl_site):
    run, pages = crawl(service, crawl_site.base + "/", exclude=["/calendar"], include=["/", "/a", "/c"], sitemap="off")
    assert run["status"] == "succeeded", run
    assert {urlsplit(page["url"]).path for page in pages} == {"/", "/a", "/c"}
    assert run["result"]["skipped"]["not_included"] >= 1


def test_bad_crawl_options_are_400_naming_the_field(service):
    response = service.session.post(
        f"{service.base_url}/api/runs",
        json={"kind": "crawl", "url": "http://127.0.0.1:9/", "crawl": {"maxPages": 0, "scope": "planet"}},
    )
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert set(fields) == {"crawl.maxPages", "crawl.scope"} or set(fields) == {"crawl"}, fields
    fetch_with_crawl = service.session.post(
        f"{service.base_url}/api/runs", json={"kind": "fetch", "url": "http://127.0.0.1:9/", "crawl": {}}
    )
    assert fetch_with_crawl.status_code == 400 and "crawl" in fetch_with_crawl.json()["error"]["fields"]


def test_a_crawl_whose_worker_dies_goes_on_from_its_frontier_and_fetches_no_finished_page_twice(tmp_path, crawl_site):
    service = LiveService(tmp_path, WORKERS="1", lease_seconds=SHORT_LEASE_SECONDS).start()
    try:
        submitted = service.submit(
            {
                "kind": "crawl",
                "url": crawl_site.base + "/resume",
                "crawl": {
                    "sitemap": "off",
                    "include": ["/resume", "/r*", "/hang-once"],
                    "perHostConcurrency": 1,  # one page loaded at a time
                },
            }
        )
        deadline = time.monotonic() + 60
        while crawl_site.hits["/hang-once"] == 0:
            assert time.monotonic() < deadline, "the crawl never reached /hang-once"
            time.sleep(0.05)
        os.kill(service.worker_pid(submitted["id"]), signal.SIGKILL)
        run = service.wait(submitted["id"], timeout=120)
        assert run["status"] == "succeeded", run
        assert run["attempts"] == 2
        pages = service.get(f"/api/runs?parent={run['id']}").json()["results"]
        paths = sorted(urlsplit(page["url"]).path for page in pages)
        assert paths == ["/hang-once", "/r1", "/r2", "/r3", "/r4", "/resume"]  # one run per page
        assert {page["status"] for page in pages} == {"succeeded"}
        # A page finished before the kill was not asked for again (its run has one attempt); one in flight then (the
        # hanging page, and a page loaded but not yet recorded) was asked once more, by its run's second attempt.
        # /resume was finished before any other page started: its links come from its finished run.
        attempts = {urlsplit(page["url"]).path: page["attempts"] for page in pages}
        assert {path: crawl_site.hits[path] for path in attempts} == attempts
        assert crawl_site.hits["/hang-once"] == 2 and crawl_site.hits["/resume"] == 1
        assert crawl_site.hits["/r3"] == crawl_site.hits["/r4"] == 1
        # The summary is of the whole crawl, both attempts: the start URL and the 5 links of /resume.
        assert run["result"]["found"] == 6 and run["result"]["pages"] == 6
    finally:
        service.stop()


def test_cancelling_a_crawl_stops_it_between_pages(service, crawl_site):
    submitted = service.submit(
        {"kind": "crawl", "url": crawl_site.base + "/", "crawl": {"sitemap": "off", "delayMs": 1500}}
    )
    deadline = time.monotonic() + 60
    while not service.get(f"/api/runs?parent={submitted['id']}").json()["results"]:
        assert time.monotonic() < deadline, "no page started"
        time.sleep(0.05)
    assert service.post(f"/api/runs/{submitted['id']}/cancel", {}).status_code == 200
    run = service.wait(submitted["id"])
    assert run["status"] == "cancelled"
    pages = len(service.get(f"/api/runs?parent={run['id']}").json()["results"])
    time.sleep(2)  # past the next page's start, had the crawl gone on
    listed = service.get(f"/api/runs?parent={run['id']}").json()["results"]
    assert len(listed) == pages < 5
    # No page is left waiting for a crawl that will never run it.
    assert not [page["status"] for page in listed if page["status"] in ("queued", "running")], listed


def test_a_crawl_on_one_worker_finishes_while_the_queue_is_full_behind_it(tmp_path, crawl_site):
    """Its pages never wait in the queue (the crawl's worker runs each at once), so a queue filled by runs waiting
    for that worker neither refuses them nor deadlocks."""
    service = LiveService(tmp_path, WORKERS="1", QUEUE_MAX_DEPTH="1").start()
    try:
        crawl_run = service.submit(
            {"kind": "crawl", "url": crawl_site.base + "/", "crawl": {"sitemap": "off", "maxPages": 3, "delayMs": 300}}
        )
        service.wait(crawl_run["id"], statuses=("running",))
        waiting = service.submit({"kind": "fetch", "url": crawl_site.base + "/c", "options": {"render": "http"}})
        assert service.post("/api/runs", {"kind": "fetch", "url": crawl_site.base + "/c"}).status_code == 429  # full
        run = service.wait(crawl_run["id"], timeout=60)
        assert (run["status"], run["result"]["pages"]) == ("succeeded", 3), run
        assert service.wait(waiting["id"], timeout=60)["status"] == "succeeded"
    finally:
        service.stop()


def test_a_crawl_with_a_schema_makes_each_page_an_extract_run(service, crawl_site):
    schema = {"type": "object", "properties": {"heading": {"type": "string", "x-selector": "h1"}}}
    response = service.session.post(
        f"{service.base_url}/api/runs",
        json={"kind": "crawl", "url": crawl_site.base + "/a", "schema": schema, "crawl": {"sitemap": "off"}},
    )
    assert response.status_code == 201, response.content
    run = service.wait(response.json()["id"], timeout=120)
    assert run["status"] == "succeeded", run
    pages = service.get(f"/api/runs?parent={run['id']}&include=result").json()["results"]
    by_path = {urlsplit(page["url"]).path: page for page in pages}
    assert {"/a", "/c", "/"} <= set(by_path)
    assert {page["kind"] for page in pages} == {"extract"}
    assert by_path["/a"]["result"] == {"heading": "A"} and by_path["/c"]["result"] == {"heading": "c"}
    # A schema that needs a model is refused at once when none is configured, naming why.
    refused = service.session.post(
        f"{service.base_url}/api/runs",
        json={"kind": "crawl", "url": crawl_site.base + "/", "schema": {"type": "object"}},
    )
    assert refused.status_code == 400 and refused.json()["error"]["code"] == "model_not_configured"
    goal = service.session.post(
        f"{service.base_url}/api/runs", json={"kind": "crawl", "url": crawl_site.base + "/", "goal": "x"}
    )
    assert goal.status_code == 400 and goal.json()["error"]["fields"]["goal"] == ["Only agent runs take goal."]


def test_render_auto_loads_a_javascript_shell_in_the_browser_and_other_pages_over_plain_http(service, crawl_site):
    run, pages = crawl(service, crawl_site.base + "/app", sitemap="off", maxDepth=1)
    assert run["status"] == "succeeded", run
    by_path = {urlsplit(page["url"]).path: page for page in pages}
    assert set(by_path) == {"/app", "/c"}  # /c is linked only by what the app's script wrote
    app = service.get(f"/api/runs/{by_path['/app']['id']}").json()
    assert "Written by the script of the app page" in app["result"]["markdown"]
    assert app["result"]["render"] == "browser"
    plain = service.get(f"/api/runs/{by_path['/c']['id']}").json()
    assert plain["result"]["render"] == "http"
    assert "plain HTTP, no browser" in plain["steps"][0]["observation"]


def test_render_browser_gives_every_page_a_screenshot(service, crawl_site):
    run, pages = crawl(service, crawl_site.base + "/a", sitemap="off", maxDepth=1, render="browser")
    assert run["status"] == "succeeded", run
    assert {urlsplit(page["url"]).path for page in pages} == {"/a", "/c", "/"}
    for page in pages:
        detail = service.get(f"/api/runs/{page['id']}").json()
        assert detail["result"]["render"] == "browser"
        shot = detail["steps"][0]["screenshot"]
        assert shot and service.get(shot).headers["Content-Type"].startswith("image/")


def test_a_browser_crawl_reads_its_pages_in_one_browser_session(service, crawl_site):
    """README, Crawls: each of a crawl's Chromiums reads its pages one after the other in one tab (cookies carry from
    page to page). One per host at a time: one Chromium."""
    run, pages = crawl(service, crawl_site.base + "/session", sitemap="off", render="browser", perHostConcurrency=1)
    assert run["status"] == "succeeded", run
    show = next(page for page in pages if page["url"].endswith("/session/show"))
    markdown = service.get(f"/api/runs/{show['id']}").json()["result"]["markdown"]
    assert "holds the cookies [visited=yes]" in markdown


def test_a_page_answering_429_backs_its_host_off_for_retry_after_and_is_tried_again(service, crawl_site):
    run, pages = crawl(service, crawl_site.base + "/busy", sitemap="off")
    assert run["status"] == "succeeded", run
    tries = sorted((page for page in pages if page["url"].endswith("/busy")), key=lambda page: page["createdAt"])
    assert [page["status"] for page in tries] == ["failed", "succeeded"]
    first = service.get(f"/api/runs/{tries[0]['id']}").json()
    assert first["error"] == {
        "code": "http_error",
        "message": "The page answered HTTP 429.",
        "httpStatus": 429,
        "retryAfter": "2",
    }
    retried = service.get(f"/api/runs/{tries[1]['id']}").json()
    waited = datetime.fromisoformat(retried["startedAt"]) - datetime.fromisoformat(first["finishedAt"])
    assert waited.total_seconds() >= 1.9  # Retry-After: 2
    assert crawl_site.hits["/busy"] == 2


def test_a_page_whose_canonical_url_was_seen_is_a_duplicate_and_its_links_are_not_followed(service, crawl_site):
    run, pages = crawl(service, crawl_site.base + "/canon", sitemap="off", maxDepth=2, include=["/canon", "/a*", "/o*"])
    assert run["status"] == "succeeded", run
    assert {urlsplit(page["url"]).path for page in pages} == {"/canon", "/a", "/a-print"}
    assert crawl_site.hits["/only-from-print"] == 0
    assert run["result"]["skipped"]["canonical"] == 1
    detail = service.get(f"/api/runs/{run['id']}").json()
    printed = next(step for step in detail["steps"] if step["url"].endswith("/a-print"))
    assert f"a duplicate of its canonical URL {crawl_site.base}/a, seen already" in printed["observation"]


def test_a_start_url_with_a_trailing_slash_is_fetched_as_given(service, crawl_site):
    run, pages = crawl(service, crawl_site.base + "/held/", sitemap="off")
    assert run["status"] == "succeeded", run
    assert [(page["url"], page["status"]) for page in pages] == [(crawl_site.base + "/held/", "succeeded")]


def test_a_link_longer_than_a_runs_url_may_be_is_skipped_and_the_crawl_goes_on(service, crawl_site):
    run, pages = crawl(service, crawl_site.base + "/long-links", sitemap="off")
    assert run["status"] == "succeeded", run
    assert {urlsplit(page["url"]).path for page in pages} == {"/long-links", "/c"}
    assert run["result"]["skipped"]["too_long"] == 1
    assert crawl_site.hits["/long"] == 0
