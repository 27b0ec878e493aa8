"""Bringing a browser page to a state worth reading, for fetch (and extract through it) and the agent.

Three things real pages do that a plain `goto(wait_until="load")` handles badly:
- `load` never fires when one subresource hangs, though the document was complete long before. The load event
  is waited for LOAD_GRACE_MS after DOMContentLoaded at most; then the page is read as it is, and the caller
  is told how far it got (load_state: "load" or "domcontentloaded").
- Pages navigate themselves (a script sets `location`, a meta refresh) while they load or while the snapshot
  is read, which destroys the document under the script. The snapshot is taken again on the next document,
  up to MAX_HOPS documents; a navigation the page has announced (the Navigation API's navigate event) or a
  meta refresh due within REFRESH_FOLLOW_S is waited for before the snapshot is kept.
- After `load`, pages often keep rendering: data requests, short timers. TRACK_PENDING_JS counts pending
  fetch/XHR calls and timers of at most 500 ms (longer ones are deferred loaders, not rendering), but not the
  timers of polling loops (a timer set by a timer set by a timer..., one handler armed over and over, or a timer
  that sets a timer running the same code), which
  real pages run forever waiting for a font or a third-party script that never came; it also notes when the DOM
  last changed. The snapshot waits until nothing is pending and the DOM has been quiet for SETTLE_QUIET_MS, or
  SETTLE_MAX_MS at most (pages that render forever), then reads title, HTML and links in the same round trip.
Every wait is cut into SLICE_MS slices so that a cancel or a lost lease is noticed (Deadline.checkpoint).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from playwright._impl._sync_base import mapping as public_objects
from playwright.sync_api import BrowserContext, Page, Request, Response
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from runs.engine.netguard import REFUSED_HEADER
from runs.engine.spec import EngineError, first_line

log = logging.getLogger(__name__)

SLICE_MS = 250
LOAD_GRACE_MS = 3000
SETTLE_QUIET_MS = 30
SETTLE_MAX_MS = 3000
MAX_HOPS = 5
REFRESH_FOLLOW_S = 3
NEXT_DOCUMENT_MS = 3000
FAILURE_REPORT_MS = 1000
SCREENSHOT_MS = 5000
AGAIN_MS = 10_000
# What a page's script may hand back, cut in the page (the plain-HTTP path reads at most as much: http_fetch.py).
HTML_MAX_CHARS = 20 * 1024 * 1024
TITLE_MAX_CHARS = 1000
LINKS_MAX = 10_000
LINK_MAX_CHARS = 4096


# The page's links, absolute. An SVG <a>'s href is an SVGAnimatedString (its baseVal the attribute as written), not a
# string: resolved against the document's base like an HTML link's (before, one SVG link failed the whole read).
LINKS_OF_JS = """const linksOf = (doc) => {
  const links = [];
  for (const a of doc.querySelectorAll('a[href]')) {
    let href = a.href;
    if (typeof href !== 'string') {
      try { href = new URL(a.getAttribute('href'), doc.baseURI).href; } catch (error) { continue; }
    }
    links.push(href.slice(0, __LINK_MAX__));
    if (links.length >= __LINKS_MAX__) break;
  }
  return links;
};"""


def _with_limits(script: str) -> str:
    script = script.replace("__LINKS_OF__", LINKS_OF_JS)
    limits = {"__HTML_MAX__": HTML_MAX_CHARS, "__TITLE_MAX__": TITLE_MAX_CHARS, "__LINKS_MAX__": LINKS_MAX}
    for name, value in {**limits, "__LINK_MAX__": LINK_MAX_CHARS}.items():
        script = script.replace(name, str(value))
    return script


TRACK_PENDING_JS = _with_limits("""(() => {
  __LINKS_OF__
  const w = window, nativeSetTimeout = w.setTimeout, nativeClearTimeout = w.clearTimeout;
  const nativeClearInterval = w.clearInterval;
  // id -> when it is due; one past due by 200 ms was cancelled in a way not seen here. A timer set by a timer set by
  // a timer... (deeper than MAX_DEPTH), or a handler armed again and again (from promise callbacks), is a polling
  // loop ("are the fonts / is the ad script there yet?"), not rendering: not counted.
  // A timer whose handler sets a timer with the same code (the same function, or a new closure of the same source:
  // `setTimeout(function () { isJqueryInit(callback) }, 500)` from inside itself) is a polling loop at once.
  const timers = new Map(), armed = new WeakMap(), MAX_DEPTH = 3, sourceOf = Function.prototype.toString;
  let requests = 0, changed = performance.now(), leaving = false, depth = 0, running = null;
  const sameCode = (handler) => {
    if (running === null) return false;
    if (running === handler) return true;
    try { return sourceOf.call(running) === sourceOf.call(handler); } catch (error) { return false; }
  };
  w.setTimeout = function (handler, delay, ...args) {
    if (typeof handler !== 'function' || (typeof delay === 'number' && delay > 500)) {
      return nativeSetTimeout.call(this, handler, delay, ...args);
    }
    const level = depth + 1;
    const polling = level > 1 && level <= MAX_DEPTH && sameCode(handler);
    const id = nativeSetTimeout.call(this, function (...a) {
      timers.delete(id);
      const outer = depth, outerHandler = running;
      depth = level;
      running = handler;
      try { return handler.apply(this, a); } finally { depth = outer; running = outerHandler; }
    }, delay, ...args);
    const times = (armed.get(handler) || 0) + 1;
    armed.set(handler, times);
    if (level <= MAX_DEPTH && times <= MAX_DEPTH && !polling) {
      timers.set(id, performance.now() + (Number(delay) || 0));
    }
    return id;
  };
  w.clearTimeout = function (id) { timers.delete(id); return nativeClearTimeout.call(this, id); };
  w.clearInterval = function (id) { timers.delete(id); return nativeClearInterval.call(this, id); };
  if (w.fetch) {
    const nativeFetch = w.fetch;
    w.fetch = function (...a) { requests++; return nativeFetch.apply(this, a).finally(() => { requests--; }); };
  }
  const nativeSend = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function (...a) {
    const done = () => { requests--; };
    requests++;
    this.addEventListener('loadend', done, {once: true});
    try {
      return nativeSend.apply(this, a);
    } catch (error) {  // not sent (not opened, sent twice): no loadend will come
      this.removeEventListener('loadend', done);
      requests--;
      throw error;
    }
  };
  // The Navigation API's navigate event, not beforeunload: a beforeunload listener makes closing a context whose
  // page is navigating at that moment hang in Chromium 156 (seen in tests/engine/test_navigation.py).
  // The document as it is, handed to runs/engine/navigation.py Tab when the page starts a navigation of its own:
  // if the next document never loads, this one is what the page had to show.
  const handOver = () => {
    if (typeof w.__keepDocument === 'function' && document.documentElement) {
      const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '';
      // parsed: false when the page leaves from a script in its head: Chromium stops parsing it there.
      const html = doctype + document.documentElement.outerHTML;
      w.__keepDocument({url: location.href, title: document.title.slice(0, __TITLE_MAX__),
                        parsed: document.readyState !== 'loading',
                        html: html.slice(0, __HTML_MAX__), cut: html.length > __HTML_MAX__,
                        links: linksOf(document)});
    }
  };
  if (w.navigation && w.navigation.addEventListener) w.navigation.addEventListener('navigate', event => {
    if (event.hashChange || event.downloadRequest !== null && event.downloadRequest !== undefined) return;
    leaving = true;
    handOver();

  });
  new MutationObserver(() => { changed = performance.now(); })
    .observe(document, {subtree: true, childList: true, characterData: true});
  const pendingTimers = () => {
    const now = performance.now();
    let count = 0;
    for (const [id, due] of timers) {
      if (now - due > 200) timers.delete(id); else count++;
    }
    return count;
  };
  Object.defineProperty(w, '__settleState', {
    value: () => ({pending: requests + pendingTimers(), changed, leaving}),
  });
  Object.defineProperty(w, '__nativeSetTimeout', {value: nativeSetTimeout});
})();""")

# The snapshot also says whether the page is about to leave: it announced a navigation (the Navigation API's
# navigate event), or a meta refresh with a URL other than this one is due within the given number of seconds.
SNAPSHOT_JS = _with_limits("""([quiet, max, refreshWithin]) => new Promise((resolve, reject) => {
  __LINKS_OF__
  const later = window.__nativeSetTimeout || setTimeout;
  const state = window.__settleState || (() => ({pending: 0, changed: 0, leaving: false}));
  const start = performance.now();
  const refresh = () => {
    const meta = document.querySelector('meta[http-equiv="refresh" i]');
    const found = meta && /^\\s*(\\d+(?:\\.\\d*)?)\\s*[;,]\\s*(?:url\\s*=\\s*)?['"]?([^'"]+)/i.exec(meta.content || '');
    if (!found || Number(found[1]) > refreshWithin) return null;
    try {
      return new URL(found[2].trim(), document.baseURI).href === location.href ? null : Number(found[1]);
    } catch (e) { return null; }
  };
  // An error in a later tick would never settle the promise (the evaluate would wait forever): it rejects it.
  (function tick() {
    try {
      const now = performance.now(), {pending, changed, leaving} = state();
      // A page that announced it is leaving is read at once: its next document may never load (a redirect to a
      // host that does not answer), and then this one is what the page had to show.
      // A document just committed may not have its <html> element yet: read it once it has (or at max, empty).
      const ready = document.documentElement !== null || now - start >= max;
      if (ready && (leaving || now - start >= max || (pending === 0 && now - changed >= quiet))) {
        const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '';
        const html = document.documentElement ? doctype + document.documentElement.outerHTML : '';
        // Cut in the page: a page can build hundreds of MB of HTML, which would cross to the worker whole.
        resolve({
          url: location.href,
          title: document.title.slice(0, __TITLE_MAX__),
          html: html.slice(0, __HTML_MAX__),
          cut: html.length > __HTML_MAX__,
          links: linksOf(document),
          leaving: Boolean(leaving),
          refresh: refresh(),
        });
      } else {
        later(tick, 10);
      }
    } catch (error) { reject(error); }
  })();
})""")

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
# What Playwright says when a navigation replaced the document a script was running in.
_REPLACED = ("Execution context was destroyed", "Cannot find context with specified id")


def navigation_error(error: PlaywrightError) -> EngineError:
    """A documented code and a sentence for the user; Playwright's own text ("Protocol error (Page.navigate)…")
    goes to the log only. Chromium's net error name is kept: it is what a user can look up."""
    text = str(error)
    for marker, (code, message) in _NET_ERRORS.items():
        if marker in text:
            return EngineError(code, message)
    net_error = _NET_ERROR_NAME.search(text)
    if net_error:
        return EngineError("navigation_error", f"The page could not be loaded (the browser reported {net_error[1]}).")
    log.warning("navigation failed: %s", first_line(text))
    return EngineError("navigation_error", "The browser could not load the page.")


def replaced_document(error: PlaywrightError) -> bool:
    """True when the error only means the page navigated while a script read it."""
    return any(marker in str(error) for marker in _REPLACED)


PAGE_HTML_JS = _with_limits("""() => {
  const doctype = document.doctype ? new XMLSerializer().serializeToString(document.doctype) : '';
  return document.documentElement ? (doctype + document.documentElement.outerHTML).slice(0, __HTML_MAX__) : '';
}""")


def page_html(page: Page) -> str:
    """The page's HTML as it is now, at most HTML_MAX_CHARS (cut in the page, unlike page.content())."""
    return page.evaluate(PAGE_HTML_JS)


def capture_screenshot(page: Page, **options) -> bytes | None:
    """A JPEG of the viewport within SCREENSHOT_MS, or None when the browser cannot take it (a page replacing itself
    at that moment): the page was read, and its step is recorded without a picture.

    Playwright's screenshot with no preparation of the page (animations and caret left alone): measured on real
    pages here, 36 ms against 33 ms for a bare DevTools Page.captureScreenshot, which has no timeout and has been
    seen to never answer when the page navigates at that moment (tests/engine/test_navigation.py).
    """
    try:
        return page.screenshot(
            type="jpeg", quality=60, timeout=SCREENSHOT_MS, animations="allow", caret="initial", **options
        )
    except PlaywrightError as error:
        log.warning("no screenshot: %s", first_line(error))
        return None


class Deadline:
    """The time a run may still spend, in slices: checkpoint() is called between them (cancel, lost lease)."""

    def __init__(self, timeout_ms: int, checkpoint: Callable[[], None] = lambda: None):
        self.timeout_ms = timeout_ms
        self.checkpoint = checkpoint
        self._ends = time.monotonic() + timeout_ms / 1000

    def left_ms(self) -> float:
        return max(0.0, (self._ends - time.monotonic()) * 1000)

    def expired(self, what: str) -> EngineError:
        return EngineError("timeout", f"The page did not {what} within timeoutMs ({self.timeout_ms} ms).")

    def wait(self, what: str, wait: Callable[[float], object], *, within_ms: float | None = None) -> bool:
        """Run wait(timeout_ms) in slices until it returns: True. False when within_ms ran out first; EngineError
        (timeout) when the deadline did."""
        stop = time.monotonic() + within_ms / 1000 if within_ms is not None else None
        while True:
            self.checkpoint()
            left = self.left_ms()
            if left <= 0:
                raise self.expired(what)
            if stop is not None:
                grace = (stop - time.monotonic()) * 1000
                if grace <= 0:
                    return False
                left = min(left, grace)
            try:
                wait(min(SLICE_MS, left))
                return True
            except PlaywrightTimeout:
                continue


@dataclass
class Snapshot:
    url: str
    title: str
    html: str
    links: list[str]
    load_state: str  # "load", or "domcontentloaded" when load did not come within LOAD_GRACE_MS
    response: Response | None  # the response of the document read
    # Set when the page navigated itself to a document that failed to load (an error page, a refused address):
    # this snapshot is the last document that loaded, and the note says where the page tried to go.
    failed_hop: str = ""
    cut: bool = False  # the HTML was longer than HTML_MAX_CHARS: this is its beginning


def on_main_frame_navigation(page: Page, listener: Callable[[Request | None, str | None], None]) -> None:
    """Call listener(request, error) for each navigation of the page's main frame: a document committed (its request,
    whose response has arrived; None for a same-document navigation or Chromium's error page), or a navigation that
    failed (its request when known, and the network error).

    This is the frame's own navigation event, the one page.goto and expect_navigation read their response from;
    Playwright gets it from its driver whatever the page listens to, but its public API only says that a frame
    navigated, not with which request. A tab listened to page-wide `response` and `requestfailed` events instead:
    the driver then sends every subresource's response and failure across, each made into Python objects and
    handed to a listener that kept one in a hundred (measured on real pages: render=browser crawl 0.77 → 0.85 of a
    plain Playwright script's pages/s). A private part of Playwright, pinned in requirements.txt: the tests of a page
    that moves itself (tests/engine/test_navigation.py, test_failed_hop.py) fail if it changes."""

    def navigated(event: dict) -> None:
        channel = (event.get("newDocument") or {}).get("request")
        listener(public_objects.from_impl(channel._object) if channel is not None else None, event.get("error"))

    page.main_frame._impl_obj._event_emitter.on("navigated", navigated)


class Tab:
    """A page being read: remembers the response of its main frame's latest navigation and counts the main frame's
    navigations, so that a document the page replaced itself is noticed."""

    def __init__(self, page: Page, *, bound: bool = False):
        """bound: the context already carries the hand-over binding for this tab (Tab.open)."""
        self.page = page
        self.response: Response | None = None  # the response of the document the page shows
        self.navigations = 0
        self.failed_navigation = ""  # the URL of the main frame's last navigation that failed
        on_main_frame_navigation(page, self._on_navigation)
        # The last document the page left by a navigation of its own, and its response.
        self.left: tuple[dict, Response | None] | None = None
        if not bound:
            page.expose_binding("__keepDocument", self._on_leaving)

    @classmethod
    def open(cls, context: BrowserContext) -> Tab:
        """A new page of a fresh context, as a Tab with the page script (TRACK_PENDING_JS) and the hand-over binding
        set on the context before the page exists: Chromium installs them as it creates the page, instead of two
        more round trips to a page already there (measured here: ~15 ms idle, ~80 ms with both cores busy)."""
        context.add_init_script(TRACK_PENDING_JS)
        tabs: list[Tab] = []
        context.expose_binding("__keepDocument", lambda source, document: tabs[0]._on_leaving(source, document))
        tabs.append(cls(context.new_page(), bound=True))
        return tabs[0]

    def reset(self) -> None:
        """Forget the document read before: the tab is about to load another page (a crawl lane's kept tab)."""
        self.response = None
        self.navigations = 0
        self.failed_navigation = ""
        self.left = None

    def _on_leaving(self, source: dict, document: dict) -> None:
        if source["page"] == self.page and source["frame"].parent_frame is None:
            self.left = (document, self.response)

    def _on_navigation(self, request: Request | None, error: str | None) -> None:
        if error:
            # Not the request of the document the page shows: it is cut off (ERR_ABORTED) when the page leaves while
            # it still loads, which says nothing of where the page went.
            shown = self.response.request if self.response is not None else None
            if request is not None and request != shown:
                self.failed_navigation = request.url
            return
        self.navigations += 1
        response = request.existing_response if request is not None else None
        if response is not None:  # a new document (not a same-document navigation, not Chromium's error page)
            self.response = response

    def goto(self, url: str, deadline: Deadline) -> Response | None:
        """Start loading url; returns once the response has arrived (PlaywrightError when it cannot be loaded)."""
        try:
            response = self.page.goto(url, wait_until="commit", timeout=max(1.0, deadline.left_ms()))
        except PlaywrightTimeout:
            raise deadline.expired("answer") from None
        if response is not None:
            self.response = response
        return response

    def arrive(self, deadline: Deadline, wait_for: str | None = None) -> str:
        """Wait for the current document: DOMContentLoaded (within the deadline), then load for LOAD_GRACE_MS at
        most, then the wait_for selector if any. Returns the load state reached."""
        page = self.page
        deadline.wait("finish loading", lambda ms: page.wait_for_load_state("domcontentloaded", timeout=ms))
        loaded = deadline.wait(
            "finish loading", lambda ms: page.wait_for_load_state("load", timeout=ms), within_ms=LOAD_GRACE_MS
        )
        if wait_for:
            deadline.wait(
                f"show {wait_for!r}", lambda ms: page.wait_for_selector(wait_for, state="attached", timeout=ms)
            )
        return "load" if loaded else "domcontentloaded"

    def snapshot(self, deadline: Deadline, wait_for: str | None = None) -> Snapshot:
        """Arrive, settle and read the page; follow the page's own navigations for up to MAX_HOPS documents. When
        one of them fails to load, the last document read is kept (its failed_hop says where the page went)."""
        load_state = self.arrive(deadline, wait_for)
        kept: Snapshot | None = None
        for hop in range(MAX_HOPS + 1):
            seen = self.navigations
            try:
                read = self.page.evaluate(
                    SNAPSHOT_JS, [SETTLE_QUIET_MS, min(SETTLE_MAX_MS, deadline.left_ms()), REFRESH_FOLLOW_S]
                )
            except PlaywrightError as error:
                if not replaced_document(error):
                    raise
                if self.left is not None:  # replaced while read, but handed over by the page as it left
                    kept = self._left_snapshot(load_state, deadline)
                if hop == MAX_HOPS:  # a page that keeps navigating: the last document read, if any
                    if kept is None:
                        raise
                    return kept
                # The error can come before the navigation that caused it is reported: until it is, the page still
                # looks loaded and another read would fail at once (seen here: six in 6 ms, all hops spent).
                self._next_document(seen, None, deadline)
                load_state = self.arrive(deadline)
                if self._failed_document():
                    return self._fallback(kept, deadline)
                load_state = self.arrive(deadline, wait_for)
                continue
            if read["url"].startswith("chrome-error://"):  # read before the failed navigation was even reported
                return self._fallback(kept, deadline)
            current = Snapshot(
                read["url"], read["title"], read["html"], read["links"], load_state, self.response, cut=read["cut"]
            )
            leaving = read["leaving"] or read["refresh"] is not None or self.navigations != seen
            if not leaving or hop == MAX_HOPS or not self._next_document(seen, read["refresh"], deadline):
                return current
            kept = current
            load_state = self.arrive(deadline)
            if self._failed_document():
                return self._fallback(kept, deadline)
            load_state = self.arrive(deadline, wait_for)
        raise AssertionError("unreachable")

    def _failed_document(self) -> bool:
        """The page navigated itself to a document that did not load: Chromium's error page (a name that does not
        resolve, a refused tunnel), or the network guard's refusal."""
        refused = self.response is not None and REFUSED_HEADER.lower() in self.response.headers
        return self.page.url.startswith("chrome-error://") or refused

    def _fallback(self, kept: Snapshot | None, deadline: Deadline) -> Snapshot:
        if self.page.url.startswith("chrome-error://") and not self.failed_navigation:
            self._failure_reported(deadline)
        target = self.failed_navigation or (self.response.url if self.response is not None else self.page.url)
        if kept is None and self.left is not None:  # left before it was read once, but handed over as it left
            kept = self._left_snapshot("domcontentloaded", deadline)
        if kept is None:
            raise EngineError("navigation_error", f"The page navigated itself to {target}, which could not be loaded.")
        kept.failed_hop = target
        return kept

    def _failure_reported(self, deadline: Deadline) -> None:
        """Chromium's error page can be reported before the request that failed (seen here about once in ten): wait
        a moment for that request, which says where the page tried to go."""

        def failed(ms: float) -> None:
            if not self.failed_navigation:  # the listener notes failures that came between slices
                self.page.wait_for_event(
                    "requestfailed",
                    lambda request: request.is_navigation_request() and request.frame.parent_frame is None,
                    timeout=ms,
                )

        deadline.wait("report its failed navigation", failed, within_ms=FAILURE_REPORT_MS)

    def _left_snapshot(self, load_state: str, deadline: Deadline) -> Snapshot:
        """The document the page handed over as it left. One it left while it was still being parsed (a script in
        its head moving it elsewhere) has only its first part in the browser: its HTML is asked for again, through
        the same context (cookies, network guard), as the server sends it."""
        left, response = self.left
        html, cut = left["html"], left.get("cut", False)
        if not left.get("parsed", True):
            again = self._document_again(left["url"], deadline)
            if again is not None:
                html, cut = again[:HTML_MAX_CHARS], len(again) > HTML_MAX_CHARS
        return Snapshot(left["url"], left["title"], html, left["links"], load_state, response, cut=cut)

    def _document_again(self, url: str, deadline: Deadline) -> str | None:
        try:
            again = self.page.context.request.get(url, timeout=max(1.0, min(deadline.left_ms(), AGAIN_MS)))
            kind = again.headers.get("content-type", "")
            return again.text() if again.ok and ("html" in kind or not kind) else None
        except PlaywrightError as error:
            log.info("the document left while parsed could not be read again: %s", first_line(error))
            return None

    def _next_document(self, seen: int, refresh_s: float | None, deadline: Deadline) -> bool:
        """Wait for the main frame's next navigation after `seen`: True when it came (a navigation the page
        announced can still turn out to be a download or a 204 that leaves the document in place: False)."""
        if self.navigations != seen:
            return True

        def navigated(ms: float) -> None:
            if self.navigations == seen:  # the listener counts navigations that came between slices
                self.page.wait_for_event("framenavigated", lambda frame: frame.parent_frame is None, timeout=ms)

        return deadline.wait("finish loading", navigated, within_ms=NEXT_DOCUMENT_MS + (refresh_s or 0) * 1000)
