"""POST /api/fetch: a page as Markdown now, by plain HTTP, Chromium, or plain HTTP first (auto)."""

from __future__ import annotations

import json
import socket

import pytest

from profiles.store import ProfileStore
from runs.models import Run
from tests.site import ARTICLE_PARAGRAPHS, LOGIN_USER, PageServer, real_login_state

pytestmark = pytest.mark.django_db(transaction=True)


def post(client, body):
    return client.post("/api/fetch", data=json.dumps(body), content_type="application/json")


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_render_http_gives_the_page_without_a_browser(api, site):
    response = post(api, {"url": site.url("/static"), "render": "http"})
    assert response.status_code == 200, response.content
    # The page's article (tests/site.py STATIC_PAGE) as Markdown: main content only, so no nav and no footer; the
    # links are every link on the page, absolute, in page order.
    assert response.json() == {
        "url": site.url("/static"),
        "finalUrl": site.url("/static"),
        "status": 200,
        "title": "Flood at the mill",
        "markdown": "\n\n".join(
            ["# Flood at the mill", *ARTICLE_PARAGRAPHS, f"Read the [full report]({site.url('/report')})."]
        )
        + "\n",
        "links": [site.url(path) for path in ("/", "/news", "/sport", "/report", "/privacy")],
        "render": "http",
        "loadState": "load",  # the whole response was read
        "truncated": False,
        "pageType": "article",
        "canonical": None,  # the page names none
    }
    assert Run.objects.count() == 0  # not kept unless persist is true


class CanonicalPages(PageServer):
    """/print/guide names its canonical URL relative to its <base>; /plain names none."""

    def answer(self, path):
        head = '<base href="/docs/"><link rel="alternate" href="/feed"><link rel="Canonical" href="guide?utm_source=x">'
        page = f"<html><head><title>Guide</title>{head if path == '/print/guide' else ''}</head>"
        return 200, "text/html", page + "<body><h1>Guide</h1><p>How to set it up, step by step.</p></body></html>"


@pytest.mark.parametrize("render", ["http", "browser"])
def test_the_result_says_the_pages_canonical_url_made_absolute(api, render):
    with CanonicalPages() as pages:
        named = post(api, {"url": pages.url("/print/guide"), "render": render}).json()
        unnamed = post(api, {"url": pages.url("/plain"), "render": render}).json()
    assert named["canonical"] == pages.url("/docs/guide?utm_source=x")  # as the page wrote it, resolved
    assert unnamed["canonical"] is None


def test_render_http_follows_redirects(api, site):
    body = post(api, {"url": site.url("/r/3"), "render": "http"}).json()
    assert (body["finalUrl"], body["status"], body["render"]) == (site.url("/static"), 200, "http")


def test_auto_uses_plain_http_for_a_server_rendered_page(api, site):
    body = post(api, {"url": site.url("/static")}).json()
    assert body["render"] == "http"


def test_auto_escalates_a_javascript_shell_to_the_browser(api, site):
    shell = post(api, {"url": site.url("/js"), "render": "http"}).json()
    assert shell["render"] == "http"
    assert "Rendered headline" not in shell["markdown"]

    auto = post(api, {"url": site.url("/js")}).json()
    assert auto["render"] == "browser"
    assert "Rendered headline" in auto["markdown"]
    assert "written by JavaScript" in auto["markdown"]


def test_render_browser_always_uses_chromium(api, site):
    body = post(api, {"url": site.url("/static"), "render": "browser", "mainContent": False}).json()
    assert body["render"] == "browser"
    assert body["title"] == "Flood at the mill"


@pytest.mark.parametrize("render", ["http", "browser"])
def test_a_profiles_cookies_apply_on_both_paths(api, site, browser, data_dir, render):
    ProfileStore(data_dir).write("member", real_login_state(browser, site))
    logged_in = post(api, {"url": site.url("/members"), "render": render, "profile": "member"}).json()
    assert logged_in["title"] == "Members"
    assert f"Welcome back, {LOGIN_USER}" in logged_in["markdown"]

    anonymous = post(api, {"url": site.url("/members"), "render": render}).json()
    assert anonymous["finalUrl"].startswith(site.url("/login"))
    assert LOGIN_USER not in anonymous["markdown"]


@pytest.mark.parametrize("render", ["http", "browser"])
def test_timeouts_are_504(api, site, render):
    response = post(api, {"url": site.url("/slow?ms=4000"), "render": render, "timeoutMs": 1000})
    assert response.status_code == 504, response.content
    assert response.json()["error"]["code"] == "timeout"


@pytest.mark.parametrize("render", ["http", "browser"])
def test_refused_connections_are_502(api, render):
    response = post(api, {"url": f"http://127.0.0.1:{closed_port()}/", "render": render})
    assert response.status_code == 502
    assert response.json() == {"error": {"code": "connection_refused", "message": "The server refused the connection."}}


@pytest.mark.parametrize("render", ["http", "browser"])
def test_unresolvable_hosts_are_502_dns_error(api, render):
    response = post(api, {"url": "http://no-such-host.invalid/", "render": render})
    assert response.status_code == 502
    assert response.json()["error"]["code"] == "dns_error"


@pytest.mark.parametrize(("path", "code"), [("/missing", "http_error"), ("/data.json", "not_html")])
def test_error_pages_and_non_html_are_502(api, site, path, code):
    response = post(api, {"url": site.url(path), "render": "http"})
    assert response.status_code == 502
    assert response.json()["error"]["code"] == code


def test_private_addresses_are_400_url_not_allowed_when_not_allowed(api, settings):
    settings.ALLOW_PRIVATE_NETWORKS = False
    response = post(api, {"url": "http://127.0.0.1:9/"})
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "url_not_allowed"
    assert "127.0.0.1" in error["message"] and "ALLOW_PRIVATE_NETWORKS" in error["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "url"),
        ({"url": "ftp://example.com/"}, "url"),
        ({"url": "https://example.com", "render": "magic"}, "render"),
        ({"url": "https://example.com", "timeoutMs": 10}, "timeoutMs"),
        ({"url": "https://example.com", "profile": "nobody"}, "profile"),
        ({"url": "https://example.com", "timeout": 5}, "timeout"),
    ],
)
def test_bad_requests_are_400_naming_the_field(api, body, field):
    response = post(api, body)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_request"
    assert field in error["fields"]


def test_profile_and_storage_state_path_are_mutually_exclusive(api, data_dir):
    ProfileStore(data_dir).write("member", {"cookies": [], "origins": []})
    state = data_dir / "state.json"
    state.write_text('{"cookies": [], "origins": []}')
    state.chmod(0o600)
    response = post(api, {"url": "https://example.com", "profile": "member", "storageStatePath": str(state)})
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"profile": ["Give either profile or storageStatePath, not both."]}


def test_fetch_needs_auth(anonymous, site):
    response = post(anonymous, {"url": site.url("/static")})
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_a_full_browser_queue_answers_429_busy_at_once_and_frees_up(api, site, settings):
    import threading
    import time

    from runs.engine.browser import SYNC_MAX_WAITING, shared_browser_thread

    thread = shared_browser_thread(settings.BROWSER_EXECUTABLE, settings.BROWSER_ARGS, settings.BROWSER_SANDBOX)
    release = threading.Event()
    safety = threading.Timer(15, release.set)  # were the request queued after all, it fails instead of hanging
    safety.start()
    holding = threading.Event()
    outcomes = []  # what each holder's call gave: its result, or the error it raised

    def hold():
        holding.set()
        return release.wait()

    def holder(work):
        try:
            outcomes.append(thread.call(work))
        except Exception as error:  # recorded, and asserted below: not an unhandled error in a thread
            outcomes.append(error)

    # One request holds the browser thread, max_waiting more wait for it (as long browser fetches would). The
    # waiters start once the first call runs: before that it counts as waiting too, and the last waiter was refused.
    holders = [threading.Thread(target=holder, args=(hold,))]
    holders[0].start()
    assert holding.wait(10)
    holders += [threading.Thread(target=holder, args=(release.wait,)) for _ in range(SYNC_MAX_WAITING)]
    for waiter in holders[1:]:
        waiter.start()
    filled = time.monotonic() + 5
    while getattr(thread, "_waiting", 0) < SYNC_MAX_WAITING and time.monotonic() < filled:
        time.sleep(0.01)
    try:
        started = time.monotonic()
        busy = post(api, {"url": site.url("/static"), "render": "browser"})
        assert time.monotonic() - started < 5  # answered, not queued behind the held thread
        assert busy.status_code == 429
        assert busy.json()["error"]["code"] == "busy"
        assert int(busy["Retry-After"]) > 0
        # Plain HTTP needs no browser: still served.
        assert post(api, {"url": site.url("/static"), "render": "http"}).status_code == 200
    finally:
        release.set()
        safety.cancel()
        for holder_thread in holders:
            holder_thread.join(timeout=10)
    assert outcomes == [True] * (SYNC_MAX_WAITING + 1)  # the held calls and the waiting ones all ran, none refused
    assert post(api, {"url": site.url("/static"), "render": "browser"}).status_code == 200
