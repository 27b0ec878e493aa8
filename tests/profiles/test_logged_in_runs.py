"""A state taken from a real browser login, imported as a profile, lets runs see members-only pages."""

from __future__ import annotations

import json
import os

import pytest

from runs.jobs import execute_run
from runs.models import Event, Run
from tests.live import django_database_text
from tests.site import real_login_state

pytestmark = pytest.mark.django_db(transaction=True)


def session_cookie(state: dict) -> str:
    return next(c["value"] for c in state["cookies"] if c["name"] == "sid")


def test_profile_run_sees_the_members_page_and_a_plain_run_sees_the_login_page(api, site, browser, data_dir):
    state = real_login_state(browser, site)
    canary = session_cookie(state)
    imported = api.post("/api/profiles/import", {"name": "members", "state": state}, format="json")
    assert imported.status_code == 201
    assert imported.json()["cookies"]["status"] == "fresh"

    with_profile = api.post(
        "/api/runs", {"kind": "fetch", "url": site.url("/members"), "profile": "members"}, format="json"
    ).json()
    without = api.post("/api/runs", {"kind": "fetch", "url": site.url("/members")}, format="json").json()
    for run in (with_profile, without):
        execute_run(run["id"])
    logged_in = api.get(f"/api/runs/{with_profile['id']}").json()
    logged_out = api.get(f"/api/runs/{without['id']}").json()
    assert logged_in["status"] == "succeeded"
    assert "Welcome back, ada" in logged_in["result"]["markdown"]
    assert logged_in["result"]["finalUrl"] == site.url("/members")
    assert logged_out["result"]["finalUrl"] == site.url("/login?next=/members")
    assert "Welcome back" not in logged_out["result"]["markdown"]

    # localStorage from the profile reaches the page too.
    app_run = api.post(
        "/api/runs",
        {"kind": "fetch", "url": site.url("/app"), "profile": "members", "options": {"mainContent": False}},
        format="json",
    ).json()
    execute_run(app_run["id"])
    assert "Token accepted" in api.get(f"/api/runs/{app_run['id']}").json()["result"]["markdown"]

    # The canary session cookie is nowhere but in the profile file.
    responses = json.dumps([logged_in, logged_out, api.get("/api/runs").json(), api.get("/api/profiles").json()])
    assert canary not in responses
    assert not any(canary in json.dumps(e.frame()) for e in Event.objects.all())
    assert not any(canary in json.dumps(r.spec) + json.dumps(r.result) for r in Run.objects.all())
    assert canary not in django_database_text()
    assert canary in (data_dir / "profiles" / "members.json").read_text()


def test_storage_state_path_run_is_logged_in(api, site, browser, data_dir):
    state_file = data_dir / "states" / "members.json"
    state_file.parent.mkdir()
    state_file.write_text(json.dumps(real_login_state(browser, site)))
    os.chmod(state_file, 0o600)
    run = api.post(
        "/api/runs",
        {"kind": "fetch", "url": site.url("/members"), "storageStatePath": "states/members.json"},
        format="json",
    ).json()
    execute_run(run["id"])
    assert "Welcome back, ada" in api.get(f"/api/runs/{run['id']}").json()["result"]["markdown"]


def test_a_profile_deleted_after_submit_fails_the_run_clearly(api, site):
    api.post("/api/profiles/import", {"name": "gone", "state": {"cookies": [], "origins": []}}, format="json")
    run = api.post("/api/runs", {"kind": "fetch", "url": site.url("/static"), "profile": "gone"}, format="json").json()
    api.delete("/api/profiles/gone")
    execute_run(run["id"])
    assert api.get(f"/api/runs/{run['id']}").json()["error"] == {
        "code": "unknown_profile",
        "message": "The profile 'gone' no longer exists.",
    }
