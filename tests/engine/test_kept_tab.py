"""A browser that keeps its tab (a crawl's lane, Browser.tab_pages > 1) reads its pages one after the other in one tab:
each result is its own page's, the pages share one browser session, nothing of a page runs on once it was read, and
the tab is made anew after tab_pages pages, after a failure and for another storage state. A browser that keeps no
tab (every run's) gives each page a fresh context. Real Chromium, a real local HTTP server."""

from __future__ import annotations

import json
import socket
import time

import pytest

from runs.engine.fetch import fetch
from runs.engine.netpolicy import NetworkPolicy
from runs.engine.spec import EngineError, FetchOptions, FetchSpec
from tests.engine.recorder import ListRecorder
from tests.site import PageServer

# A page that says which cookies its browser session holds.
SHOW = "<title>{title}</title><h1>{title}</h1><p id=c>cookies:</p><script>document.getElementById('c').textContent = 'cookies: [' + document.cookie + ']';</script>"  # noqa: E501


class Site(PageServer):
    def answer(self, path: str) -> tuple:
        page, _, query = path.partition("?")
        if page == "/set":
            return 200, "text/html", "<title>set</title><h1>The cookie is set</h1>", {"Set-Cookie": "seen=yes; Path=/"}
        if page == "/show":
            return 200, "text/html", SHOW.format(title=query or "show")
        if page == "/pinging":  # a page that goes on asking the server for as long as it runs
            script = "setInterval(() => fetch('/ping'), 30);"
            return 200, "text/html", f"<title>pinging</title><h1>A page that keeps asking</h1><script>{script}</script>"
        if page == "/ping":
            return 200, "text/plain", "pong"
        if page == "/opener":  # opens a window of its own, which keeps asking
            script = "window.open('/pinging', '_blank');"
            return (
                200,
                "text/html",
                f"<title>opener</title><h1>A page that opens a window</h1><script>{script}</script>",
            )
        if page == "/stay":  # asks to be kept (a beforeunload handler that says no)
            script = "addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = 'no'; });"
            return 200, "text/html", f"<title>stay</title><h1>Please stay</h1><script>{script}</script>"
        if page == "/hop":  # leaves itself for /show?hopped while it loads
            return 200, "text/html", "<title>hop</title><script>location.replace('/show?hopped')</script>"
        return 404, "text/plain", "not here"


@pytest.fixture(scope="module")
def site():
    with Site() as running:
        yield running


@pytest.fixture
def keeping(browser):
    """The test process's browser, keeping its tab for 3 pages (as a crawl's lanes keep theirs for TAB_PAGES)."""
    browser.tab_pages = 3
    yield browser
    browser.tab_pages = 1
    if browser.kept_tab is not None:
        browser.kept_tab.tab.page.context.close()
        browser.kept_tab = None


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens on it once the socket is closed


def read(browser, url: str, **options):
    policy = NetworkPolicy(allow_private=True)
    state = options.pop("storage_state_path", None)
    options.setdefault("main_content", False)
    spec = FetchSpec(url=url, options=FetchOptions(**options), network=policy, storage_state_path=state)
    return fetch(spec, ListRecorder(), browser)


def test_pages_in_a_kept_tab_share_one_session_each_result_its_own_and_a_fresh_tab_after_tab_pages(site, keeping):
    assert read(keeping, site.url("/set")).title == "set"
    second = read(keeping, site.url("/show?second"))
    assert (second.title, second.final_url) == ("second", site.url("/show?second"))
    assert "cookies: [seen=yes]" in second.markdown and "The cookie is set" not in second.markdown
    third = read(keeping, site.url("/hop"))  # a page that leaves itself: the document it went to is read
    assert (third.title, third.final_url) == ("hopped", site.url("/show?hopped"))
    assert "cookies: [seen=yes]" in third.markdown
    fourth = read(keeping, site.url("/show?fourth"))  # after 3 pages: a fresh tab, a fresh session
    assert fourth.title == "fourth"
    assert "cookies: []" in fourth.markdown


def test_a_browser_that_keeps_no_tab_gives_every_page_a_fresh_context(site, browser):
    assert browser.tab_pages == 1
    read(browser, site.url("/set"))
    assert "cookies: []" in read(browser, site.url("/show")).markdown


def test_nothing_of_a_page_runs_on_once_it_was_read_nor_of_the_windows_it_opened(site, keeping):
    for path in ("/pinging", "/opener"):
        read(keeping, site.url(path))
        time.sleep(0.2)  # a ping sent as the page was left is answered
        pings = site.hits["/ping"]
        time.sleep(1)  # the page asks every 30 ms while it runs
        assert site.hits["/ping"] == pings, path
    assert keeping.kept_tab is not None  # the tab was kept all along


def test_a_page_that_asks_to_be_kept_is_left_all_the_same(site, keeping):
    read(keeping, site.url("/set"))
    assert read(keeping, site.url("/stay")).title == "stay"
    after = read(keeping, site.url("/show?after"))
    # Its own page, in the same tab: the tab left /stay for about:blank (else it would have been made anew)
    assert after.title == "after" and "cookies: [seen=yes]" in after.markdown


def test_after_a_failed_page_the_next_one_gets_a_fresh_tab(site, keeping):
    read(keeping, site.url("/set"))
    with pytest.raises(EngineError) as failed:
        read(keeping, f"http://127.0.0.1:{closed_port()}/")
    assert failed.value.code == "connection_refused"
    assert "cookies: []" in read(keeping, site.url("/show")).markdown


def test_a_page_with_another_storage_state_gets_a_tab_of_its_own(site, keeping, tmp_path):
    read(keeping, site.url("/set"))
    state = tmp_path / "state.json"
    cookie = {"name": "profile", "value": "1", "domain": "127.0.0.1", "path": "/", "expires": -1}
    cookie |= {"httpOnly": False, "secure": False, "sameSite": "Lax"}
    state.write_text(json.dumps({"cookies": [cookie], "origins": []}))
    with_state = read(keeping, site.url("/show"), storage_state_path=str(state))
    assert "cookies: [profile=1]" in with_state.markdown
    assert "cookies: []" in read(keeping, site.url("/show")).markdown  # and back: not the profile's tab
