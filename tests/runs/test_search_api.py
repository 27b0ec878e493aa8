"""POST /api/search: SearXNG's results in our shape, optionally with each page as Markdown."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.fake_searxng import FakeSearxng
from tests.site import numbered_page

pytestmark = pytest.mark.django_db(transaction=True)


def post(client, body):
    return client.post("/api/search", data=json.dumps(body), content_type="application/json")


@pytest.fixture
def searxng(settings):
    with FakeSearxng() as fake:
        settings.SEARXNG_URL = fake.base_url
        yield fake


def test_results_come_back_in_our_shape(api, searxng):
    response = post(api, {"query": "python http server"})
    assert response.status_code == 200, response.content
    assert response.json() == {
        "results": [
            {
                "title": "http.server — HTTP servers — Python 3.13 documentation",
                "url": "https://docs.python.org/3/library/http.server.html",
                "snippet": "This module defines classes for implementing HTTP servers. Availability: not WASI.",
                "engine": "duckduckgo",
            },
            {
                "title": "Python (programming language) - Wikipedia",
                "url": "https://en.wikipedia.org/wiki/Python_(programming_language)",
                "snippet": "Python is a high-level, general-purpose programming language.",
                "engine": "wikipedia",
            },
            {
                "title": "How to Launch an HTTP Server in One Line of Python Code",
                "url": "https://realpython.com/python-http-server/",
                "snippet": "",
                "engine": "brave",
            },
            {
                "title": searxng.results[-1]["title"],
                "url": searxng.results[-1]["url"],
                "snippet": "",
                "engine": searxng.results[-1]["engine"],
            },
        ]
    }
    assert searxng.requests == [{"q": "python http server", "format": "json"}]


def test_limit_and_searxng_parameters_are_passed_through(api, searxng):
    response = post(api, {"query": "news", "limit": 2, "categories": "news", "language": "de-CH", "timeRange": "week"})
    assert len(response.json()["results"]) == 2
    assert searxng.requests[-1] == {
        "q": "news",
        "format": "json",
        "categories": "news",
        "language": "de-CH",
        "time_range": "week",
    }
    post(api, {"query": "news", "time_range": "day"})
    assert searxng.requests[-1]["time_range"] == "day"


def test_fetch_true_adds_each_pages_markdown_or_why_not(api, site, settings):
    results = [
        {"url": site.url("/static"), "title": "Static", "content": "a page", "engine": "brave"},
        {"url": site.url("/js"), "title": "Shell", "content": "a JS app", "engine": "duckduckgo"},
        {"url": site.url("/missing"), "title": "Gone", "content": "404", "engine": "wikipedia"},
    ]
    with FakeSearxng(results=results) as fake:
        settings.SEARXNG_URL = fake.base_url
        response = post(api, {"query": "mill", "fetch": True})
    assert response.status_code == 200, response.content
    static, shell, missing = response.json()["results"]
    assert "Flood at the mill" in static["markdown"]
    assert "Rendered headline" in shell["markdown"]  # auto escalated the JS shell to the browser
    assert missing["error"] == {"code": "http_error", "message": "The page answered HTTP 404."}
    assert "markdown" not in missing


# README: `"fetch": true` fetches every result as Markdown "(four at a time)".
FETCHED_AT_ONCE = 4


class ConcurrencySite:
    """A loopback site that counts the page requests in flight. Each request waits (up to WAIT_S) until
    FETCHED_AT_ONCE requests are in flight together (or every expected request has come), then stays in flight HOLD_S
    longer, so a fifth concurrent request would be seen overlapping them and fewer than four would show as a lower
    peak."""

    WAIT_S, HOLD_S = 3.0, 0.3

    def __init__(self, expected: int) -> None:
        self.in_flight = self.peak = 0
        self.paths: list[str] = []
        changed = self.changed = threading.Condition()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                with changed:
                    owner.paths.append(self.path)
                    owner.in_flight += 1
                    owner.peak = max(owner.peak, owner.in_flight)
                    changed.notify_all()
                    changed.wait_for(
                        lambda: owner.in_flight >= FETCHED_AT_ONCE or len(owner.paths) == expected,
                        timeout=owner.WAIT_S,
                    )
                time.sleep(owner.HOLD_S)
                with changed:
                    owner.in_flight -= 1
                body = numbered_page(int(self.path.rsplit("/", 1)[1])).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{path}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_fetch_true_fetches_four_pages_at_a_time(api, settings):
    site = ConcurrencySite(expected=6)
    results = [{"url": site.url(f"/page/{n}"), "title": f"Page {n}", "engine": "brave"} for n in range(1, 7)]
    try:
        with FakeSearxng(results=results) as fake:
            settings.SEARXNG_URL = fake.base_url
            response = post(api, {"query": "pages", "fetch": True})
    finally:
        site.close()
    assert response.status_code == 200, response.content
    assert sorted(site.paths) == [f"/page/{n}" for n in range(1, 7)]
    assert site.peak == FETCHED_AT_ONCE
    found = response.json()["results"]
    assert [result["url"] for result in found] == [result["url"] for result in results]  # SearXNG's order kept
    for n, result in enumerate(found, start=1):
        assert result["markdown"].startswith(f"# Page {n}\n"), result


def test_fetched_results_obey_the_network_policy(api, site, settings):
    settings.ALLOW_PRIVATE_NETWORKS = False
    with FakeSearxng(results=[{"url": site.url("/static"), "title": "Local", "engine": "brave"}]) as fake:
        settings.SEARXNG_URL = fake.base_url
        result = post(api, {"query": "mill", "fetch": True}).json()["results"][0]
    assert result["error"]["code"] == "url_not_allowed"


def test_no_searxng_url_is_503_naming_the_variable(api, settings):
    settings.SEARXNG_URL = None
    response = post(api, {"query": "anything"})
    assert response.status_code == 503
    error = response.json()["error"]
    assert error["code"] == "search_not_configured"
    assert "SEARXNG_URL" in error["message"]


def test_searxng_with_json_disabled_is_502_saying_so(api, searxng):
    searxng.mode = "html"
    response = post(api, {"query": "anything"})
    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "search_bad_response"
    assert "json" in error["message"] and "settings.yml" in error["message"]

    searxng.mode = "html200"
    response = post(api, {"query": "anything"})
    assert (response.status_code, response.json()["error"]["code"]) == (502, "search_bad_response")
    assert "HTML instead of JSON" in response.json()["error"]["message"]


def test_searxng_down_is_502(api, settings):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    settings.SEARXNG_URL = f"http://127.0.0.1:{port}"
    response = post(api, {"query": "anything"})
    assert response.status_code == 502
    assert response.json() == {
        "error": {
            "code": "search_unavailable",
            "message": f"SearXNG at http://127.0.0.1:{port} is not reachable (connection refused).",
        }
    }


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "query"),
        ({"query": ""}, "query"),
        ({"query": "x", "limit": 0}, "limit"),
        ({"query": "x", "limit": 51}, "limit"),
        ({"query": "x", "timeRange": "decade"}, "timeRange"),
        ({"query": "x", "engines": "all"}, "engines"),
    ],
)
def test_bad_requests_are_400(api, searxng, body, field):
    response = post(api, body)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]
    assert searxng.requests == []


def test_search_needs_auth(anonymous, searxng):
    assert post(anonymous, {"query": "x"}).status_code == 401
    assert searxng.requests == []
