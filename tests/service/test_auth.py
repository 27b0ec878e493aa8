"""Every /api route but health needs a Bearer key; keys are stored hashed."""

from __future__ import annotations

import io
import re

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from service.kernel.keys import ApiKey
from tests.conftest import API_KEY

pytestmark = pytest.mark.django_db

PUBLIC = {"/api/health", "/api/session"}  # the playground's sign-in (tests/service/test_session.py)
METHODS = ["get", "post", "put", "patch", "delete"]
FOREIGN = "http://evil.example"


def api_routes() -> list[str]:
    """Every route in the URLconf under /api/, with sample values for its parameters."""

    def walk(patterns, prefix: str) -> list[str]:
        found = []
        for pattern in patterns:
            regex = str(pattern.pattern).lstrip("^").rstrip("$").replace("\\Z", "")
            if isinstance(pattern, URLResolver):
                found += walk(pattern.url_patterns, prefix + regex)
            elif isinstance(pattern, URLPattern):
                found.append(prefix + regex)
        return found

    routes = set()
    for route in walk(get_resolver().url_patterns, "/"):
        if not route.startswith("/api/"):
            continue
        route = re.sub(r"\(\?P<pk>[^)]*\)", "00000000-0000-0000-0000-000000000000", route)
        route = re.sub(r"\(\?P<index>[^)]*\)", "0", route)
        route = re.sub(r"\(\?P<name>[^)]*\)", "some-name", route)
        route = re.sub(r"\(\?P<format>[^)]*\)", "json", route)
        route = route.replace("<drf_format_suffix:format>", "json").replace(".*", "anything")
        route = re.sub(r"[\\^$?]", "", route).replace("/.", ".")
        routes.add(route)
    return sorted(routes)


def test_the_walk_finds_the_routes_we_know():
    routes = api_routes()
    for expected in (
        "/api/runs",
        "/api/runs/00000000-0000-0000-0000-000000000000/cancel",
        "/api/schema",
        "/api/docs",
        "/api/runs/00000000-0000-0000-0000-000000000000/steps/0/screenshot",
    ):
        assert expected in routes


@pytest.mark.parametrize("route", [r for r in api_routes() if r not in PUBLIC])
@pytest.mark.parametrize("method", METHODS)
def test_every_route_but_health_is_401_without_a_key(anonymous, route, method):
    response = getattr(anonymous, method)(route)
    if route.startswith("/api/anything"):  # the catch-all 404 for unknown /api paths
        assert response.status_code == 404
        return
    assert response.status_code == 401, (route, method, response.status_code)
    assert response.json()["error"]["code"] == "unauthenticated"
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_health_needs_no_key(anonymous):
    response = anonymous.get("/api/health")
    assert response.status_code == 200
    body = response.json()
    assert body["db"] is True
    assert set(body) == {"status", "db", "queue", "workers", "browser", "sandbox"}


@pytest.mark.parametrize("header", ["Bearer wrong", "Basic dXNlcjpwYXNz", "Bearer ", "Token abc"])
def test_wrong_keys_and_schemes_are_401(anonymous, header):
    response = anonymous.get("/api/runs", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "unauthenticated"


def test_apikey_create_prints_a_key_once_stores_only_its_hash_and_revoke_works(anonymous):
    out = io.StringIO()
    call_command("apikey", "create", "ci-client", stdout=out, stderr=io.StringIO())
    raw = out.getvalue().strip()
    assert raw.startswith("wds_") and len(raw) > 40
    stored = ApiKey.objects.get(name="ci-client")
    assert raw not in (stored.key_hash, stored.prefix) and stored.prefix == raw[:12]
    assert anonymous.get("/api/runs", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    call_command("apikey", "revoke", "ci-client", stdout=io.StringIO())
    assert anonymous.get("/api/runs", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 401
    listing = io.StringIO()
    call_command("apikey", "list", "--json", stdout=listing)
    assert raw not in listing.getvalue() and '"revoked": true' in listing.getvalue()


def test_bootstrap_key_from_the_environment_works(api):
    assert api.get("/api/runs").status_code == 200


def test_openapi_schema_and_docs_are_served_to_a_key_holder(api):
    schema = api.get("/api/schema")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert {"/api/runs", "/api/runs/{id}", "/api/runs/{id}/cancel", "/api/health"} <= set(paths)
    docs = api.get("/api/docs")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()


def protected_routes() -> list[str]:
    return [r for r in api_routes() if r not in PUBLIC and not r.startswith("/api/anything")]


def signed_in_browser(raw_key: str) -> Client:
    """A browser that signed in to the playground with raw_key; its writes carry the CSRF token."""
    browser = Client(enforce_csrf_checks=True)
    browser.get("/api/session")
    browser.defaults["HTTP_X_CSRFTOKEN"] = browser.cookies["csrftoken"].value
    signed_in = browser.post("/api/session", data={"key": raw_key}, content_type="application/json")
    assert signed_in.status_code == 200, signed_in.content
    browser.defaults["HTTP_X_CSRFTOKEN"] = browser.cookies["csrftoken"].value  # rotated at sign-in
    return browser


@pytest.fixture
def revoked(anonymous) -> tuple[str, Client]:
    """A key that worked, as a Bearer key and as a browser's session, then revoked."""
    key, raw = ApiKey.issue("revoked-laptop")
    browser = signed_in_browser(raw)
    assert anonymous.get("/api/runs", HTTP_AUTHORIZATION=f"Bearer {raw}").status_code == 200
    assert browser.get("/api/runs").status_code == 200
    key.revoke()
    return raw, browser


@pytest.mark.parametrize("route", protected_routes())
@pytest.mark.parametrize("method", METHODS)
def test_every_route_is_401_with_a_revoked_key_and_with_its_session(anonymous, revoked, route, method):
    raw, browser = revoked
    for response in (
        getattr(anonymous, method)(route, HTTP_AUTHORIZATION=f"Bearer {raw}"),
        getattr(browser, method)(route),
    ):
        assert response.status_code == 401, (route, method, response.status_code)
        assert response.json()["error"]["code"] == "unauthenticated"


@pytest.mark.parametrize("route", protected_routes())
@pytest.mark.parametrize("method", METHODS)
def test_every_route_refuses_a_session_from_a_foreign_origin(anonymous, route, method):
    """A page elsewhere riding the visitor's cookie is refused, reads too, even with the CSRF token."""
    browser = signed_in_browser(API_KEY)
    refused = getattr(browser, method)(route, HTTP_ORIGIN=FOREIGN)
    assert refused.status_code == 403, (route, method, refused.status_code)
    assert refused.json()["error"] == {
        "code": "forbidden",
        "message": f"Origin {FOREIGN} is refused: a signed-in session works only from this service's own pages "
        "(add the origin to CSRF_TRUSTED_ORIGINS to allow it, or send an API key).",
    }
    # The same request from our own pages gets past authentication (whatever the route then answers).
    ours = getattr(browser, method)(route, HTTP_ORIGIN="http://testserver")
    assert ours.status_code not in (401, 403), (route, method, ours.status_code)


@pytest.mark.parametrize("route", protected_routes())
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_every_session_write_needs_the_csrf_token(anonymous, route, method):
    browser = signed_in_browser(API_KEY)
    del browser.defaults["HTTP_X_CSRFTOKEN"]
    refused = getattr(browser, method)(route, HTTP_ORIGIN="http://testserver")
    assert refused.status_code == 403, (route, method, refused.status_code)
    assert refused.json()["error"]["code"] == "forbidden"
    assert "CSRF" in refused.json()["error"]["message"]


def test_a_foreign_origin_cannot_sign_a_browser_in_or_out(anonymous):
    browser = Client(enforce_csrf_checks=True)
    browser.get("/api/session")
    refused = browser.post("/api/session", data={"key": API_KEY}, content_type="application/json", HTTP_ORIGIN=FOREIGN)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"
    assert browser.get("/api/session").json() == {"signedIn": False, "keyName": None}

    browser = signed_in_browser(API_KEY)
    assert browser.delete("/api/session", HTTP_ORIGIN=FOREIGN).status_code == 403
    assert browser.get("/api/session").json() == {"signedIn": True, "keyName": "bootstrap"}


def test_a_bearer_key_works_from_any_origin(api):
    """Keys are not ambient: a page elsewhere can only send one it was given."""
    assert api.get("/api/runs", HTTP_ORIGIN=FOREIGN).status_code == 200
