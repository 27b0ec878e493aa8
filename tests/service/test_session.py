"""The playground signs in by exchanging an API key for a session cookie; writes then need the CSRF token."""

from __future__ import annotations

import json
import time

import pytest
from django.test import Client

from service.kernel import cache as file_cache
from service.kernel.keys import ApiKey
from tests.conftest import API_KEY

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser_client(settings):
    settings.SERVICE_API_KEY = API_KEY
    return Client(enforce_csrf_checks=True)


def sign_in(client: Client, key: str):
    client.get("/api/session")
    return client.post("/api/session", data=json.dumps({"key": key}), content_type="application/json", **csrf(client))


def csrf(client: Client) -> dict:
    return {"HTTP_X_CSRFTOKEN": client.cookies["csrftoken"].value}


def submit(client: Client, **headers):
    body = json.dumps({"kind": "fetch", "url": "https://example.com/"})
    return client.post("/api/runs", data=body, content_type="application/json", **headers)


def test_signed_out_browsers_get_a_csrf_cookie_and_no_access(browser_client):
    response = browser_client.get("/api/session")
    assert response.json() == {"signedIn": False, "keyName": None}
    assert browser_client.cookies["csrftoken"].value
    assert browser_client.get("/api/runs").status_code == 401


def test_signing_in_needs_the_csrf_token_a_foreign_page_cannot_read(browser_client):
    """Login CSRF: a page elsewhere that posts a key of its own (its origin hidden) does not sign this browser in."""
    browser_client.get("/api/session")
    refused = browser_client.post("/api/session", data=json.dumps({"key": API_KEY}), content_type="application/json")
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]["message"]
    assert browser_client.get("/api/session").json() == {"signedIn": False, "keyName": None}
    assert sign_in(browser_client, API_KEY).json() == {"signedIn": True, "keyName": "bootstrap"}


def test_a_wrong_key_is_401_and_signs_nobody_in(browser_client):
    response = sign_in(browser_client, "not-a-key")
    assert response.status_code == 401
    assert response.json() == {
        "error": {"code": "unauthenticated", "message": "The API key is not valid or has been revoked."}
    }
    assert browser_client.get("/api/runs").status_code == 401


def test_sign_in_reads_freely_and_writes_only_with_the_csrf_token(browser_client):
    response = sign_in(browser_client, API_KEY)
    assert response.json() == {"signedIn": True, "keyName": "bootstrap"}
    session_cookie = browser_client.cookies["sessionid"]
    assert session_cookie["httponly"] and API_KEY not in session_cookie.value
    assert browser_client.get("/api/runs").status_code == 200
    assert browser_client.get("/api/session").json() == {"signedIn": True, "keyName": "bootstrap"}

    refused = submit(browser_client)
    assert refused.status_code == 403
    assert "CSRF" in refused.json()["error"]["message"]
    assert submit(browser_client, **csrf(browser_client)).status_code == 201


def test_sign_out_needs_the_token_and_ends_the_session(browser_client):
    sign_in(browser_client, API_KEY)
    assert browser_client.delete("/api/session").status_code == 403
    assert browser_client.delete("/api/session", **csrf(browser_client)).json() == {"signedIn": False, "keyName": None}
    assert browser_client.get("/api/runs").status_code == 401


def test_revoking_the_key_ends_its_sessions(browser_client):
    key, raw = ApiKey.issue("laptop")
    assert sign_in(browser_client, raw).json() == {"signedIn": True, "keyName": "laptop"}
    assert browser_client.get("/api/runs").status_code == 200
    key.revoke()
    assert browser_client.get("/api/runs").status_code == 401
    assert browser_client.get("/api/session").json() == {"signedIn": False, "keyName": None}


def test_bearer_keys_need_no_csrf_token(api):
    assert submit(api).status_code == 201


def test_a_session_works_from_an_origin_in_csrf_trusted_origins_and_not_from_another(browser_client, settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://scrape.example.com"]
    sign_in(browser_client, API_KEY)
    trusted = {"HTTP_ORIGIN": "https://scrape.example.com"}
    assert browser_client.get("/api/runs", **trusted).status_code == 200
    assert submit(browser_client, **trusted, **csrf(browser_client)).status_code == 201
    for other in ("https://evil.example.com", "http://scrape.example.com", "https://scrape.example.com:8443"):
        for refused in (
            browser_client.get("/api/runs", HTTP_ORIGIN=other),
            submit(browser_client, HTTP_ORIGIN=other, **csrf(browser_client)),
        ):
            assert refused.status_code == 403
            assert refused.json() == {
                "error": {
                    "code": "forbidden",
                    "message": f"Origin {other} is refused: a signed-in session works only from this service's own "
                    "pages (add the origin to CSRF_TRUSTED_ORIGINS to allow it, or send an API key).",
                }
            }


def test_csrf_trusted_origins_is_read_from_the_environment(tmp_path):
    from service.config import read_config

    config = read_config(
        {"SERVICE_DATA_DIR": str(tmp_path), "CSRF_TRUSTED_ORIGINS": "https://a.example, http://b:8080"}
    )
    assert config.csrf_trusted_origins == ["https://a.example", "http://b:8080"]


@pytest.fixture(scope="module")
def live_service(tmp_path_factory):
    from tests.live import LiveService

    service = LiveService(tmp_path_factory.mktemp("session"), CSRF_TRUSTED_ORIGINS="https://scrape.example.com")
    yield service.start()
    service.stop()


@pytest.mark.live
def test_the_event_stream_takes_a_session_from_our_origin_or_a_trusted_one_only(live_service):
    """The same rule over the WebSocket: own origin (scheme, host and port) or CSRF_TRUSTED_ORIGINS."""
    import requests
    from websockets.exceptions import InvalidStatus
    from websockets.sync.client import connect

    from tests.live import KEY, browser_sign_in

    browser = requests.Session()
    assert browser_sign_in(live_service.base_url, KEY, browser).json()["signedIn"]
    cookie = {"Cookie": f"sessionid={browser.cookies['sessionid']}"}
    for origin in (live_service.base_url, "https://scrape.example.com"):
        with connect(live_service.events_url, additional_headers=cookie, origin=origin) as ws:
            run_id = live_service.submit({"kind": "fetch", "url": "http://127.0.0.1:9/"})["id"]
            frame = json.loads(ws.recv(timeout=30))
            while frame["runId"] != run_id:
                frame = json.loads(ws.recv(timeout=30))
            assert frame["type"] == "run-queued", origin
    # A page on another port of the same host shares the cookie; it is still not ours.
    other_port = f"http://127.0.0.1:{live_service.port + 1}"
    with pytest.raises(InvalidStatus) as refused:
        connect(live_service.events_url, additional_headers=cookie, origin=other_port)
    assert (refused.value.response.status_code, refused.value.response.reason_phrase) == (
        403,
        f"forbidden: a session does not work from {other_port}",
    )
    with pytest.raises(InvalidStatus) as refused:
        connect(live_service.events_url, additional_headers=cookie, origin="https://evil.example.com")
    assert refused.value.response.status_code == 403


def own_file_cache(settings) -> None:
    """The default cache as it is without Redis, in the test's data directory (not the run's shared one), empty."""
    from django.core.cache import cache

    settings.CACHES = {
        **settings.CACHES,
        "default": {"BACKEND": file_cache.BACKEND, "LOCATION": str(settings.DATA_DIR / "cache")},
    }
    cache.clear()


def test_failures_just_before_a_minute_boundary_still_hold_sign_ins_after_it(browser_client, monkeypatch, settings):
    """Ten guesses at 11:59:59 are not forgotten at 12:00:01: a burst across a minute boundary is held too."""
    from django.core.cache import cache

    from service.kernel import auth

    # The file cache even when REDIS_URL is set (conftest gives every test its own directory for it). Once, in a whole
    # run under load, this test found its ten failures uncounted: the shared directory of those days, which the other
    # pytest process's tests emptied, is the likely cause.
    own_file_cache(settings)
    clock = [(int(time.time()) // 60 + 1) * 60 - 1.0]  # one second before the next minute starts
    monkeypatch.setattr(auth.time, "time", lambda: clock[0])
    for n in range(auth.SIGN_IN_FAILURES_PER_ADDRESS):
        assert sign_in(browser_client, f"guess-{n}").status_code == 401
    clock[0] += 2  # the next minute
    assert sign_in(browser_client, API_KEY).status_code == 429
    clock[0] += 59  # the minute after the guesses' minute: taken again
    assert sign_in(browser_client, API_KEY).status_code == 200
    cache.clear()


def test_failed_sign_ins_outlive_a_cache_filled_with_expired_entries(browser_client, settings):
    """Without Redis the counters are files of the default cache. Guesses from many addresses leave one expired file
    per address and minute; a full cache must cull those, not the counters still counting (Django's file cache
    deleted a random third, live or not, at every cull)."""
    from django.core.cache import cache

    from service.kernel import auth

    assert settings.CACHES["default"]["BACKEND"] == file_cache.BACKEND or settings.REDIS_URL
    own_file_cache(settings)
    for n in range(auth.SIGN_IN_FAILURES_PER_ADDRESS):
        assert sign_in(browser_client, f"guess-{n}").status_code == 401
    for _ in range(15):  # each round fills the cache and culls: 15 random culls would spare the counter 0.2% of runs
        for n in range(300):  # Django's default MAX_ENTRIES
            cache.set(f"sign-in-failures:192.0.2.{n % 250}:{n}", 1, timeout=0)  # written already expired
    assert sign_in(browser_client, API_KEY).status_code == 429
    cache.clear()


def test_failed_sign_ins_are_limited_per_address_and_the_keys_tried_are_never_logged(browser_client, caplog):
    from django.core.cache import cache

    from service.kernel.auth import SIGN_IN_FAILURES_PER_ADDRESS

    cache.clear()
    tried = [f"guess-{n:04d}-not-a-key" for n in range(SIGN_IN_FAILURES_PER_ADDRESS)]
    assert [sign_in(browser_client, key).status_code for key in tried] == [401] * SIGN_IN_FAILURES_PER_ADDRESS
    # Then even the right key waits for the next minute: guessing goes no faster than this.
    limited = sign_in(browser_client, API_KEY)
    assert limited.status_code == 429
    assert limited.json()["error"]["code"] == "rate_limited"
    assert 0 < int(limited["Retry-After"]) <= 60
    assert sign_in(Client(REMOTE_ADDR="10.9.8.7"), API_KEY).status_code == 200  # another address is not held up
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert not [key for key in tried if key in logged]
    cache.clear()
    assert sign_in(browser_client, API_KEY).status_code == 200
