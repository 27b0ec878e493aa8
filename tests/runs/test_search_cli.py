"""`manage.py search`, typed: results from SearXNG (a fake one on loopback speaking its JSON API), and with --fetch
each result's page as Markdown, or why it could not be fetched."""

from __future__ import annotations

import json

import pytest

from tests.fake_searxng import FakeSearxng
from tests.runs.test_cli_input import typed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def searxng(site, settings):
    results = [
        {"url": site.url("/static"), "title": "Flood", "content": "The river rose.", "engine": "brave"},
        {"url": site.url("/missing"), "title": "Gone", "content": "A dead link.", "engine": "wikipedia"},
    ]
    with FakeSearxng(results=results) as fake:
        settings.SEARXNG_URL = fake.base_url
        yield fake


def test_fetch_prints_each_pages_markdown_under_its_result(capsys, site, searxng):
    code, out, err = typed(capsys, "search", "mill", "--fetch")
    assert (code, err) == (0, "")
    first, second = out.split("\n2. Gone\n")
    header, markdown = first.split("\n\n", 1)
    assert header == f"1. Flood\n   {site.url('/static')}  [brave]\n   The river rose."
    assert markdown.startswith("# Flood at the mill\n") and "Read the [full report]" in markdown
    assert second == (
        f"   {site.url('/missing')}  [wikipedia]\n"
        "   A dead link.\n"
        "   (not fetched: http_error: The page answered HTTP 404.)\n"
    )
    assert searxng.requests[-1]["q"] == "mill"


def test_fetch_json_adds_markdown_or_an_error_to_each_result(capsys, site, searxng):
    code, out, err = typed(capsys, "search", "mill", "--fetch", "--json")
    assert (code, err) == (0, "")
    body = json.loads(out)
    markdown = body["results"][0].pop("markdown")
    assert markdown.startswith("# Flood at the mill\n") and "Read the [full report]" in markdown
    assert body == {
        "results": [
            {"title": "Flood", "url": site.url("/static"), "snippet": "The river rose.", "engine": "brave"},
            {
                "title": "Gone",
                "url": site.url("/missing"),
                "snippet": "A dead link.",
                "engine": "wikipedia",
                "error": {"code": "http_error", "message": "The page answered HTTP 404."},
            },
        ]
    }


def test_without_fetch_no_page_is_fetched(capsys, site, searxng):
    code, out, _ = typed(capsys, "search", "mill", "--json")
    assert code == 0
    assert [sorted(result) for result in json.loads(out)["results"]] == [["engine", "snippet", "title", "url"]] * 2


def test_searxng_failing_is_exit_1_in_one_line(capsys, searxng):
    searxng.mode = "error"
    code, out, err = typed(capsys, "search", "mill", "--fetch")
    assert (code, out) == (1, "")
    assert err.startswith("error: ") and err.count("\n") == 1 and "SearXNG" in err, err
