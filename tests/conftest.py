from __future__ import annotations

import os

import pytest

from tests.site import TestSite

# Tests drive Playwright's sync API in this process; it leaves an asyncio loop registered on the main thread,
# which makes Django refuse ORM calls. The worker sets the same variable (runs/jobs.py explains why).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# Real saved pages reference third-party hosts; on this closed network each lookup would stall ~5 s.
TEST_BROWSER_ARGS = ("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",)


def pytest_collection_modifyitems(config, items):
    """In several processes (make test runs two), the tests that start the whole service (the long ones) first,
    in their files' order: their files are handed out first and the short ones fill the end, instead of one long file
    running alone at the end while the other process waits. In one process, the files' order."""
    if getattr(config.option, "numprocesses", None):
        items.sort(key=lambda item: item.get_closest_marker("live") is None)


@pytest.fixture(scope="session")
def site():
    with TestSite() as served:
        yield served


@pytest.fixture(autouse=True)
def data_dir(settings, tmp_path):
    """Every test gets its own data directory and may reach the loopback test site."""
    for sub in ("screenshots", "exports", "cache", "static", "profiles", "credentials"):
        (tmp_path / sub).mkdir()
    settings.DATA_DIR = tmp_path
    settings.ALLOW_PRIVATE_NETWORKS = True
    settings.BROWSER_ARGS = TEST_BROWSER_ARGS
    settings.API_RATE_LIMIT = 0  # a test makes as many requests as it needs; tests/service/test_limits.py sets its own
    # The file cache (the default without Redis) in the test's own directory: the run's shared one was cleared by every
    # test of the other pytest process, failed sign-ins and rate-limit counts included, in the middle of a test.
    from service.kernel import cache as file_cache

    if settings.CACHES["default"]["BACKEND"] == file_cache.BACKEND:
        settings.CACHES = {
            **settings.CACHES,
            "default": {**settings.CACHES["default"], "LOCATION": str(tmp_path / "cache")},
        }
    from django.core.cache import cache

    cache.clear()  # with Redis, one cache for every test: failed sign-ins of one must not count against another's
    return tmp_path


@pytest.fixture(scope="session")
def browser():
    """The process's one Chromium, the same one execute_run uses in these tests."""
    from runs.engine.browser import process_browser

    return process_browser(extra_args=TEST_BROWSER_ARGS)


API_KEY = "test-bootstrap-key"


@pytest.fixture
def api(settings):
    """An APIClient that authenticates with the bootstrap key."""
    from rest_framework.test import APIClient

    settings.SERVICE_API_KEY = API_KEY
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {API_KEY}")
    return client


@pytest.fixture
def anonymous(settings):
    from rest_framework.test import APIClient

    settings.SERVICE_API_KEY = API_KEY
    return APIClient()
