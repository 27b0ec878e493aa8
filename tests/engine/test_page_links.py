"""A page's title and links as a plain-HTTP load reads them (runs/engine/http_fetch.title_and_links): every link
absolute, as urljoin resolves it against the page (or its <base href>), http(s) only, each once, in page order."""

from __future__ import annotations

from urllib.parse import urljoin

import pytest

from runs.engine.http_fetch import title_and_links

PAGE_URL = "https://example.org/docs/intro"

# Absolute links urljoin takes as they are, and those it spells otherwise or resolves against the page.
HREFS = [
    "https://other.org/a?b=1#c",
    "http://other.org",
    "HTTPS://Other.org/A",
    "https://other.org/a?",
    "https://other.org/a#",
    "https://other.org/a?#f",
    "https://other.org/a;",
    "https://other.org/a;p?q",
    "https://other.org/a\tb",
    "https://\u0441ther.org/",
    "http://?utm_source=x",
    "https://",
    "https:relative",
    "//cdn.example.org/x",
    "/root",
    "../up",
    "same-dir?x=1",
    "#top",
    "mailto:a@example.org",
]


def page_with(hrefs: list[str], head: str = "") -> str:
    anchors = "".join(f'<a href="{href}">x</a>' for href in hrefs)
    return f"<html><head><title> The page </title>{head}</head><body>{anchors}</body></html>"


@pytest.mark.parametrize("href", HREFS)
def test_each_link_is_what_urljoin_makes_of_it(href):
    expected = urljoin(PAGE_URL, href)
    title, links = title_and_links(page_with([href]), PAGE_URL)
    assert title == "The page"
    assert links == ([expected] if expected.startswith(("http://", "https://")) else [])


def test_links_resolve_against_the_base_href_come_once_and_in_order():
    html = page_with(["b", "https://x.org/1", "/c", "b", "https://x.org/1"], head='<base href="https://cdn.org/v2/">')
    assert title_and_links(html, PAGE_URL)[1] == ["https://cdn.org/v2/b", "https://x.org/1", "https://cdn.org/c"]


def test_a_base_href_that_is_not_a_url_is_ignored_as_browsers_do():
    # An unclosed IPv6 literal: urljoin refuses it, and the page's links resolve against the page itself.
    html = page_with(["b", "/c"], head='<base href="http://[::1/v2/">')
    assert title_and_links(html, PAGE_URL) == ("The page", ["https://example.org/docs/b", "https://example.org/c"])
