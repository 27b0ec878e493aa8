"""Agent runs: a scripted model (real SDKs, real HTTP) drives real Chromium through a local login."""

from __future__ import annotations

import io
import json
import sys

import pytest
from django.core.management import call_command

from runs.jobs import execute_run
from runs.models import Event, Run
from tests.fake_models import FakeAnthropic, FakeOpenAI
from tests.live import django_database_text
from tests.site import LOGIN_PASSWORD, LOGIN_USER

pytestmark = pytest.mark.django_db(transaction=True)

LOG_IN = [
    {"tool": "type", "args": {"ref": 1, "text": "{{cred.username}}"}},
    {"tool": "type", "args": {"ref": 2, "text": "{{cred.password}}"}},
    {"tool": "click", "args": {"ref": 3}},
    {"tool": "done", "args": {"output": {"balance": 42}}},
]


def set_credential(domain: str) -> None:
    """A credential `site` for LOGIN_USER; domain: where it may be typed (the test site's origin, say)."""
    real, sys.stdin = sys.stdin, io.StringIO(LOGIN_PASSWORD + "\n")  # the password arrives on stdin
    try:
        call_command("cred", "set", "site", "--domain", domain, "--username", LOGIN_USER, stdout=io.StringIO())
    finally:
        sys.stdin = real


def use(settings, server, provider: str = "openai") -> None:
    settings.MODEL_PROVIDER = provider
    settings.MODEL_NAME = "scripted"
    if provider == "openai":
        settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY = server.base_url + "/v1", "sk-test"
    else:
        settings.ANTHROPIC_BASE_URL, settings.ANTHROPIC_API_KEY = server.base_url, "sk-test"


def agent(api, site, **spec) -> dict:
    body = {"kind": "agent", "url": site.url("/login"), "goal": "Log in and read my balance", **spec}
    response = api.post("/api/runs", body, format="json")
    assert response.status_code == 201, response.content
    execute_run(response.json()["id"])
    return api.get(f"/api/runs/{response.json()['id']}").json()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_agent_logs_in_with_a_credential_saves_a_profile_and_the_password_never_leaks(
    api, site, settings, data_dir, provider
):
    set_credential(site.base_url)
    server_class = FakeOpenAI if provider == "openai" else FakeAnthropic
    with server_class(LOG_IN) as server:
        use(settings, server, provider)
        run = agent(
            api,
            site,
            cred="site",
            saveProfile="site-session",
            options={"outputSchema": {"type": "object", "required": ["balance"]}},
        )
    assert run["status"] == "succeeded", run["error"]
    assert run["result"] == {"balance": 42}
    actions = [s["action"] for s in run["steps"]]
    assert actions[0].startswith("goto")
    assert actions[1:] == [
        'type {"ref": 1, "text": "{{cred.username}}"}',
        'type {"ref": 2, "text": "{{cred.password}}"}',
        'click {"ref": 3}',
        "done",
    ]
    assert run["steps"][3]["url"] == site.url("/members")
    assert "Welcome back" in run["steps"][3]["observation"]
    assert run["usage"]["inputTokens"] > 0
    # The model saw placeholders and refs, never the password.
    first_prompt = json.dumps(server.requests[0]["body"])
    assert "[1] <input> User" in first_prompt and "[2] <input type=password> Password" in first_prompt
    assert LOGIN_PASSWORD not in server.sent_text()
    everything = json.dumps(
        [run, api.get("/api/runs").json(), [e.frame() for e in Event.objects.all()], list(Run.objects.values())],
        default=str,
    )
    assert LOGIN_PASSWORD not in everything
    assert LOGIN_PASSWORD not in django_database_text()
    # The saved profile starts a later fetch logged in.
    assert (data_dir / "profiles" / "site-session.json").is_file()
    fetch = api.post(
        "/api/runs", {"kind": "fetch", "url": site.url("/members"), "profile": "site-session"}, format="json"
    ).json()
    execute_run(fetch["id"])
    assert "Welcome back, ada" in api.get(f"/api/runs/{fetch['id']}").json()["result"]["markdown"]


def test_credentials_are_not_typed_on_other_domains(api, site, settings):
    set_credential(domain="shop.example")
    with FakeOpenAI([LOG_IN[1], {"tool": "fail", "args": {"reason": "could not log in"}}]) as server:
        use(settings, server)
        run = agent(api, site, cred="site")
    assert run["status"] == "failed"
    assert run["error"] == {"code": "agent_failed", "message": "The agent gave up: could not log in"}
    assert f"may not be typed on {site.base_url}" in run["steps"][1]["observation"]


def test_max_steps_ends_the_run(api, site, settings):
    with FakeOpenAI([{"tool": "scroll", "args": {"direction": "down"}}] * 3) as server:
        use(settings, server)
        run = agent(api, site, options={"maxSteps": 2})
    assert run["status"] == "failed" and run["error"]["code"] == "max_steps"
    assert len(server.requests) == 2


def test_unknown_credential_is_400(api, settings):
    settings.MODEL_PROVIDER = "openai"
    response = api.post(
        "/api/runs", {"kind": "agent", "url": "https://x.test/", "goal": "g", "cred": "nope"}, format="json"
    )
    assert response.status_code == 400
    assert "cred" in response.json()["error"]["fields"]


def test_cred_command_keeps_secrets_out_of_argv_and_listings(data_dir, site):
    set_credential(site.base_url)
    path = data_dir / "credentials" / "site.json"
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    listing = io.StringIO()
    call_command("cred", "list", "--json", stdout=listing)
    assert json.loads(listing.getvalue()) == [{"name": "site", "domains": [site.base_url], "hasTotp": False}]
    assert LOGIN_PASSWORD not in listing.getvalue()


def test_a_secret_in_the_agents_output_is_scrubbed_wherever_it_sits(api, site, settings, data_dir):
    set_credential(site.base_url)
    leaky = {"note": LOGIN_PASSWORD, "seen": [f"pw={LOGIN_PASSWORD}"], LOGIN_PASSWORD: 1}
    with FakeOpenAI([*LOG_IN[:3], {"tool": "done", "args": {"output": leaky}}]) as server:
        use(settings, server)
        run = agent(api, site, cred="site")
    assert run["status"] == "succeeded", run["error"]
    assert LOGIN_PASSWORD not in json.dumps(run)
    assert run["result"]["seen"][0].startswith("pw=") and len(run["result"]) == 3
    assert LOGIN_PASSWORD not in django_database_text()


def test_save_profile_never_replaces_a_profile_unless_told(api, site, settings, data_dir):
    set_credential(site.base_url)
    existing = data_dir / "profiles" / "site-session.json"
    existing.parent.mkdir(parents=True, exist_ok=True)
    existing.write_text('{"cookies": [], "origins": []}')
    existing.chmod(0o600)
    before = existing.read_bytes()
    body = {"kind": "agent", "url": site.url("/login"), "goal": "Log in", "cred": "site", "saveProfile": "site-session"}
    settings.MODEL_PROVIDER = "openai"
    refused = api.post("/api/runs", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"] == {
        "saveProfile": ["A profile named 'site-session' exists; give overwriteProfile: true to replace it."]
    }
    alone = api.post("/api/runs", {**body, "saveProfile": "other", "overwriteProfile": True}, format="json")
    assert alone.status_code == 201  # a profile that does not exist yet may be named with it too
    no_name = {key: value for key, value in body.items() if key != "saveProfile"}
    assert api.post("/api/runs", {**no_name, "overwriteProfile": True}, format="json").json()["error"]["fields"] == {
        "overwriteProfile": ["overwriteProfile goes with saveProfile."]
    }
    assert existing.read_bytes() == before and Run.objects.count() == 1
    with FakeOpenAI(LOG_IN) as server:
        use(settings, server)
        run = agent(api, site, cred="site", saveProfile="site-session", overwriteProfile=True)
    assert run["status"] == "succeeded", run["error"]
    assert any(cookie["name"] == "sid" for cookie in json.loads(existing.read_text())["cookies"])


def test_a_profile_created_while_the_run_ran_is_kept(api, site, settings, data_dir):
    set_credential(site.base_url)
    with FakeOpenAI(LOG_IN) as server:
        use(settings, server)
        body = {"kind": "agent", "url": site.url("/login"), "goal": "g", "cred": "site", "saveProfile": "late"}
        submitted = api.post("/api/runs", body, format="json").json()
        late = data_dir / "profiles" / "late.json"
        late.parent.mkdir(parents=True, exist_ok=True)
        late.write_text('{"cookies": [], "origins": []}')
        execute_run(submitted["id"])
    run = api.get(f"/api/runs/{submitted['id']}").json()
    assert run["status"] == "failed" and run["error"]["code"] == "profile_exists", run["error"]
    assert late.read_text() == '{"cookies": [], "origins": []}'
