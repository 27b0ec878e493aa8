"""The SearXNG client against a fake SearXNG on loopback; no Django involved."""

from __future__ import annotations

import socket

import pytest
import requests

from runs.engine.search import SearchHit, searxng_search
from runs.engine.spec import EngineError
from tests.fake_searxng import FakeSearxng

ENABLE_JSON = "enable the json format in its settings.yml (search: formats: [html, json])."


def failure_of(base_url: str, **options) -> EngineError:
    with pytest.raises(EngineError) as failure:
        searxng_search(base_url, "python http server", **options)
    return failure.value


def test_canned_answer_maps_to_distinct_http_hits_in_searxng_order():
    with FakeSearxng() as searxng:
        hits = searxng_search(searxng.base_url, "python http server")
    assert hits == [
        SearchHit(
            title="http.server — HTTP servers — Python 3.13 documentation",
            url="https://docs.python.org/3/library/http.server.html",
            snippet="This module defines classes for implementing HTTP servers. Availability: not WASI.",
            engine="duckduckgo",
        ),
        SearchHit(
            title="Python (programming language) - Wikipedia",
            url="https://en.wikipedia.org/wiki/Python_(programming_language)",
            snippet="Python is a high-level, general-purpose programming language.",
            engine="wikipedia",
        ),
        SearchHit(
            title="How to Launch an HTTP Server in One Line of Python Code",
            url="https://realpython.com/python-http-server/",
            snippet="",
            engine="brave",
        ),
        SearchHit(
            title='What is the Python 3 equivalent of "python -m SimpleHTTPServer"',
            url="https://stackoverflow.com/questions/7943751/what-is-the-python-3-equivalent-of-python-m-simplehttpserver",
            snippet="",
            engine="brave",
        ),
    ]


def test_hit_serializes_to_the_api_shape():
    hit = SearchHit(title="T", url="https://example.org/", snippet="S", engine="brave")
    assert hit.to_dict() == {"title": "T", "url": "https://example.org/", "snippet": "S", "engine": "brave"}


def test_limit_counts_distinct_kept_hits():
    with FakeSearxng() as searxng:
        urls = [hit.url for hit in searxng_search(searxng.base_url, "python", limit=3)]
    assert urls == [
        "https://docs.python.org/3/library/http.server.html",
        "https://en.wikipedia.org/wiki/Python_(programming_language)",
        "https://realpython.com/python-http-server/",
    ]


def test_duplicates_and_non_http_links_are_dropped_and_engine_falls_back_to_engines():
    results = [
        {"url": "https://a.example/", "title": "A", "content": "first", "engine": "brave"},
        {"url": "ftp://files.example/a.txt", "title": "FTP", "content": "", "engine": "brave"},
        {"url": "magnet:?xt=urn:btih:0123", "title": "Torrent", "content": "", "engine": "solidtorrents"},
        {"url": "/relative/path", "title": "Relative", "engine": "brave"},
        {"url": "https://a.example/", "title": "A again", "content": "second", "engine": "wikipedia"},
        {"url": "HTTP://B.example/page", "title": "  B  ", "content": "  spaced  ", "engines": ["startpage", "mojeek"]},
        {"title": "no url at all", "engine": "brave"},
    ]
    with FakeSearxng(results) as searxng:
        hits = searxng_search(searxng.base_url, "anything")
    assert hits == [
        SearchHit(title="A", url="https://a.example/", snippet="first", engine="brave"),
        SearchHit(title="B", url="HTTP://B.example/page", snippet="spaced", engine="startpage"),
    ]


def test_request_carries_query_json_format_and_passthrough_options():
    with FakeSearxng() as searxng:
        searxng_search(
            searxng.base_url, "flood & mill", categories="news,science", language="de-CH", time_range="month"
        )
        searxng_search(searxng.base_url, "plain")
    assert searxng.requests == [
        {
            "q": "flood & mill",
            "format": "json",
            "categories": "news,science",
            "language": "de-CH",
            "time_range": "month",
        },
        {"q": "plain", "format": "json"},
    ]
    assert searxng.paths == ["/search", "/search"]


@pytest.mark.parametrize("trailing", ["", "/"])
def test_base_url_with_path_prefix_and_optional_trailing_slash(trailing):
    with FakeSearxng(prefix="/searxng") as searxng:
        assert searxng.base_url.endswith("/searxng")
        hits = searxng_search(searxng.base_url + trailing, "python", limit=1)
    assert [hit.engine for hit in hits] == ["duckduckgo"]
    assert searxng.paths == ["/searxng/search"]


def test_session_is_used_when_given():
    with FakeSearxng() as searxng, requests.Session() as session:
        # What a caller's session carries (a header, a cookie) reaches SearXNG only if the search goes through it.
        session.headers["X-Searxng-Test"] = "yes"
        session.cookies.set("searxng_pref", "from-session", domain="127.0.0.1", path="/")
        assert len(searxng_search(searxng.base_url, "python", session=session)) == 4
        searxng_search(searxng.base_url, "python")
    with_session, without = searxng.headers
    assert (with_session.get("x-searxng-test"), with_session.get("cookie")) == ("yes", "searxng_pref=from-session")
    assert (without.get("x-searxng-test"), without.get("cookie")) == (None, None)


def test_json_format_disabled_answers_403_and_says_how_to_enable_it():
    with FakeSearxng(mode="html") as searxng:
        failure = failure_of(searxng.base_url)
    assert failure.code == "search_bad_response"
    assert failure.message == (
        f"SearXNG at {searxng.base_url} refused the JSON format (HTTP 403 Forbidden): {ENABLE_JSON}"
    )


def test_html_page_with_200_says_json_is_disabled():
    with FakeSearxng(mode="html200") as searxng:
        failure = failure_of(searxng.base_url)
    assert failure.code == "search_bad_response"
    assert failure.message == f"SearXNG at {searxng.base_url} answered with HTML instead of JSON: {ENABLE_JSON}"


def test_json_without_results_list_is_a_bad_response():
    with FakeSearxng(results=[]) as searxng:
        assert searxng_search(searxng.base_url, "nothing") == []
        searxng.envelope = lambda query: {"query": query, "results": None}
        failure = failure_of(searxng.base_url)
    assert failure.code == "search_bad_response"
    assert failure.message == f"SearXNG at {searxng.base_url} answered JSON without a results list."


def test_server_error_is_unavailable_with_status_and_searxng_reason():
    with FakeSearxng(mode="error") as searxng:
        failure = failure_of(searxng.base_url)
    assert failure.code == "search_unavailable"
    assert failure.message == f"SearXNG at {searxng.base_url} failed the search (HTTP 500: search error)."


def test_rate_limit_is_unavailable_with_status():
    with FakeSearxng(mode="limited") as searxng:
        failure = failure_of(searxng.base_url)
    assert failure.code == "search_unavailable"
    assert failure.message == f"SearXNG at {searxng.base_url} failed the search (HTTP 429)."


def test_wrong_path_is_unavailable_and_says_to_check_the_url():
    with FakeSearxng(prefix="/searxng") as searxng:
        root = searxng.base_url.removesuffix("/searxng")
        failure = failure_of(root)
    assert failure.code == "search_unavailable"
    assert failure.message == (
        f"SearXNG at {root} has no search endpoint (HTTP 404 for {root}/search): check the configured URL."
    )


def test_nothing_listening_is_unavailable_connection_refused():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    failure = failure_of(f"http://127.0.0.1:{port}")
    assert failure.code == "search_unavailable"
    assert failure.message == f"SearXNG at http://127.0.0.1:{port} is not reachable (connection refused)."


def test_unknown_host_is_unavailable_host_not_resolved():
    # .invalid never resolves (RFC 6761), so the lookup fails without leaving the machine.
    failure = failure_of("http://searxng.invalid:8080")
    assert failure.code == "search_unavailable"
    assert failure.message == (
        "SearXNG at http://searxng.invalid:8080 is not reachable (its host name could not be resolved)."
    )


def test_credentials_in_the_base_url_never_appear_in_messages():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    failure = failure_of(f"http://admin:s3cret@127.0.0.1:{port}/searxng/")
    assert failure.message == f"SearXNG at http://127.0.0.1:{port}/searxng is not reachable (connection refused)."


def test_server_that_never_answers_times_out():
    # The kernel completes the TCP handshake from the backlog; nobody ever reads or answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        base_url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        failure = failure_of(base_url, timeout=0.3)
    assert failure.code == "search_unavailable"
    assert failure.message == f"SearXNG at {base_url} did not answer within 0.3 s."
