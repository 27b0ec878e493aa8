"""One Chromium per process, reused across runs; a fresh context per run (a crawl's lanes keep one tab for a run of
pages: Browser.tab_pages)."""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import util as mp_util
from typing import TypeVar

from playwright.sync_api import Browser as PlaywrightBrowser
from playwright.sync_api import BrowserContext, Playwright, sync_playwright

from runs.engine import telemetry
from runs.engine.netguard import network_guard
from runs.engine.netpolicy import NetworkPolicy
from runs.engine.spec import EngineError

log = logging.getLogger(__name__)

# A closed network: no background calls home, no component or sync traffic; and no WebRTC UDP, which would go
# around the network guard (a proxy sees TCP only): a page's STUN or peer traffic to a private address is never sent.
LAUNCH_ARGS = (
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",  # the switch's name in Chromium 156
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",  # and in older ones (an unknown switch is ignored)
)
VIEWPORT = {"width": 1280, "height": 800}
T = TypeVar("T")


def find_executable(configured: str | None = None) -> str | None:
    """BROWSER_EXECUTABLE, then Playwright's own install, then the system's Chromium or Chrome."""
    if configured:
        return configured
    try:
        with sync_playwright() as playwright:
            bundled = playwright.chromium.executable_path
        if bundled and os.access(bundled, os.X_OK):
            return bundled
    except Exception:  # no driver or no bundled browser: fall through to the system's
        pass
    for candidate in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(candidate)
        if found:
            return found
    return None


def find_system_executable(configured: str | None = None) -> str | None:
    """Like find_executable but without starting Playwright's driver (cheap enough for a health check)."""
    if configured:
        return configured if os.access(configured, os.X_OK) else None
    for candidate in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(candidate)
        if found:
            return found
    return None


# unshare(CLONE_NEWUSER) in a child process: what Chromium's namespace sandbox needs from the kernel.
_USERNS_PROBE = "import ctypes, sys; sys.exit(0 if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0 else 1)"
_sandbox_states: dict[str, tuple[bool, str]] = {}


def sandbox_state(mode: str = "auto") -> tuple[bool, str]:
    """Whether Chromium runs with its own sandbox under BROWSER_SANDBOX=mode, and why (a sentence for /api/health
    and the start-up log). auto: on when this process is not root (Chromium refuses its sandbox to root) and the
    kernel lets an unprivileged process create a user namespace; on: the same conditions, but a browser is never
    started without it (EngineError browser_sandbox at launch)."""
    if mode in _sandbox_states:
        return _sandbox_states[mode]
    if mode == "off":
        state = (False, "off: BROWSER_SANDBOX=off")
    elif os.geteuid() == 0:
        state = (False, "off: the service runs as root, and Chromium's sandbox cannot run as root")
    else:
        try:
            allowed = subprocess.run([sys.executable, "-c", _USERNS_PROBE], timeout=10).returncode == 0
        except (OSError, subprocess.SubprocessError):
            allowed = False
        state = (
            (True, "on: Chromium's namespace sandbox")
            if allowed
            else (False, "off: the kernel does not let this user create user namespaces")
        )
    _sandbox_states[mode] = state
    return state


class Browser:
    """A Chromium started lazily on first use and restarted if it crashed.

    tab_pages: how many pages, one after the other, a page load may read in the same tab (runs/engine/fetch.py
    kept_tab); 1, the default, gives every run a fresh context. A crawl's lanes keep theirs for a run of pages."""

    def __init__(
        self,
        executable: str | None = None,
        extra_args: Sequence[str] = (),
        *,
        headless: bool = True,
        sandbox: str = "auto",
        tab_pages: int = 1,
    ):
        self._executable = executable
        self._extra_args = tuple(extra_args)
        self._headless = headless
        self._sandbox = sandbox
        self._playwright: Playwright | None = None
        self._browser: PlaywrightBrowser | None = None
        self.tab_pages = tab_pages
        self.kept_tab: object | None = None  # the tab kept between pages, fetch.py's alone

    def launched(self) -> PlaywrightBrowser:
        """The Playwright browser itself (started if needed), for callers that drive pages directly (tests)."""
        return self._ensure()

    def _ensure(self) -> PlaywrightBrowser:
        if self._browser is not None and self._browser.is_connected():
            return self._browser
        if self._browser is not None:
            telemetry.report("browser_crashed")
        self.kept_tab = None
        sandboxed, why = sandbox_state(self._sandbox)
        if self._sandbox == "on" and not sandboxed:
            raise EngineError("browser_sandbox", f"BROWSER_SANDBOX=on, but the sandbox is {why}.")
        if self._playwright is None:
            self._playwright = sync_playwright().start()
        executable = find_executable(self._executable)
        log.info("starting Chromium %s; sandbox %s", executable or "(Playwright's own)", why)
        self._browser = self._playwright.chromium.launch(
            executable_path=executable,
            headless=self._headless,
            args=[*LAUNCH_ARGS, *self._extra_args],
            chromium_sandbox=sandboxed,
        )
        telemetry.report("browser_launched")
        return self._browser

    def new_context(
        self, *, storage_state_path: str | None = None, network: NetworkPolicy | None = None
    ) -> BrowserContext:
        """A fresh context; with an enforced network policy all its traffic goes through the network guard."""
        proxy = {"server": network_guard(network).url} if network is not None and network.enforced else None
        return self._ensure().new_context(
            storage_state=storage_state_path,
            viewport=VIEWPORT,
            service_workers="block",
            accept_downloads=False,
            proxy=proxy,
        )

    def close(self) -> None:
        # Either may already be gone (crashed browser, driver killed with its parent).
        self.kept_tab = None
        if self._browser is not None:
            with contextlib.suppress(Exception):
                self._browser.close()
            self._browser = None
        if self._playwright is not None:
            with contextlib.suppress(Exception):
                self._playwright.stop()
            self._playwright = None


_process_browser: Browser | None = None
# Synchronous browser requests (POST /api/fetch, search with fetch) that may wait for a web process's browser thread
# while it serves another; past that, 429 busy (runs/services.py).
SYNC_MAX_WAITING = 8


class BrowserThread:
    """A Browser owned by one thread that other threads hand work to: Playwright's sync API is bound to the
    thread that started it, and a web server answers each request on a thread of its own."""

    def __init__(
        self,
        executable: str | None = None,
        extra_args: Sequence[str] = (),
        sandbox: str = "auto",
        *,
        max_waiting: int = SYNC_MAX_WAITING,
        tab_pages: int = 1,
    ):
        self.browser = Browser(executable, extra_args, sandbox=sandbox, tab_pages=tab_pages)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="browser")
        self.max_waiting = max_waiting
        self._waiting = 0
        self._lock = threading.Lock()
        atexit.register(self.close)

    def call(self, work: Callable[[], T]) -> T:
        """Run work() on the browser's thread and return its result (or raise its exception) here. With
        max_waiting calls already waiting for the thread, EngineError busy at once: a queue without end would hold
        every caller for as long as all the work before it takes (one search fetching its hits takes minutes)."""
        with self._lock:
            if self._waiting >= self.max_waiting:
                raise EngineError(
                    "busy", f"The browser is busy with {self._waiting} synchronous requests waiting; try again shortly."
                )
            self._waiting += 1

        def started() -> T:
            with self._lock:
                self._waiting -= 1
            return work()

        # In the caller's context: a crawl's conversions go where its context says (runs/engine/fetch.py).
        return self._executor.submit(contextvars.copy_context().run, started).result()

    def close(self) -> None:
        with contextlib.suppress(RuntimeError):  # the executor is already shut down at interpreter exit
            self._executor.submit(self.browser.close).result(timeout=10)
        self._executor.shutdown(wait=False)
        atexit.unregister(self.close)  # closed before exit (a crawl's): nothing left for exit to do


_browser_thread: BrowserThread | None = None
_browser_thread_lock = threading.Lock()


def shared_browser_thread(
    executable: str | None = None, extra_args: Sequence[str] = (), sandbox: str = "auto"
) -> BrowserThread:
    """This process's BrowserThread, for synchronous API requests."""
    global _browser_thread
    with _browser_thread_lock:
        if _browser_thread is None:
            _browser_thread = BrowserThread(executable, extra_args, sandbox)
        return _browser_thread


def process_browser(executable: str | None = None, extra_args: Sequence[str] = (), sandbox: str = "auto") -> Browser:
    """The one Browser of this process (Playwright's sync API allows one per thread); closed at exit."""
    global _process_browser
    if _process_browser is None:
        _process_browser = Browser(executable, extra_args, sandbox=sandbox)
        atexit.register(_process_browser.close)
        # multiprocessing children leave through os._exit, which skips atexit: register there too.
        mp_util.Finalize(_process_browser, _process_browser.close, exitpriority=100)
    return _process_browser
