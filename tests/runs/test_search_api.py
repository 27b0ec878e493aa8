"""POST /api/search: SearXNG's results in our shape, optionally with each page as Markdown."""

from __future__ import annotations

import json
import socket

import pytest

from tests.fake_searxng import FakeSearxng

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
