"""Fetch: load a URL in Chromium and return its Markdown, title, links, final URL and status."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from runs.engine.browser import Browser
from runs.engine.crawl_rules import canonical_link
from runs.engine.http_fetch import http_error, http_load, is_js_shell, title_and_links
from runs.engine.markdown import Converted, convert
from runs.engine.navigation import (
    HTML_MAX_CHARS,
    LOAD_GRACE_MS,
    Deadline,
    Snapshot,
    Tab,
    capture_screenshot,
    navigation_error,
)
from runs.engine.netguard import REFUSED_HEADER, network_guard
from runs.engine.spec import (
    EngineError,
    FetchResult,
    FetchSpec,
    LoadedPage,
    PageCopy,
    Recorder,
    checked_url,
    first_line,
)

log = logging.getLogger(__name__)

HTML_TYPES = ("text/html", "application/xhtml+xml")
BLANK_MS = 5000  # how long a kept tab may take to leave its page for about:blank


def _refusal(spec: FetchSpec, since: float) -> EngineError | None:
    """url_not_allowed with the guard's reason, when it refused a connection of this navigation (a redirect to a
    private address, a DNS name that changed its answer)."""
    if not spec.network.enforced:
        return None
    refusal = network_guard(spec.network).refusal_since(since)
    return EngineError(*refusal) if refusal else None


def _observation(status: int, final_url: str, requested: str, snapshot: Snapshot, content_type: str) -> str:
    lines = [f"HTTP {status} {final_url}"]
    if final_url != requested:
        lines.append(f"redirected from {requested}")
    lines.append(f"content-type: {content_type or 'unknown'}")
    lines.append(f"title: {snapshot.title}")
    if snapshot.load_state != "load":
        lines.append(f"load state: {snapshot.load_state} (the load event did not come within {LOAD_GRACE_MS} ms)")
    if snapshot.failed_hop:
        lines.append(f"the page then navigated itself to {snapshot.failed_hop}, which did not load: this page is kept")
    if snapshot.cut:
        lines.append(f"the page's HTML is longer than {HTML_MAX_CHARS} characters: only its beginning was read")
    return "\n".join(lines)


@dataclass
class _KeptTab:
    """A tab kept between pages, for pages read with the same storage state and network policy (its key)."""

    key: tuple
    tab: Tab
    served: int = 0


@contextmanager
def _page_tab(browser: Browser, spec: FetchSpec) -> Iterator[Tab]:
    """The tab that reads spec's page: a fresh context's, closed after it (browser.tab_pages 1: every run on its own);
    or, for a browser that keeps its tab (a crawl's lane), the one its last page was read in. A kept tab is sent to
    about:blank after each page (nothing of that page runs on while the lane waits), and made anew after tab_pages
    pages, for another storage state or network policy, and after any failure (a page that timed out, crashed its
    renderer, would not leave).

    Measured here on 80 WCXB pages, one at a time, Chromium's CPU per page: fresh context 1.22-1.31 s, kept tab via
    about:blank 0.49 s. Most of what a page costs Chromium is the renderer process and page a fresh context starts.
    A kept tab shares cookies, storage and cache from page to page, as one browser session going through a site does.
    """
    key = (spec.storage_state_path, spec.network)
    kept: _KeptTab | None = browser.kept_tab  # type: ignore[assignment]
    browser.kept_tab = None  # while the page is read: a failure leaves it closed, not kept
    if kept is not None and (kept.key != key or kept.served >= browser.tab_pages or kept.tab.page.is_closed()):
        with contextlib.suppress(PlaywrightError):  # its browser may be gone
            kept.tab.page.context.close()
        kept = None
    if kept is None:
        context = browser.new_context(storage_state_path=spec.storage_state_path, network=spec.network)
        try:
            kept = _KeptTab(key, Tab.open(context))
        except BaseException:
            context.close()
            raise
    else:
        kept.tab.reset()
    tab = kept.tab
    try:
        yield tab
        kept.served += 1
        if kept.served < browser.tab_pages:
            try:
                tab.page.goto("about:blank", timeout=BLANK_MS)
                # Then the popups the page opened: after the page was left, none can come that Playwright has not
                # begun to hear of (one it reports later is closed when the tab is made anew).
                for other in tab.page.context.pages:
                    if other != tab.page:
                        other.close()
                browser.kept_tab = kept
            except PlaywrightError as error:
                log.info("a kept tab is made anew: %s", first_line(error))
    finally:
        if browser.kept_tab is not kept:
            tab.page.context.close()


def load_page(spec: FetchSpec, recorder: Recorder, browser: Browser, *, convert: bool = False) -> LoadedPage:
    """Load spec.url in a fresh context (or a crawl lane's kept tab: _page_tab), wait for it to settle
    (runs/engine/navigation.py: load waited for a few seconds at most, the page's own navigations followed), record a
    navigate step (with the screenshot). With convert, the Markdown (spec.options.main_content) is converted on
    another thread as soon as the HTML is read, while the browser takes the screenshot and lets the tab go
    (LoadedPage.markdown).

    Raises EngineError with a stable code for HTTP errors, timeouts, DNS and connection failures and
    responses that are not HTML.
    """
    checked_url(spec.network, spec.url)
    deadline = Deadline(spec.options.timeout_ms, recorder.checkpoint)
    with _page_tab(browser, spec) as tab:
        page = tab.page
        started = time.monotonic()
        try:
            response = tab.goto(spec.url, deadline)
        except PlaywrightError as error:
            raise _refusal(spec, started) or navigation_error(error) from None
        if response is None:
            raise EngineError("navigation_error", "The browser got no response for the URL.")
        try:
            snapshot = tab.snapshot(deadline, spec.options.wait_for)
            final_url = snapshot.url
            converting = (
                _converter().submit(_timed_conversion, snapshot.html, spec.options.main_content, final_url)
                if convert and response.status < 400
                else None
            )
            screenshot = capture_screenshot(page) if spec.options.screenshots else None
        except PlaywrightTimeout:
            raise deadline.expired("finish loading") from None
        except PlaywrightError as error:
            raise navigation_error(error) from None
        response = snapshot.response or response
        status, headers = response.status, response.headers
    if REFUSED_HEADER.lower() in headers:
        raise _refusal(spec, started) or EngineError("url_not_allowed", "The page led to an address that is refused.")
    content_type = (headers.get("content-type") or "").split(";")[0].strip().lower()
    recorder.step(
        action="navigate",
        url=final_url,
        observation=_observation(status, final_url, spec.url, snapshot, content_type),
        screenshot=screenshot,
        duration_ms=int((time.monotonic() - started) * 1000),
        page=PageCopy(final_url, status, content_type, snapshot.html),
    )
    if status >= 400:
        raise http_error(status, headers.get("retry-after"))
    if content_type and content_type not in HTML_TYPES:
        raise EngineError("not_html", f"The response is {content_type}, not an HTML page.")
    return LoadedPage(
        url=spec.url,
        final_url=final_url,
        status=status,
        title=snapshot.title,
        html=snapshot.html,
        links=list(dict.fromkeys(link for link in snapshot.links if link.startswith(("http://", "https://")))),
        load_state=snapshot.load_state,
        truncated=snapshot.cut,
        markdown=converting,
    )


_converters: list[ThreadPoolExecutor] = []
_converters_lock = threading.Lock()
# Where Markdown conversions go in this context instead of this process's Markdown thread: a crawl converts its pages
# in processes of its own (conversion is CPU-bound Python; one process would hold the crawl to one core).
conversions: ContextVar[Executor | None] = ContextVar("conversions", default=None)
# Called in this context once load() has the page (its requests to the site are over), before it is converted and
# recorded: a crawl frees the page's place in its host's concurrency then.
page_loaded: ContextVar[Callable[[], None] | None] = ContextVar("page_loaded", default=None)


def _converter() -> Executor:
    """The executor of this context's conversions, else this process's Markdown thread (one: a worker runs one run
    at a time, and conversion is CPU-bound)."""
    chosen = conversions.get()
    if chosen is not None:
        return chosen
    with _converters_lock:
        if not _converters:
            _converters.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="markdown"))
        return _converters[0]


def _timed_conversion(html: str, main_content: bool, url: str) -> tuple[Converted, int]:
    started = time.monotonic()
    converted = convert(html, main_content_only=main_content, url=url)
    return converted, int((time.monotonic() - started) * 1000)


def load(
    spec: FetchSpec,
    recorder: Recorder,
    browser: Browser,
    *,
    in_browser_thread: Callable[[Callable[[], LoadedPage]], LoadedPage] | None = None,
    convert: bool = False,
) -> LoadedPage:
    """Load spec.url as options.render says: plain HTTP, Chromium, or plain HTTP first and Chromium when the
    page turns out to be a JavaScript shell.

    in_browser_thread runs the browser part where the browser lives, for callers whose thread does not own it;
    convert starts the Markdown conversion early (load_page).
    """
    if spec.options.render in ("http", "auto"):
        loaded = http_load(spec, recorder)
        if spec.options.render == "http" or not is_js_shell(loaded.html):
            return _announced(loaded)
    browser_load = functools.partial(load_page, spec, recorder, browser, convert=convert)
    return _announced(in_browser_thread(browser_load) if in_browser_thread else browser_load())


def _announced(loaded: LoadedPage) -> LoadedPage:
    announce = page_loaded.get()
    if announce is not None:
        announce()
    return loaded


def load_archived(copy: PageCopy, recorder: Recorder, *, source: str) -> LoadedPage:
    """A page from a run's archive in place of loading it: no request leaves the machine. Recorded like a load
    (a step that says where the page came from, and archives it again for this run); source: which run and step."""
    started = time.monotonic()
    title, links = title_and_links(copy.html, copy.url)
    observation = [
        f"HTTP {copy.status} {copy.url}",
        f"read from the archive of {source}: no request was made",
        f"content-type: {copy.content_type or 'unknown'}",
        f"title: {title}",
    ]
    recorder.step(
        action="load-archive",
        url=copy.url,
        observation="\n".join(observation),
        screenshot=None,
        duration_ms=int((time.monotonic() - started) * 1000),
        page=copy,
    )
    return LoadedPage(
        url=copy.url,
        final_url=copy.url,
        status=copy.status,
        title=title,
        html=copy.html,
        links=links,
        render="archive",
    )


def snapshot_markdown(loaded: LoadedPage, recorder: Recorder, *, main_content: bool) -> Converted:
    """Convert the loaded page to Markdown (or take the conversion load_page started) and record it as the snapshot
    step's (complete) observation; the step's duration is the conversion's. With the page's type."""
    if loaded.markdown is not None:
        converted, duration_ms = loaded.markdown.result()
    elif conversions.get() is not None:
        converting = _converter().submit(_timed_conversion, loaded.html, main_content, loaded.final_url)
        converted, duration_ms = converting.result()
    else:
        converted, duration_ms = _timed_conversion(loaded.html, main_content, loaded.final_url)
    recorder.step(
        action="snapshot",
        url=loaded.final_url,
        observation=converted.markdown,
        screenshot=None,
        duration_ms=duration_ms,
    )
    return converted


def fetch(
    spec: FetchSpec,
    recorder: Recorder,
    browser: Browser,
    *,
    in_browser_thread: Callable[[Callable[[], LoadedPage]], LoadedPage] | None = None,
) -> FetchResult:
    """Load spec.url and convert it to Markdown, recording a navigate and a snapshot step."""
    loaded = load(spec, recorder, browser, in_browser_thread=in_browser_thread, convert=True)
    converted = snapshot_markdown(loaded, recorder, main_content=spec.options.main_content)
    return FetchResult(
        url=loaded.url,
        final_url=loaded.final_url,
        status=loaded.status,
        title=loaded.title,
        markdown=converted.markdown,
        links=loaded.links,
        render=loaded.render,
        load_state=loaded.load_state,
        truncated=loaded.truncated,
        page_type=converted.page_type,
        canonical=canonical_link(loaded.html, loaded.final_url),
    )
