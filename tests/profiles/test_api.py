"""/api/profiles: import, list, get, delete; metadata and summaries only, never the state."""

from __future__ import annotations

import json
import os
import stat
import time

import pytest

pytestmark = pytest.mark.django_db

CANARY = "canary-cookie-7f3a9"
STATE = {
    "cookies": [
        {"name": "sid", "value": CANARY, "domain": ".shop.test", "path": "/", "expires": time.time() + 90 * 86400},
        {"name": "pref", "value": "dark", "domain": "shop.test", "path": "/", "expires": -1},
    ],
    "origins": [{"origin": "https://shop.test", "localStorage": [{"name": "token", "value": CANARY + "-ls"}]}],
}


def post_import(client, body, content_type="application/json"):
    return client.post("/api/profiles/import", data=json.dumps(body), content_type=content_type)


def test_import_returns_metadata_and_summary_but_never_the_state(api, data_dir):
    response = post_import(api, {"name": "shop", "state": STATE})
    assert response.status_code == 201
    body = response.json()
    path = data_dir / "profiles" / "shop.json"
    assert body == {
        "name": "shop",
        "updatedAt": body["updatedAt"],
        "size": path.stat().st_size,
        "cookies": {
            "cookieCount": 2,
            "domains": ["shop.test"],
            "earliestExpiry": body["cookies"]["earliestExpiry"],
            "expired": 0,
            "expiringWithin7Days": 0,
            "sessionOnly": 1,
            "originsWithStorage": 1,
            "status": "fresh",
        },
    }
    assert CANARY not in response.content.decode()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    for listing in (api.get("/api/profiles"), api.get("/api/profiles/shop")):
        assert listing.status_code == 200
        assert CANARY not in listing.content.decode()
    assert api.get("/api/profiles").json() == [body]
    assert api.get("/api/profiles/shop").json() == body


def test_existing_name_is_409_unless_overwrite(api):
    assert post_import(api, {"name": "shop", "state": STATE}).status_code == 201
    again = post_import(api, {"name": "shop", "state": {"cookies": [], "origins": []}})
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "profile_exists"
    replaced = post_import(api, {"name": "shop", "state": {"cookies": [], "origins": []}, "overwrite": True})
    assert replaced.status_code == 200
    assert replaced.json()["cookies"]["status"] == "empty"


@pytest.mark.parametrize("name", ["../x", "A", "a/b", "", "a" * 65])
def test_bad_names_are_400_and_no_file_is_touched(api, data_dir, name):
    response = post_import(api, {"name": name, "state": STATE})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert "name" in response.json()["error"]["fields"]
    assert list((data_dir / "profiles").iterdir()) == []


def test_invalid_state_is_400_without_echoing_it(api, data_dir):
    bad = {"cookies": [{"name": "sid", "value": CANARY}]}
    response = post_import(api, {"name": "shop", "state": bad})
    assert response.status_code == 400
    assert response.json()["error"]["fields"] == {"state": ["state.cookies[0].domain must be a string."]}
    assert CANARY not in response.content.decode()
    assert list((data_dir / "profiles").iterdir()) == []


def test_a_cookie_expiring_past_the_year_9999_is_400_and_stored_files_cannot_break_the_list(api, data_dir):
    far = {"cookies": [{"name": "sid", "value": CANARY, "domain": "shop.test", "expires": 1e300}]}
    response = post_import(api, {"name": "far", "state": far})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_request"
    assert not (data_dir / "profiles" / "far.json").exists()
    # A file written before that check (or by hand) is listed, not a 500 for every later call.
    (data_dir / "profiles" / "far.json").write_text(json.dumps(far))
    listed = api.get("/api/profiles")
    assert listed.status_code == 200
    assert [profile["name"] for profile in listed.json()] == ["far"]


def test_import_needs_json(api):
    response = api.post("/api/profiles/import", data="name=shop", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415


def test_delete_and_unknown_profiles(api, data_dir):
    post_import(api, {"name": "shop", "state": STATE})
    assert api.delete("/api/profiles/shop").status_code == 204
    assert not (data_dir / "profiles" / "shop.json").exists()
    for response in (api.delete("/api/profiles/shop"), api.get("/api/profiles/shop"), api.get("/api/profiles/..")):
        assert response.status_code == 404
        assert response.json()["error"]["code"] == "not_found"


def test_runs_accept_a_known_profile_and_refuse_an_unknown_one(api):
    post_import(api, {"name": "shop", "state": STATE})
    ok = api.post("/api/runs", {"kind": "fetch", "url": "https://shop.test/", "profile": "shop"}, format="json")
    assert ok.status_code == 201 and ok.json()["spec"]["profile"] == "shop"
    unknown = api.post("/api/runs", {"kind": "fetch", "url": "https://shop.test/", "profile": "nope"}, format="json")
    assert unknown.status_code == 400
    assert unknown.json()["error"]["fields"] == {"profile": ["There is no profile named 'nope'."]}
