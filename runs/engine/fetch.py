"""Fetch: load a URL in Chromium and return its Markdown, title, links, final URL and status."""

from __future__ import annotations

import base64
import functools
import logging
import re
import time
from collections.abc import Callable

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from runs.engine.browser import Browser
from runs.engine.http_fetch import http_load, is_js_shell
from runs.engine.markdown import to_markdown
from runs.engine.netguard import REFUSED_HEADER, network_guard
from runs.engine.spec import EngineError, FetchResult, FetchSpec, LoadedPage, Recorder, checked_url

log = logging.getLogger(__name__)

# Waits are cut into slices so a cancel or a lost lease is noticed within about this long.
SLICE_MS = 250
# After "load", pages often keep rendering: data requests, short timers. The init script counts pending
# fetch/XHR calls and timers of at most 1 s, and notes when the DOM last changed; the snapshot waits until
# nothing is pending and the DOM has been quiet for SETTLE_QUIET_MS, or SETTLE_MAX_MS at most (pages that
# poll forever), then reads title, HTML and links in the same round trip.
SETTLE_QUIET_MS = 30
SETTLE_MAX_MS = 3000
HTML_TYPES = ("text/html", "application/xhtml+xml")

_TRACK_PENDING_JS = """(() => {
  const w = window, nativeSetTimeout = w.setTimeout, nativeClearTimeout = w.clearTimeout;
  const timers = new Set();
  let requests = 0, changed = performance.now();
  w.setTimeout = function (handler, delay, ...args) {
    if (typeof handler !== 'function' || (typeof delay === 'number' && delay > 1000)) {
      return nativeSetTimeout.call(this, handler, delay, ...args);
    }
    const id = nativeSetTimeout.call(this, function (...a) { timers.delete(id); return handler.apply(this, a); },
                                     delay, ...args);
    timers.add(id);
    return id;
  };
  w.clearTimeout = function (id) { timers.delete(id); return nativeClearTimeout.call(this, id); };
  if (w.fetch) {
    const nativeFetch = w.fetch;
    w.fetch = function (...a) { requests++; return nativeFetch.apply(this, a).finally(() => { requests--; }); };
  }
  const nativeSend = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...a) {
    requests++;
    this.addEventListener('loadend', () => { requests--; }, {once: true});
    return nativeSend.apply(this, a);
  };
  new MutationObserver(() => { changed = performance.now(); })
    .observe(document, {subtree: true, childList: true, characterData: true});
  Object.defineProperty(w, '__settleState', {value: () => ({pending: requests + timers.size, changed})});
  Object.defineProperty(w, '__nativeSetTimeout', {value: nativeSetTimeout});
})();"""

_SNAPSHOT_JS = """([quiet, max]) => new Promise(resolve => {
  const later = window.__nativeSetTimeout || setTimeout;
  const state = window.__settleState || (() => ({pending: 0, changed: 0}));
  const start = performance.now();
  (function tick() {
    const now = performance.now(), {pending, changed} = state();
    if (now - start >= max || (pending === 0 && now - changed >= quiet)) {
      const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '';
      resolve({
        title: document.title,
        html: doctype + document.documentElement.outerHTML,
        links: Array.from(document.querySelectorAll('a[href]'), a => a.href),
      });
    } else {
      later(tick, 10);
    }
  })();
})"""

# Chromium's net errors -> our codes.
_NET_ERRORS = {
    "ERR_NAME_NOT_RESOLVED": ("dns_error", "The host name could not be resolved."),
    "ERR_NAME_RESOLUTION_FAILED": ("dns_error", "The host name could not be resolved."),
    "ERR_CONNECTION_REFUSED": ("connection_refused", "The server refused the connection."),
    "ERR_CONNECTION_RESET": ("connection_error", "The connection was reset by the server."),
    "ERR_CONNECTION_CLOSED": ("connection_error", "The server closed the connection without answering."),
    "ERR_EMPTY_RESPONSE": ("connection_error", "The server closed the connection without answering."),
    "ERR_ADDRESS_UNREACHABLE": ("connection_error", "The server's address is unreachable."),
    "ERR_CERT_": ("tls_error", "The server's TLS certificate was not accepted."),
    "ERR_SSL_": ("tls_error", "The TLS handshake with the server failed."),
    "ERR_TOO_MANY_REDIRECTS": ("too_many_redirects", "The page redirected too many times."),
    "ERR_ABORTED": ("not_html", "The URL did not lead to a page (it is probably a download)."),
    "Download is starting": ("not_html", "The URL is a download, not an HTML page."),
    "ERR_UNSAFE_PORT": ("navigation_error", "The browser does not connect to this port: Chromium blocks it as unsafe."),
}
_NET_ERROR_NAME = re.compile(r"net::(ERR_[A-Z0-9_]+)")


def _deadline_left(deadline: float) -> float:
    return max(0.0, (deadline - time.monotonic()) * 1000)


def _timeout_error(spec: FetchSpec, what: str) -> EngineError:
    return EngineError("timeout", f"The page did not {what} within timeoutMs ({spec.options.timeout_ms} ms).")


def _navigation_error(error: PlaywrightError) -> EngineError:
    """A documented code and a sentence for the user; Playwright's own text ("Protocol error (Page.navigate)…")
    goes to the log only. Chromium's net error name is kept: it is what a user can look up."""
    text = str(error)
    for marker, (code, message) in _NET_ERRORS.items():
        if marker in text:
            return EngineError(code, message)
    net_error = _NET_ERROR_NAME.search(text)
    if net_error:
        return EngineError("navigation_error", f"The page could not be loaded (the browser reported {net_error[1]}).")
    log.warning("navigation failed: %s", text.strip().splitlines()[0] if text.strip() else "no message")
    return EngineError("navigation_error", "The browser could not load the page.")


def _refusal(spec: FetchSpec, since: float) -> EngineError | None:
    """url_not_allowed with the guard's reason, when it refused a connection of this navigation (a redirect to a
    private address, a DNS name that changed its answer)."""
    if not spec.network.enforced:
        return None
    refusal = network_guard(spec.network).refusal_since(since)
    return EngineError(*refusal) if refusal else None


def _wait_sliced(page: Page, recorder: Recorder, deadline: float, spec: FetchSpec, what: str, wait) -> None:
    """Run `wait(timeout_ms)` in slices, checking for cancellation between them."""
    while True:
        recorder.checkpoint()
        left = _deadline_left(deadline)
        if left <= 0:
            raise _timeout_error(spec, what)
        try:
            wait(min(SLICE_MS, left))
            return
        except PlaywrightTimeout:
            continue


def capture_screenshot(page: Page) -> bytes:
    """A JPEG of the viewport straight from Chromium's DevTools protocol.

    Measured on fresh pages here: ~56 ms against ~95 ms for page.screenshot(), which prepares the page
    (fonts, caret, animations) first; at one screenshot per fetch that difference is most of our overhead.
    """
    session = page.context.new_cdp_session(page)
    try:
        return base64.b64decode(session.send("Page.captureScreenshot", {"format": "jpeg", "quality": 60})["data"])
    finally:
        session.detach()


def _observation(status: int, final_url: str, requested: str, title: str, content_type: str) -> str:
    lines = [f"HTTP {status} {final_url}"]
    if final_url != requested:
        lines.append(f"redirected from {requested}")
    lines.append(f"content-type: {content_type or 'unknown'}")
    lines.append(f"title: {title}")
    return "\n".join(lines)


def load_page(spec: FetchSpec, recorder: Recorder, browser: Browser) -> LoadedPage:
    """Load spec.url in a fresh context, wait for it to settle, record a navigate step (with the screenshot).

    Raises EngineError with a stable code for HTTP errors, timeouts, DNS and connection failures and
    responses that are not HTML.
    """
    checked_url(spec.network, spec.url)
    deadline = time.monotonic() + spec.options.timeout_ms / 1000
    context = browser.new_context(storage_state_path=spec.storage_state_path, network=spec.network)
    try:
        page = context.new_page()
        page.add_init_script(_TRACK_PENDING_JS)
        started = time.monotonic()
        try:
            response = page.goto(spec.url, wait_until="commit", timeout=max(1.0, _deadline_left(deadline)))
        except PlaywrightTimeout:
            raise _timeout_error(spec, "answer") from None
        except PlaywrightError as error:
            raise _refusal(spec, started) or _navigation_error(error) from None
        if response is None:
            raise EngineError("navigation_error", "The browser got no response for the URL.")
        try:
            _wait_sliced(
                page,
                recorder,
                deadline,
                spec,
                "finish loading",
                lambda ms: page.wait_for_load_state("load", timeout=ms),
            )
            if spec.options.wait_for:
                selector = spec.options.wait_for
                _wait_sliced(
                    page,
                    recorder,
                    deadline,
                    spec,
                    f"show {selector!r}",
                    lambda ms: page.wait_for_selector(selector, state="attached", timeout=ms),
                )
            settle_ms = min(SETTLE_MAX_MS, _deadline_left(deadline))
            snapshot = page.evaluate(_SNAPSHOT_JS, [SETTLE_QUIET_MS, settle_ms])
            final_url = page.url
            screenshot = capture_screenshot(page) if spec.options.screenshots else None
        except PlaywrightTimeout:
            raise _timeout_error(spec, "finish loading") from None
        except PlaywrightError as error:
            raise _navigation_error(error) from None
    finally:
        context.close()
    status = response.status
    if REFUSED_HEADER.lower() in response.headers:
        raise _refusal(spec, started) or EngineError("url_not_allowed", "The page led to an address that is refused.")
    content_type = (response.headers.get("content-type") or "").split(";")[0].strip().lower()
    recorder.step(
        action="navigate",
        url=final_url,
        observation=_observation(status, final_url, spec.url, snapshot["title"], content_type),
        screenshot=screenshot,
        duration_ms=int((time.monotonic() - started) * 1000),
    )
    if status >= 400:
        raise EngineError("http_error", f"The page answered HTTP {status}.")
    if content_type and content_type not in HTML_TYPES:
        raise EngineError("not_html", f"The response is {content_type}, not an HTML page.")
    return LoadedPage(
        url=spec.url,
        final_url=final_url,
        status=status,
        title=snapshot["title"],
        html=snapshot["html"],
        links=list(dict.fromkeys(link for link in snapshot["links"] if link.startswith(("http://", "https://")))),
    )


def load(
    spec: FetchSpec,
    recorder: Recorder,
    browser: Browser,
    *,
    in_browser_thread: Callable[[Callable[[], LoadedPage]], LoadedPage] | None = None,
) -> LoadedPage:
    """Load spec.url as options.render says: plain HTTP, Chromium, or plain HTTP first and Chromium when the
    page turns out to be a JavaScript shell.

    in_browser_thread runs the browser part where the browser lives, for callers whose thread does not own it.
    """
    if spec.options.render in ("http", "auto"):
        loaded = http_load(spec, recorder)
        if spec.options.render == "http" or not is_js_shell(loaded.html):
            return loaded
    browser_load = functools.partial(load_page, spec, recorder, browser)
    return in_browser_thread(browser_load) if in_browser_thread else browser_load()


def snapshot_markdown(loaded: LoadedPage, recorder: Recorder, *, main_content: bool) -> str:
    """Convert the loaded page to Markdown and record it as the snapshot step's (complete) observation."""
    converting = time.monotonic()
    markdown = to_markdown(loaded.html, main_content=main_content, url=loaded.final_url)
    recorder.step(
        action="snapshot",
        url=loaded.final_url,
        observation=markdown,
        screenshot=None,
        duration_ms=int((time.monotonic() - converting) * 1000),
    )
    return markdown


def fetch(
    spec: FetchSpec,
    recorder: Recorder,
    browser: Browser,
    *,
    in_browser_thread: Callable[[Callable[[], LoadedPage]], LoadedPage] | None = None,
) -> FetchResult:
    """Load spec.url and convert it to Markdown, recording a navigate and a snapshot step."""
    loaded = load(spec, recorder, browser, in_browser_thread=in_browser_thread)
    markdown = snapshot_markdown(loaded, recorder, main_content=spec.options.main_content)
    return FetchResult(
        url=loaded.url,
        final_url=loaded.final_url,
        status=loaded.status,
        title=loaded.title,
        markdown=markdown,
        links=loaded.links,
        render=loaded.render,
    )
