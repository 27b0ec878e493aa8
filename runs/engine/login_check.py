"""Does a page look logged out? A login form, or a redirect to a login page."""

from __future__ import annotations

import re
from dataclasses import dataclass

from playwright.sync_api import Error as PlaywrightError

from runs.engine.browser import Browser
from runs.engine.spec import first_line

LOGIN_URL = re.compile(r"(log-?in|sign-?in|auth|account/login|session/new)", re.IGNORECASE)


@dataclass(frozen=True)
class LoginCheck:
    url: str
    final_url: str
    status: int | None
    logged_out: bool
    reason: str


def check_login(browser: Browser, url: str, *, storage_state_path: str | None, timeout_ms: int = 30_000) -> LoginCheck:
    context = browser.new_context(storage_state_path=storage_state_path)
    try:
        page = context.new_page()
        try:
            response = page.goto(url, wait_until="load", timeout=timeout_ms)
        except PlaywrightError as error:
            return LoginCheck(url, url, None, True, f"the page could not be loaded: {first_line(error)}")
        final_url = page.url
        status = response.status if response else None
        if final_url != url and LOGIN_URL.search(final_url):
            return LoginCheck(url, final_url, status, True, f"redirected to a login page ({final_url})")
        if page.locator("input[type=password]:visible").count():
            return LoginCheck(url, final_url, status, True, "the page shows a password field")
        if status in (401, 403):
            return LoginCheck(url, final_url, status, True, f"the page answered HTTP {status}")
        return LoginCheck(url, final_url, status, False, "no login form and no redirect to a login page")
    finally:
        context.close()
