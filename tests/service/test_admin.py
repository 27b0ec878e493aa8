"""The Django admin at /admin/ (README, Admin): an admin made with `createsuperuser` signs in through the login
form and sees runs with their steps, read-only; profile state, credentials and keys never appear there."""

from __future__ import annotations

import re

import pytest
from django.core.management import call_command
from django.test import Client

from runs.jobs import execute_run
from runs.models import Event, Run, Step
from service.kernel.keys import ApiKey
from tests.site import real_login_state

pytestmark = pytest.mark.django_db(transaction=True)
PASSWORD = "a-long-admin-password-7f3e"


@pytest.fixture
def admin_client(monkeypatch) -> Client:
    """Signed in through the real login form, as a person would after `manage.py createsuperuser`."""
    monkeypatch.setenv("DJANGO_SUPERUSER_PASSWORD", PASSWORD)
    call_command("createsuperuser", interactive=False, username="ada", email="ada@example.com", verbosity=0)
    client = Client(enforce_csrf_checks=True)
    form = client.get("/admin/login/?next=/admin/")
    assert form.status_code == 200
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    signed_in = client.post(
        "/admin/login/?next=/admin/",
        {"username": "ada", "password": PASSWORD, "csrfmiddlewaretoken": token, "next": "/admin/"},
    )
    assert (signed_in.status_code, signed_in["Location"]) == (302, "/admin/")
    return client


def test_the_admin_needs_a_sign_in(client):
    response = client.get("/admin/runs/run/")
    assert (response.status_code, response["Location"]) == (302, "/admin/login/?next=/admin/runs/run/")
    wrong = Client(enforce_csrf_checks=True).post("/admin/login/", {"username": "ada", "password": "wrong"})
    assert wrong.status_code == 403  # no CSRF token, no sign-in


def test_an_admin_sees_runs_with_their_steps_read_only_and_no_secrets(admin_client, api, site, browser, data_dir):
    state = real_login_state(browser, site)
    canary = next(cookie["value"] for cookie in state["cookies"] if cookie["name"] == "sid")
    assert api.post("/api/profiles/import", {"name": "members", "state": state}, format="json").status_code == 201
    _, raw_key = ApiKey.issue("laptop")
    submitted = api.post(
        "/api/runs", {"kind": "fetch", "url": site.url("/members"), "profile": "members"}, format="json"
    ).json()
    execute_run(submitted["id"])
    run = Run.objects.get(pk=submitted["id"])
    assert run.status == "succeeded"
    steps = list(Step.objects.filter(run=run).order_by("index"))
    assert [step.action for step in steps] == ["navigate", "snapshot"]

    home = admin_client.get("/admin/")
    assert home.status_code == 200
    for model in ("Runs", "Steps", "Events", "Batches", "Saved queries", "Api keys"):
        assert f">{model}<" in home.text
    listing = admin_client.get("/admin/runs/run/")
    assert listing.status_code == 200 and str(run.pk) in listing.text and site.url("/members") in listing.text
    detail = admin_client.get(f"/admin/runs/run/{run.pk}/change/")
    assert detail.status_code == 200
    assert "Steps" in detail.text and "navigate" in detail.text and "snapshot" in detail.text
    assert "succeeded" in detail.text
    step_page = admin_client.get(f"/admin/runs/step/{steps[1].pk}/change/")
    assert "Welcome back, ada" in step_page.text  # the complete observation

    # Read-only: no add, change or delete, whatever the URL or method.
    assert 'name="_save"' not in detail.text and "deletelink" not in detail.text
    assert "/admin/runs/run/add/" not in listing.text
    for model in ("runs/run", "runs/step", "runs/event", "runs/batch", "queries/savedquery", "service/apikey"):
        assert admin_client.get(f"/admin/{model}/add/").status_code == 403, model
    token = admin_client.cookies["csrftoken"].value
    change = admin_client.post(f"/admin/runs/run/{run.pk}/change/", {"status": "queued", "csrfmiddlewaretoken": token})
    assert change.status_code == 403
    delete = admin_client.post(f"/admin/runs/run/{run.pk}/delete/", {"post": "yes", "csrfmiddlewaretoken": token})
    assert delete.status_code == 403
    bulk = admin_client.post(
        "/admin/runs/run/",
        {"action": "delete_selected", "_selected_action": [str(run.pk)], "post": "yes", "csrfmiddlewaretoken": token},
    )
    assert bulk.status_code in (200, 302)
    assert Run.objects.filter(pk=run.pk, status="succeeded").exists() and len(Step.objects.filter(run=run)) == 2

    # The profile's session cookie, API keys and their hashes appear on no admin page.
    key = ApiKey.objects.get(name="laptop")
    pages = ["/admin/", "/admin/runs/run/", f"/admin/runs/run/{run.pk}/change/", "/admin/runs/step/"]
    pages += [f"/admin/runs/step/{step.pk}/change/" for step in steps]
    pages += ["/admin/runs/event/"] + [f"/admin/runs/event/{e.pk}/change/" for e in Event.objects.filter(run=run)]
    pages += ["/admin/service/apikey/", f"/admin/service/apikey/{key.pk}/change/"]
    for page in pages:
        text = admin_client.get(page).text
        assert canary not in text, page
        assert raw_key not in text and key.key_hash not in text, page
    assert "laptop" in admin_client.get("/admin/service/apikey/").text


def test_the_key_list_cannot_be_filtered_by_the_hash(admin_client):
    """A filter in the URL would let an admin page recover a key's hash prefix by prefix, though it never shows it."""
    key, _ = ApiKey.issue("laptop")
    assert admin_client.get("/admin/service/apikey/").status_code == 200
    probe = admin_client.get(f"/admin/service/apikey/?key_hash__startswith={key.key_hash[:2]}")
    assert probe.status_code == 400
    assert admin_client.get("/admin/service/apikey/?name=laptop").status_code == 200
