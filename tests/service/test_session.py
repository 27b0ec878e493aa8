"""The playground signs in by exchanging an API key for a session cookie; writes then need the CSRF token."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from service.models import ApiKey
from tests.conftest import API_KEY

pytestmark = pytest.mark.django_db


@pytest.fixture
def browser_client(settings):
    settings.SERVICE_API_KEY = API_KEY
    return Client(enforce_csrf_checks=True)


def sign_in(client: Client, key: str):
    client.get("/api/session")
    return client.post(
        "/api/session",
        data=json.dumps({"key": key}),
        content_type="application/json",
    )


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
