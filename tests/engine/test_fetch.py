"""The fetch engine against a real Chromium and a real local HTTP server; no Django involved."""

from __future__ import annotations

import time

import pytest

from runs.engine.fetch import fetch
from runs.engine.netpolicy import NetworkPolicy
from runs.engine.spec import EngineError, FetchOptions, FetchSpec, RunAborted
from tests.engine.recorder import ListRecorder
from tests.site import ARTICLE_PARAGRAPHS, long_paragraphs

# README, Stopping, crashes and timeouts: "timeoutMs bounds a run's whole time: page loads, waits, every browser
# action ... A run that reaches it ends `failed` with `timeout` and its browser context is closed." The margin is for
# the last wait slice and closing the context after the deadline, on a 2-core machine shared with other test runs.
TIMEOUT_MARGIN_SECONDS = 3


def spec(url: str, **options) -> FetchSpec:
    return FetchSpec(url=url, options=FetchOptions(**options), network=NetworkPolicy(allow_private=True))


def test_static_page_gives_markdown_title_links_and_two_steps(site, browser):
    recorder = ListRecorder()
    result = fetch(spec(site.url("/static")), recorder, browser)
    assert result.status == 200
    assert result.title == "Flood at the mill"
    assert result.final_url == site.url("/static")
    assert result.markdown.startswith("# Flood at the mill\n")
    for paragraph in ARTICLE_PARAGRAPHS:
        assert paragraph in result.markdown
    assert f"[full report]({site.url('/report')})" in result.markdown
    assert site.url("/report") in result.links and site.url("/privacy") in result.links
    assert [s["action"] for s in recorder.steps] == ["navigate", "snapshot"]
    navigate, snapshot = recorder.steps
    assert navigate["screenshot"][:3] == b"\xff\xd8\xff"  # a JPEG
    assert navigate["observation"].startswith(f"HTTP 200 {site.url('/static')}")
    assert snapshot["observation"] == result.markdown


def test_main_content_drops_navigation_and_footer_but_whole_page_keeps_them(site, browser):
    main = fetch(spec(site.url("/static"), main_content=True), ListRecorder(), browser).markdown
    whole = fetch(spec(site.url("/static"), main_content=False), ListRecorder(), browser).markdown
    assert "Privacy" not in main and "Sport" not in main
    assert "Privacy" in whole and "Sport" in whole
    assert ARTICLE_PARAGRAPHS[0] in whole


def test_javascript_rendered_content_appears(site, browser):
    result = fetch(spec(site.url("/js"), main_content=False), ListRecorder(), browser)
    assert "# Rendered headline" in result.markdown
    assert "This paragraph was written by JavaScript." in result.markdown
    assert "A late paragraph appended after load." in result.markdown


def test_wait_for_selector(site, browser):
    result = fetch(spec(site.url("/js"), main_content=False, wait_for="#root p"), ListRecorder(), browser)
    assert "This paragraph was written by JavaScript." in result.markdown


def test_redirect_chain_reports_final_url(site, browser):
    recorder = ListRecorder()
    result = fetch(spec(site.url("/r/3")), recorder, browser)
    assert result.url == site.url("/r/3")
    assert result.final_url == site.url("/static")
    assert f"redirected from {site.url('/r/3')}" in recorder.steps[0]["observation"]


def test_long_page_is_complete(site, browser):
    result = fetch(spec(site.url("/long")), ListRecorder(), browser)
    paragraphs = long_paragraphs()
    assert sum(len(p) for p in paragraphs) > 10_000
    for paragraph in paragraphs:
        assert paragraph in result.markdown


@pytest.mark.parametrize(("path", "code"), [("/missing", "http_error"), ("/broken", "http_error")])
def test_http_error_pages_fail_with_http_error_after_recording_navigation(site, browser, path, code):
    recorder = ListRecorder()
    with pytest.raises(EngineError) as failure:
        fetch(spec(site.url(path)), recorder, browser)
    assert failure.value.code == code
    assert failure.value.message.startswith("The page answered HTTP ")
    assert [s["action"] for s in recorder.steps] == ["navigate"]


@pytest.mark.parametrize("path", ["/data.json", "/file.pdf"])
def test_non_html_responses_fail_with_not_html(site, browser, path):
    with pytest.raises(EngineError) as failure:
        fetch(spec(site.url(path)), ListRecorder(), browser)
    assert failure.value.code == "not_html"


def test_page_that_never_finishes_loading_times_out_at_timeout_ms_and_closes_its_context(site, browser):
    # Long enough that the page's headers arrive well within it on a loaded machine (its first bytes are sent at
    # once): what times out is the load, not the answer.
    timeout_ms = 4000
    started = time.monotonic()
    with pytest.raises(EngineError) as failure:
        # The page hangs far longer than timeoutMs plus the margin: a fetch that ignored timeoutMs could not pass.
        fetch(spec(site.url("/hang?s=30"), timeout_ms=timeout_ms), ListRecorder(), browser)
    took = time.monotonic() - started
    assert failure.value.code == "timeout"
    assert failure.value.message == "The page did not finish loading within timeoutMs (4000 ms)."
    assert timeout_ms / 1000 <= took < timeout_ms / 1000 + TIMEOUT_MARGIN_SECONDS
    assert browser.launched().contexts == []


def test_dns_failure(browser):
    with pytest.raises(EngineError) as failure:
        fetch(spec("http://no-such-host.invalid/"), ListRecorder(), browser)
    assert failure.value.code == "dns_error"


def test_connection_refused(browser):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(EngineError) as failure:
        fetch(spec(f"http://127.0.0.1:{port}/"), ListRecorder(), browser)
    assert failure.value.code == "connection_refused"


def test_private_addresses_are_refused_unless_allowed(site, browser):
    refused = FetchSpec(url=site.url("/static"), network=NetworkPolicy(allow_private=False))
    with pytest.raises(EngineError) as failure:
        fetch(refused, ListRecorder(), browser)
    assert failure.value.code == "url_not_allowed"


def test_cancel_during_a_load_that_never_finishes_aborts_at_the_next_checkpoint(site, browser):
    # The README promises no time for a cancel to take effect, only that it cancels. The page never finishes
    # loading (it hangs longer than timeoutMs), so an engine that looked for a cancel only between steps would end
    # with `timeout`; the cancel (seen at the third checkpoint) must stop the load itself, before anything is
    # recorded, and close the context.
    recorder = ListRecorder(abort_after=2)
    with pytest.raises(RunAborted):
        fetch(spec(site.url("/hang?s=30"), timeout_ms=20_000), recorder, browser)
    assert recorder.steps == []
    assert browser.launched().contexts == []


def test_browser_is_reused_and_contexts_do_not_leak(site, browser):
    fetch(spec(site.url("/static")), ListRecorder(), browser)
    chromium = browser._ensure()
    fetch(spec(site.url("/static")), ListRecorder(), browser)
    assert browser._ensure() is chromium
    assert chromium.contexts == []
