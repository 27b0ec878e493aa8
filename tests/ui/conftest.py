"""The playground in a real browser: `manage.py serve` with its workers and the built UI, driven by Chromium."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.live import KEY, ROOT, LiveService

DIST_INDEX = ROOT / "frontend" / "dist" / "index.html"
# Runs execute in the service's workers: under load (other test runs on the machine) a step can take seconds.
expect.set_options(timeout=20_000)
# Screenshots of every screen, for people to look at (gitignored).
SCREENSHOTS = ROOT / "test-output" / "ui"


def node_can_build() -> bool:
    """Node.js 20.19+ with npm: what `make ui` needs (without it, `make ui` skips the build and says so)."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return False
    found = subprocess.run(["node", "-p", "process.versions.node"], capture_output=True, text=True, check=False)
    major, minor, *_ = (int(part) for part in (found.stdout.strip() or "0.0").split("."))
    return (major, minor) >= (20, 19)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Without a build and without the means to make one, the browser tests cannot run; with the means they fail
    # (below) and say to run `make ui`.
    if DIST_INDEX.is_file() or node_can_build():
        return
    for item in items:
        if item.path.name == "test_playground.py":
            item.add_marker(pytest.mark.skip(reason="no playground build and no Node.js 20.19+ to make one"))


@pytest.fixture(scope="session")
def screenshots() -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for old in SCREENSHOTS.glob("*.png"):
        old.unlink()
    return SCREENSHOTS


@pytest.fixture(scope="module")
def live_ui(tmp_path_factory, site) -> Iterator[LiveService]:
    assert DIST_INDEX.is_file(), "the playground is not built: run `make ui` first"
    service = LiveService(tmp_path_factory.mktemp("ui"))
    service.start()
    try:
        yield service
    finally:
        service.stop()


@pytest.fixture(scope="module")
def chromium(browser):
    """The process's Chromium: Playwright's sync API allows one instance per thread, shared with other tests."""
    return browser.launched()


class UI:
    """One browser context on the live service, with a screenshot helper."""

    def __init__(self, live: LiveService, context, shots: Path):
        self.live = live
        self.context = context
        self.page = context.new_page()
        self.page.set_default_timeout(20_000)
        self.shots = shots
        self.errors: list[str] = []
        self.expected_errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("console", lambda message: self.errors.append(message.text) if message.type == "error" else None)

    def expect_console_error(self, text: str) -> None:
        """A failed request the test causes on purpose (Chromium logs every 4xx answer as a console error)."""
        self.expected_errors.append(text)

    def url(self, path: str) -> str:
        return self.live.base_url + path

    def goto(self, path: str) -> None:
        self.page.goto(self.url(path))

    def sign_in(self) -> None:
        """Sign in the way the sign-in screen does (exchanging the key for a session cookie), without the screen."""
        self.context.request.get(self.url("/api/session"))  # the CSRF cookie the sign-in echoes
        token = next(c["value"] for c in self.context.cookies() if c["name"] == "csrftoken")
        response = self.context.request.post(
            self.url("/api/session"), data={"key": KEY}, headers={"X-CSRFToken": token}
        )
        assert response.ok, response.text()

    def snap(self, name: str, *, full_page: bool = True) -> Path:
        path = self.shots / f"{name}.png"
        if full_page:  # from the top, or the sticky navigation bar lands mid-page in the picture
            self.page.evaluate("window.scrollTo(0, 0)")
        self.page.screenshot(path=path, full_page=full_page)
        return path


def open_ui(chromium, live: LiveService, shots: Path, *, width: int = 1280, height: int = 860) -> UI:
    context = chromium.new_context(
        viewport={"width": width, "height": height}, accept_downloads=True, locale="en-GB", timezone_id="UTC"
    )
    return UI(live, context, shots)


@pytest.fixture
def ui(chromium, live_ui, screenshots) -> Iterator[UI]:
    opened = open_ui(chromium, live_ui, screenshots)
    try:
        yield opened
    finally:
        opened.context.close()
    # CSP violations, React errors and failed loads show up here.
    unexpected = [e for e in opened.errors if not any(text in e for text in opened.expected_errors)]
    assert not unexpected, unexpected
